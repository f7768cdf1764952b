/* The queue backend's recorded runs (remote_runs.c): streamed and
 * background runs, and a session's streamed calls, through Redis. */
#ifndef AJ_SERVE_REMOTE_RUNS_H
#define AJ_SERVE_REMOTE_RUNS_H

#include "../admit/call_body.h"
#include "../admit/service.h"

/* A session call's wait for a worker to take it: the worker holds the
 * session, and runs one call of it at a time, so not long. */
#define SESSION_TAKE_SEC 30.0

/* backend_ops.run_recorded of the queue backend. */
int queue_run_recorded(struct service *svc, const struct http_request *rq,
		       struct http_response *rs, const char *id,
		       const struct recorded_request *req);
/* A session's call recorded (POST /v1/sessions/ID/runs or /exec with
 * Accept: text/event-stream), sent to worker, which holds session: as
 * queue_run_recorded; call is what it asks (call_body.h), which the
 * worker reads again against the session's own limits. */
int queue_session_recorded(struct service *svc, const struct http_request *rq,
			   struct http_response *rs, const char *id, const char *session,
			   const char *worker, const struct call_body *call);
/* A cancel of run id, taken by this replica: if it waits here for its
 * turn, it leaves the queue now and ends cancelled, never sent. */
void queue_run_call_off(struct service *svc, const char *id);
/* Waits until no recorded run's thread is left (once serve drains, each
 * leaves within a second or so). */
void queue_runs_wait(void);

/* A run's request for a worker ({"op": "run", "code", and terms t as
 * terms_to_json writes them; t NULL: the deployer's, none named}; op
 * "run_language" with "language" for another language than Python); NULL
 * on ENOMEM. */
json_t *queue_run_request(struct service *svc, const struct run_terms *t, const char *code,
			  size_t len);

#endif
