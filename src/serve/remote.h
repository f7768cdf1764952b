/* The server's side of the queue: a request goes to Redis, a worker takes
 * it, and the answer comes back; the caller always learns how it ended:
 * the answer, "no worker took it" (and then none ever will), "worker
 * lost" (it took it and died: never run again), or Redis unreachable. */
#ifndef AJ_SERVE_REMOTE_H
#define AJ_SERVE_REMOTE_H

#include <jansson.h>

#include "queue.h"

/* Error codes of remote_call, as the API answers them. */
enum remote_failure {
	REMOTE_OK = 0,
	REMOTE_NO_WORKER,  /* nobody took it within the wait: 503 */
	REMOTE_LOST,       /* the worker died with it: never retried */
	REMOTE_REDIS,      /* Redis unreachable: 503 */
	REMOTE_REFUSED,    /* the worker answered ok:false (*reply holds why) */
};

/* Sends request (its "id" and "reply" are added) to the tier's stream, or
 * to worker's session list when worker is set, and waits: up to wait_sec
 * for a worker to take it, then as long as the worker lives and for at
 * most run_sec more. REMOTE_OK or REMOTE_REFUSED with *reply; else err. */
enum remote_failure remote_call(struct queue *q, enum aj_tier tier, const char *worker,
				json_t *request, double wait_sec, double run_sec, json_t **reply,
				struct aj_error *err);
/* Workers alive now: [{"name", "tier"}]. NULL when Redis cannot say. */
json_t *remote_workers(struct queue *q, struct aj_error *err);

#endif
