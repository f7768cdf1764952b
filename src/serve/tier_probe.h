/* GET /v1/tiers from a cache: one prober thread asks the backend (its
 * tiers op: a trial sandbox of every tier here, the workers in Redis with
 * a queue) when a request finds no verdict yet, or one older than the
 * backend's tiers_max_age_sec (a minute here; with a queue, a probe begun
 * after the request). Not before the first request: a probe's sandboxes
 * are load, and a server nobody asks starts none. A request never probes
 * itself, and requests that come together wait for the same probe: one
 * probe at a time, so no key can make serve start trial sandboxes (docker
 * containers, runsc, QEMU) faster than one round a minute, whatever
 * admission allows it. */
#ifndef AJ_SERVE_TIER_PROBE_H
#define AJ_SERVE_TIER_PROBE_H

#include "http/respond.h"

struct service;
struct tier_probe;

/* Starts the prober, which probes when first asked: 0, or -1 (out of
 * memory or threads). */
int tier_probe_start(struct service *svc, struct tier_probe **out);
/* Waits for a probe under way to end, then ends the prober; NULL is a no-op. */
void tier_probe_stop(struct tier_probe *p);
/* The cached verdict as the answer: one young enough when the prober can
 * give it within 30 s; else the last one; 503 if none yet. */
void tier_probe_answer(struct tier_probe *p, struct http_response *rs);
/* Probes made since start (agentjail_tier_probes_total). */
unsigned long long tier_probe_count(struct tier_probe *p);

#endif
