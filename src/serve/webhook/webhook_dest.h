/* Webhook destinations (scheme://host:port): how many attempts each has
 * under way and its circuit breaker (webhook_dest.c), so that a receiver
 * that hangs or fails holds a bounded part of the delivery and stops being
 * tried for a while. Not locked: the caller holds its own lock around
 * every call. */
#ifndef AJ_SERVE_WEBHOOK_DEST_H
#define AJ_SERVE_WEBHOOK_DEST_H

#include <stdbool.h>

struct webhook_dest {
	struct webhook_dest *next;
	char *where;       /* scheme://host:port */
	unsigned inflight; /* attempts under way */
	unsigned failures; /* failed attempts in a row */
	double open_until; /* monotonic ms: not tried before (the circuit open) */
};

struct webhook_dests {
	struct webhook_dest *head;
};

/* where's destination, made on first use (NULL: out of memory). There are
 * as many as the allow-list has hosts and ports: every URL was allowed
 * before it got here, so the list stays short, and lives until freed. */
struct webhook_dest *webhook_dest_get(struct webhook_dests *ds, const char *where);
/* Whether an attempt to d may start at now: fewer than
 * WEBHOOK_DEST_INFLIGHT under way and its circuit not open (after the
 * cool-off, one attempt alone tries it). false: *until is when it may,
 * 0 when that is once an attempt under way ends. */
bool webhook_dest_ready(const struct webhook_dest *d, double now, double *until);
/* An attempt to d starts; ends, ok (the receiver answered, below 500) or
 * not at now: true when this failure opened the circuit. */
void webhook_dest_begin(struct webhook_dest *d);
bool webhook_dest_end(struct webhook_dest *d, bool ok, double now);
void webhook_dests_free(struct webhook_dests *ds);

#endif
