/* How a recorded run begins, whatever backend runs it (local_runs.c,
 * remote_runs.c): on the route's thread its place in the queue and its
 * record, then a thread of its own (counted, so that serve's stop can
 * wait for them) that waits for its turn and runs it. */
#ifndef AJ_SERVE_RUNS_BEGIN_H
#define AJ_SERVE_RUNS_BEGIN_H

#include "runners.h"
#include "service.h"

/* Whose a recorded run is and where its end is sent: what its thread
 * keeps for runs_end. */
struct run_hook {
	const struct key *key; /* the run's: its webhook's secret */
	char *webhook;         /* NULL: none */
	const char *route;     /* the route that asked for it (access_log_route) */
	double t0;             /* when it was asked for, now_ms() */
};

/* h for rq's key and a copy of webhook (NULL: none): 0, or -1 with the
 * 500 in rs (out of memory). */
int run_hook_set(struct run_hook *h, const struct http_request *rq, struct http_response *rs,
		 const char *webhook);
void run_hook_clear(struct run_hook *h);

/* Takes the run's queue place (*use, for the thread's admit_start and
 * admit_finish), makes its record (owner: rq's key) and starts fn(arg) on
 * a thread counted in rn, which ends with runners_exit. 0: it runs; 1: the
 * thread could not start (the place given back, the record ended saying
 * so); -1: refused, with the answer in rs (429 runs_budget when the key's
 * runs still going hold its budget, the admission's refusals), nothing
 * made. On 1 and -1 arg is still the caller's. */
int runs_begin(struct service *svc, const struct http_request *rq, struct http_response *rs,
	       const char *id, const struct run_info *info, struct key_use **use,
	       struct runners *rn, void *(*fn)(void *), void *arg);
/* A recorded run's thread is done with it: unless left (a worker holds
 * the run and ends its record itself), the record ends with end (its
 * result, consumed; NULL: out of memory, said so) and then its webhook
 * (NULL: none) is sent; its place in the queue (use; NULL: it never got
 * its turn) is given back last. */
void runs_end(struct service *svc, const char *id, json_t *end, bool left,
	      const struct run_hook *hook, struct key_use *use);
/* The refusal admission wrote into rs (a run that never got its turn), as
 * its record's result, with its run_id; rs's body freed. */
json_t *runs_refusal_end(struct http_response *rs, const char *id);

/* The result of a run cancelled while it waited for its turn: killed,
 * "cancelled by the caller before it started", nothing run. */
void runs_cancelled_result(struct aj_result *res);

#endif
