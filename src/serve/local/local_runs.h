/* The local backend's recorded runs: a run of its own, or a session's call,
 * on a thread of its own whose events go to the run store as they happen
 * (local_runs.c). */
#ifndef AJ_SERVE_LOCAL_RUNS_H
#define AJ_SERVE_LOCAL_RUNS_H

#include "local_state.h"
#include "../admit/call_body.h"

/* backend_ops.run_recorded of the local backend. */
int local_run_recorded(struct service *svc, const struct http_request *rq,
		       struct http_response *rs, const char *id,
		       const struct recorded_request *req);
/* A session's call recorded (POST /v1/sessions/ID/runs or /exec with
 * Accept: text/event-stream): as local_run_recorded, on h (the runner
 * takes a reference of its own), doing call, which it takes (left empty
 * here, whatever the return). */
int local_session_recorded(struct service *svc, const struct http_request *rq,
			   struct http_response *rs, const char *id, struct hsession *h,
			   struct call_body *call);
/* Waits until no recorded run's thread is left. */
void local_runs_wait(struct local *l);

#endif
