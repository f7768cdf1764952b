/* Where runs and sessions happen: this machine's sandboxes (local_api.c)
 * or the workers behind a queue (remote_api.c). main.c picks one at start;
 * the routes call it only through this table, so neither knows the other,
 * and both end in the same answers. */
#ifndef AJ_SERVE_BACKEND_H
#define AJ_SERVE_BACKEND_H

#include <stdbool.h>

#include "agentjail.h"
#include "metrics.h"
#include "narrow.h"
#include "../http/respond.h"
#include "../http/route.h"

struct service;

/* What a run's caller learns beside its result. */
struct run_fate {
	char id[33];           /* the run's id (serve_id_new): in its answer, and
				* in its worker's log and Redis claim */
	bool may_have_started; /* when lost: a worker took it, or none can tell */
};

/* A run to record (POST /v1/runs with Accept: text/event-stream, or
 * "background": true), its body read and narrowed by the route. */
struct recorded_request {
	const char *code; /* borrowed: the backend copies what it keeps */
	size_t len;
	struct run_terms terms;
	bool background;
	const char *webhook; /* NULL: none; else allowed by --webhook-allow */
};

/* What POST /v1/sessions asks for. */
struct session_opening {
	const struct aj_config *cfg;  /* the deployer's, under t */
	const struct run_terms *t;    /* for a worker to narrow its own config alike */
	json_t *terms;                /* the body's terms as sent (to open it again by) */
	const char *from_checkpoint;  /* a checkpoint's id: its state in it; NULL: none */
};

struct backend_ops {
	/* First: makes the backend's own state (svc->backend_state, private
	 * to it) from svc->cfg and opens svc->runs, the store of recorded runs
	 * it keeps them in. 0; or an exit code for serve (the CLI's
	 * EXIT_USAGE, EXIT_SANDBOX, 1) with err worded whole. */
	int (*open)(struct service *svc, struct aj_error *err);
	/* The sandbox MCP's tools/call may use directly, or NULL: it goes
	 * through run (mcp_http.c). */
	struct aj_sandbox *(*mcp_sandbox)(struct service *svc);
	/* Once the admission is ready: what the backend runs beside the
	 * requests (the queue's fleet count). 0, or -1 if it cannot. */
	int (*start)(struct service *svc);
	/* Ends what start began, whether or not it succeeded. */
	void (*stop)(struct service *svc);
	/* Last: the sessions and sandboxes, or the queue's connections;
	 * the backend's state is freed. */
	void (*close)(struct service *svc);
	/* Runs code under terms t (NULL: the deployer's) as fate->id:
	 * service_run_fate's answers. */
	int (*run)(struct service *svc, const struct run_terms *t, const char *code, size_t len,
		   struct aj_cancel *cancel, struct run_fate *fate, struct aj_result *res,
		   struct aj_error *err);
	/* run, its output handed to stream as it happens, for a caller that
	 * wants it but keeps no record (MCP's tools/call): the same answers.
	 * NULL: this backend cannot, and the output comes whole. */
	int (*run_streaming)(struct service *svc, const struct run_terms *t, const char *code,
			     size_t len, struct aj_cancel *cancel, const struct aj_stream *stream,
			     struct run_fate *fate, struct aj_result *res, struct aj_error *err);
	/* Starts a recorded run as id for rq->key and returns at once: its
	 * record made in svc->runs (owner: the key's name), the run admitted
	 * as any run is (a place in the queue now; its turn on a thread of
	 * its own, the record "queued" until then), its events appended to
	 * the record as they happen, its answer (run_answer, or the error
	 * object of a run that never got its turn) the record's result.
	 * 0 once the record exists, or -1 with the refusal in rs: 429
	 * runs_budget (the key's runs still going hold its budget), the
	 * admission's 429 and 503. NULL: this backend records no run (501). */
	int (*run_recorded)(struct service *svc, const struct http_request *rq,
			    struct http_response *rs, const char *id,
			    const struct recorded_request *req);
	/* POST /v1/sessions, its body read (o) and its terms applied. */
	void (*session_open)(struct service *svc, const struct http_request *rq,
			     struct http_response *rs, const struct session_opening *o);
	/* GET /v1/sessions: 200 {"sessions": [...]}, rq->key's open sessions
	 * newest first, each row POST /v1/sessions' answer with "created",
	 * "last_used", "paused", "allow_hosts", "allow_cidrs" and "secrets"
	 * (names) as they are now; never another key's. With all (the route
	 * has checked that rq->key is an admin's): every key's, each row with
	 * "key", its owner's name (never its token or hash). NULL: this
	 * backend cannot list them (501). */
	void (*session_list)(struct service *svc, const struct http_request *rq,
			     struct http_response *rs, bool all);
	/* GET /v1/checkpoints[/ID], DELETE /v1/checkpoints/ID. NULL: this
	 * backend keeps none (501). */
	void (*checkpoints)(struct service *svc, const struct http_request *rq,
			    struct http_response *rs);
	/* Whether session id is open and held by key, asked before a
	 * transfer's body is read, so a body is buffered only for a session
	 * its key holds: 0; -ENOENT (none, or another key's: the same answer),
	 * -ESHUTDOWN (closed: the call itself says why), -EIO (cannot tell). */
	int (*session_held)(struct service *svc, const char *id, const struct key *key);
	/* A call on one session (route.h), its route already checked. */
	void (*session_call)(struct service *svc, const struct http_request *rq,
			     struct http_response *rs, const struct session_route *r);
	/* What GET /v1/tiers answers (tier_probe.c calls it, one probe at a
	 * time, no more often than tiers_max_age_sec): a new object, or NULL with err
	 * saying why (words a client may read: no address of the backend's). */
	json_t *(*tiers)(struct service *svc, struct aj_error *err);
	/* How old (from its start) a tiers verdict may be when answered. */
	double tiers_max_age_sec;
	/* The backend's share of the metrics' gauges. */
	void (*gauges)(struct service *svc, struct metrics_gauges *g);
};

extern const struct backend_ops local_backend;  /* local_api.c */
extern const struct backend_ops remote_backend; /* remote_api.c */

/* Runs code under the deployer's terms, here or on a worker. 0 with *res
 * (a worker lost mid-run is a sandbox_error result saying so); or, with a
 * queue, -EAGAIN (no worker took it in time: it never will), -EIO (Redis
 * unreachable), -EINVAL, -EPERM, -EILSEQ or -ENOEXEC (the worker's
 * limits, egress rules, variables or languages refuse the request's: a
 * worker older than languages refuses any but Python), err saying which,
 * and *res a sandbox_error with the same words. */
int service_run(struct service *svc, const char *code, size_t len,
		struct aj_cancel *cancel, const struct aj_stream *stream, struct aj_result *res,
		struct aj_error *err);
/* service_run under the caller's run id (fate->id, set before), telling a
 * lost run apart: -ECONNRESET (its worker died or its answer cannot be
 * learnt; fate->may_have_started says whether it may have run; counted in
 * the metrics), besides service_run's answers. */
int service_run_fate(struct service *svc, const struct run_terms *t, const char *code,
		     size_t len, struct aj_cancel *cancel, struct run_fate *fate,
		     struct aj_result *res, struct aj_error *err);

#endif
