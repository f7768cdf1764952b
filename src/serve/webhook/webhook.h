/* Completion webhooks: when a background run ends, serve POSTs its record
 * to a URL its caller gave, signed with the caller's key's webhook secret.
 *
 * A URL is taken only when it falls under one of the deployer's
 * --webhook-allow prefixes, compared part by part after parsing (scheme,
 * host, port, then the path by segments), and holds no userinfo and no
 * fragment: otherwise a key could make serve send requests to any address
 * serve can reach (a metadata service, an internal admin port).
 *
 * Delivery runs on threads of its own, never on a request's: a POST of the
 * body (the run's info JSON) with
 *   X-Agentjail-Run-Id: ID
 *   X-Agentjail-Timestamp: <unix seconds of this attempt>
 *   X-Agentjail-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>
 * 2xx is delivered; anything else (a redirect is not followed: it could
 * lead out of the allow-list), a refused connection or 10 s without an
 * answer is retried after 1, 2, 4, 8 and 16 s: 6 attempts, each logged on
 * stderr. At most WEBHOOK_MAX_PENDING deliveries are held; past that the
 * oldest waiting one is dropped, and logged. */
#ifndef AJ_SERVE_WEBHOOK_H
#define AJ_SERVE_WEBHOOK_H

#include <jansson.h>
#include <stdbool.h>

#include "agentjail.h"

#define WEBHOOK_MAX_URL 2048
#define WEBHOOK_MAX_PENDING 64
#define WEBHOOK_ATTEMPTS 6
#define WEBHOOK_TIMEOUT_SEC 10
#define WEBHOOK_STOP_SEC 5

struct serve_config;
struct key;
struct webhooks;

/* Checks the deployer's --webhook-allow prefixes (each a URL that parses,
 * http or https, without userinfo, query or fragment) and starts the
 * delivery threads: 0 with *out, or -errno with err naming the prefix. */
int webhooks_open(struct webhooks **out, const struct serve_config *cfg, struct aj_error *err);
/* Whether url may take key's run's webhook: 0, or -EINVAL with err saying
 * why (not under any allowed prefix, userinfo, a fragment, not http(s),
 * the key has no webhook secret, none allowed on this server). */
int webhook_check(const struct serve_config *cfg, const struct key *key, const char *url,
		  struct aj_error *err);
/* Queues the delivery of body (borrowed; dumped now) to url, signed with
 * secret, and returns at once. url must have passed webhook_check. */
void webhook_send(struct webhooks *wh, const char *url, const char *secret, const char *run_id,
		  json_t *body);
/* A recorded run ended: its record (run_info_json, with the result) to
 * url, signed with key's secret. What a backend calls once it has
 * finished the record of a run that asked for a webhook. */
struct service;
void webhook_run_done(struct service *svc, const struct key *key, const char *url,
		      const char *run_id);
/* Deliveries whose schedule lives elsewhere (the Redis queue's: any serve
 * replica takes them over, a restart included). An idle delivery thread
 * asks take for one due now, claimed for one attempt: 1 with *job (its
 * fields malloc'ed, freed here; attempt: this attempt's number, from 1),
 * 0 when none is due. After the attempt, logged and counted as any, done
 * says how it went (last: no attempt follows, delivered or not); the
 * source then schedules the next attempt, for whichever replica. */
struct webhook_job {
	char run_id[65];
	char *url, *secret, *body;
	unsigned attempt;
};
struct webhook_source {
	int (*take)(void *arg, struct webhook_job *job);
	void (*done)(void *arg, const char *run_id, unsigned attempt, bool delivered, bool last);
	void *arg;
};
/* Sets wh's source (NULL wh: nothing); its threads ask it from then on,
 * and not once stopping. */
void webhooks_set_source(struct webhooks *wh, const struct webhook_source *src);
/* Seconds after a failed attempt n (1 to WEBHOOK_ATTEMPTS - 1) before the
 * next. */
unsigned webhook_backoff(unsigned n);

/* What the attempts came to, since start (/metrics): each attempt is
 * one of delivered (2xx), failed (to be tried again) or given_up (the
 * last, failed); dropped counts deliveries let go untried to the end (the
 * bound of WEBHOOK_MAX_PENDING, a stop). */
struct webhook_counts {
	unsigned long long delivered, failed, given_up, dropped;
};
void webhooks_counts(struct webhooks *wh, struct webhook_counts *out);
/* Delivers what it can within WEBHOOK_STOP_SEC, logs what is left as
 * dropped, and frees wh (NULL: nothing). */
void webhooks_close(struct webhooks *wh);

#endif
