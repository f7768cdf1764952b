/* What /metrics reports, in Prometheus' text format: runs by tier and
 * status, a latency histogram, HTTP answers by code, refusals by reason,
 * and the gauges the caller reads at scrape time. */
#ifndef AJ_SERVE_METRICS_H
#define AJ_SERVE_METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "admit.h"
#include "agentjail.h"

#define METRICS_BUCKETS 12
#define METRICS_CODES 24
/* Secret names counted one by one; past these, the rest together under
 * secret="_other": a request names its own secrets, and must not grow
 * the scrape (or serve's memory) without bound. */
#define METRICS_SECRETS 64

struct metrics {
	pthread_mutex_t lock;
	uint64_t runs[AJ_TIER_COUNT][AJ_STATUS_COUNT];
	uint64_t buckets[METRICS_BUCKETS]; /* run wall time, cumulative at render */
	uint64_t latency_count;
	double latency_sum;
	int codes[METRICS_CODES];          /* the HTTP codes seen, in order of first use */
	uint64_t code_count[METRICS_CODES];
	uint64_t refused[ADMIT_VERDICTS];
	uint64_t too_large;                /* 413s: a body or code over its cap */
	uint64_t auth_failures;
	uint64_t lost[2]; /* runs lost with their worker: [may_have_started] */
	uint64_t egress[3]; /* the egress proxy's decisions: [0] denied, [1] allowed, [2] failed */
	/* Requests the proxy put a secret in, by the secret's name (never its
	 * value), in order of first use. */
	char secret_names[METRICS_SECRETS][33];
	uint64_t injections[METRICS_SECRETS];
	uint64_t injections_other;
};

struct metrics_gauges {
	unsigned running, waiting, sessions_open;
	unsigned workers; /* with a Redis queue: workers alive; else 0 */
	unsigned slots;   /* runs admitted at once now (with a queue: the fleet's) */
	int draining;
	/* Webhook attempts (webhook.h's counts): delivered, failed (tried
	 * again), given up (the last failed); deliveries dropped untried. */
	unsigned long long hooks_delivered, hooks_failed, hooks_given_up, hooks_dropped;
	unsigned long long tier_probes; /* GET /v1/tiers' probes (tier_probe.h) */
};

void metrics_init(struct metrics *m);
void metrics_destroy(struct metrics *m);
/* A run ended: its wall time in seconds as the server saw it (queue, run,
 * and the trip to a worker when there is one). */
void metrics_run(struct metrics *m, enum aj_tier tier, enum aj_status status, double seconds);
void metrics_http(struct metrics *m, int code);
void metrics_refused(struct metrics *m, enum admit_verdict why);
/* A request refused as too large (HTTP 413): nothing ran. */
void metrics_too_large(struct metrics *m);
void metrics_auth_failure(struct metrics *m);
/* A run lost with its worker (no result): whether it may have started. */
void metrics_lost(struct metrics *m, bool may_have_started);
/* A run's or session call's egress decisions, from its decision log. */
void metrics_egress(struct metrics *m, uint64_t allowed, uint64_t denied, uint64_t failed);
/* A run's or session call's injections of the secret name, from its
 * decision log's "injections" object. A name that is not a secret's
 * (1 to 32 of A-Z, 0-9, _) is not counted: it would be a label. */
void metrics_injections(struct metrics *m, const char *name, uint64_t n);
/* The text for a scrape (malloc'ed), or NULL. */
char *metrics_render(struct metrics *m, const struct metrics_gauges *g);

#endif
