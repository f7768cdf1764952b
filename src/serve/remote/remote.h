/* The server's side of the queue: a request goes to Redis, a worker takes
 * it, and the answer comes back; the caller always learns how it ended:
 * the answer, "no worker took it" (and then none ever will), "lost" (its
 * worker died, or the answer cannot be learnt: never run again, and the
 * caller is told whether a worker may have started it), or Redis
 * unreachable before it was sent. */
#ifndef AJ_SERVE_REMOTE_H
#define AJ_SERVE_REMOTE_H

#include <jansson.h>
#include <stdatomic.h>

#include "queue.h"

/* The words of a run lost with the worker that held it (%s: the worker's
 * name), whoever finds it lost: the caller waiting on it, or a reader of
 * its record. */
#define REMOTE_LOST_WORDS                                                                    \
	"worker lost: %s stopped answering while it held the run; it is not run again (agent " \
	"code is not idempotent)"
/* A run whose request was abandoned before any worker claimed it. */
#define REMOTE_NEVER_TAKEN_WORDS                                                             \
	"worker lost: the worker that read the run stopped before it started it; it is not "  \
	"run again, and is safe to send again"

/* Error codes of remote_call, as the API answers them. */
enum remote_failure {
	REMOTE_OK = 0,
	REMOTE_NO_WORKER,  /* nobody took it within the wait: 503 */
	REMOTE_LOST,       /* its worker died, or its answer cannot be learnt:
			    * never run again (*taken: whether it may have started) */
	REMOTE_REDIS,      /* Redis unreachable before it was sent: 503 */
	REMOTE_UNKNOWN,    /* Redis lost after it was sent: whether a worker
			    * ran it cannot be learnt */
	REMOTE_REFUSED,    /* the worker answered ok:false (*reply holds why) */
	REMOTE_DETACHED,   /* *stop was set while a worker held it: it goes on
			    * there, and its worker ends its record itself */
};

/* Sends request (its "id" and "reply" are added: id, the caller's run id,
 * or a new one when NULL) to the tier's stream, or to worker's session
 * list when worker is set, and waits: up to wait_sec for a worker to take
 * it, then as long as the worker lives and for at most run_sec more.
 * REMOTE_OK or REMOTE_REFUSED with *reply; else err, and with REMOTE_LOST
 * *taken: true when a worker took it or nobody can tell (it may have
 * started), false when none ever did (safe to send again). */
enum remote_failure remote_call(struct queue *q, enum aj_tier tier, const char *worker,
				const char *id, json_t *request, double wait_sec, double run_sec,
				json_t **reply, bool *taken, struct aj_error *err);
/* remote_call that stops waiting once *stop is set (checked each second):
 * REMOTE_DETACHED if a worker had taken it; else it is abandoned as if
 * its wait had passed (REMOTE_NO_WORKER), or, taken meanwhile, detached. */
enum remote_failure remote_call_until(struct queue *q, enum aj_tier tier, const char *worker,
				      const char *id, json_t *request, double wait_sec,
				      double run_sec, const atomic_bool *stop, json_t **reply,
				      bool *taken, struct aj_error *err);
/* Workers alive now: [{"name", "tier", "slots"}]. NULL when Redis cannot
 * say. */
json_t *remote_workers(struct queue *q, struct aj_error *err);
/* The run slots the live workers of tier advertise, summed (*workers: how
 * many): 0, or -1 with err when Redis cannot say. */
int remote_slots(struct queue *q, enum aj_tier tier, unsigned *slots, unsigned *workers,
		 struct aj_error *err);

#endif
