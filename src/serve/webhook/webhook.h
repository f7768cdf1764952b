/* Completion webhooks: when a background run ends, serve POSTs its record
 * to a URL its caller gave, signed with the caller's key's webhook secret.
 *
 * A URL is taken only when it falls under one of the deployer's
 * --webhook-allow prefixes, compared part by part after parsing (scheme,
 * host, port, then the path by segments), and holds no userinfo and no
 * fragment: otherwise a key could make serve send requests to any address
 * serve can reach (a metadata service, an internal admin port). A prefix
 * may be bound to one key (NAME=URL): only that key's runs may use it.
 *
 * Each attempt's connection is checked where it is made (webhook_post.c):
 * a URL whose host is a name may reach only public addresses, so a name
 * the receiver's DNS points at 169.254.169.254 or 127.0.0.1 between two
 * attempts is refused; a host written as an address literal is reached as
 * the deployer wrote it in the prefix, loopback or private included.
 *
 * Delivery runs on threads of its own, never on a request's: a POST of the
 * body (the run's info JSON) with
 *   X-Agentjail-Run-Id: ID
 *   X-Agentjail-Timestamp: <unix seconds of this attempt>
 *   X-Agentjail-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>
 * 2xx is delivered; anything else (a redirect is not followed: it could
 * lead out of the allow-list), a refused connection or 10 s without an
 * answer is retried after 1, 2, 4, 8 and 16 s: 6 attempts, each logged on
 * stderr.
 *
 * One key's receivers cannot silence another key's (webhook_dest.c): each
 * key holds at most WEBHOOK_KEY_PENDING deliveries (a full share drops
 * that key's oldest waiting one, never another key's), all keys together
 * WEBHOOK_MAX_PENDING (full: the oldest waiting one of the key that holds
 * the most is dropped); one destination (scheme://host:port) has at most
 * WEBHOOK_DEST_INFLIGHT attempts under way of WEBHOOK_THREADS, and after
 * WEBHOOK_BREAK_AFTER failed attempts in a row it is not tried for
 * WEBHOOK_BREAK_SEC (its deliveries wait; then one attempt tries it). */
#ifndef AJ_SERVE_WEBHOOK_H
#define AJ_SERVE_WEBHOOK_H

#include <jansson.h>
#include <stdbool.h>

#include "agentjail.h"

#define WEBHOOK_MAX_URL 2048
#define WEBHOOK_KEY_PENDING 64
#define WEBHOOK_MAX_PENDING 256
#define WEBHOOK_THREADS 8
#define WEBHOOK_DEST_INFLIGHT 2
#define WEBHOOK_BREAK_AFTER 5
#define WEBHOOK_BREAK_SEC 30
#define WEBHOOK_CONNECT_SEC 5
#define WEBHOOK_ATTEMPTS 6
#define WEBHOOK_TIMEOUT_SEC 10
#define WEBHOOK_STOP_SEC 5

struct webhooks;

/* The delivery's own view of a key: its name (the share it counts in, the
 * prefixes bound to it) and the secret that signs its webhooks ("": none). */
struct webhook_key {
	const char *name;
	const char *secret;
};

/* Checks the deployer's --webhook-allow entries (each a prefix URL that
 * parses, http or https, without userinfo, query or fragment, or
 * NAME=URL: the prefix bound to key NAME) and starts the delivery threads:
 * 0 with *out, or -errno with err naming the entry. */
int webhooks_start(struct webhooks **out, const char *const *allow, unsigned n,
		   struct aj_error *err);
/* Whether url may take key's run's webhook under the entries allow: 0, or
 * -EINVAL with err saying why (not under any prefix allowed to the key,
 * userinfo, a fragment, not http(s), the key has no webhook secret, none
 * allowed on this server). */
int webhook_allowed(const char *const *allow, unsigned n, const struct webhook_key *key,
		    const char *url, struct aj_error *err);
/* Queues the delivery of body (borrowed; dumped now) to url, signed with
 * key's secret, in key's share, and returns at once. url must have been
 * allowed. */
void webhook_send(struct webhooks *wh, const char *url, const struct webhook_key *key,
		  const char *run_id, json_t *body);

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
 * last, failed); dropped counts deliveries let go untried to the end (a
 * key's share or WEBHOOK_MAX_PENDING full, a stop). */
struct webhook_counts {
	unsigned long long delivered, failed, given_up, dropped;
};
void webhooks_counts(struct webhooks *wh, struct webhook_counts *out);
/* Delivers what it can within WEBHOOK_STOP_SEC, logs what is left as
 * dropped, and frees wh (NULL: nothing). */
void webhooks_close(struct webhooks *wh);

#endif
