/* agentjail serve: the state one server holds, shared by its HTTP API
 * (api.c), its MCP endpoint (mcp_http.c) and its main loop (main.c). */
#ifndef AJ_SERVE_SERVICE_H
#define AJ_SERVE_SERVICE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>

#include "admit.h"
#include "agentjail.h"
#include "fleet.h"
#include "keys.h"
#include "local.h"
#include "metrics.h"
#include "queue.h"
#include "sessions.h"

#define SERVE_DEFAULT_PORT 8910
#define SERVE_DEFAULT_QUEUE 64
#define SERVE_DEFAULT_MAX_WAIT_SEC 30.0
#define SERVE_DEFAULT_BODY_KB 8192
#define SERVE_DEFAULT_IDLE_SEC 30
#define SERVE_DEFAULT_REQUEST_SEC 60
#define SERVE_MAX_CONNECTIONS 512

struct serve_config {
	struct aj_config sandbox;   /* the deployer's tier and limits */
	const char *host;           /* 127.0.0.1 unless told */
	unsigned port;
	unsigned concurrency;       /* runs at once; with a queue, a cap on the fleet's slots */
	bool concurrency_set;       /* --concurrency given (with a queue: the cap holds) */
	unsigned queue_size;        /* runs waiting beyond those */
	double max_wait_sec;        /* longest wait in the queue */
	size_t max_body;            /* bytes of a JSON request */
	unsigned idle_sec;          /* a connection silent this long is closed */
	unsigned request_sec;       /* a request body must arrive within this */
	unsigned max_connections;
	const char *keys_path;      /* NULL: one key, made at start, shown once */
	const char *origin;         /* /mcp: the one Origin allowed besides none */
	const char *queue_url;      /* redis://...: runs go to workers, not here */
};

struct mcp_http;
struct http_request;
struct http_response;

struct service {
	struct serve_config cfg;
	struct keyring keys;
	struct admission adm;
	struct metrics metrics;
	struct local local;
	struct session_table sessions;
	struct mcp_http *mcp;
	struct queue *queue;        /* with queue_url; else runs are local */
	struct fleet fleet;         /* with queue_url: what the workers offer */
	atomic_bool draining;
};

/* Runs code under limits, here or on a worker. 0 with *res (a worker lost
 * mid-run is a sandbox_error result saying so); or, with a queue, -EAGAIN
 * (no worker took it in time: it never will) or -EIO (Redis unreachable),
 * err saying which, and *res a sandbox_error with the same words. */
int service_run(struct service *svc, const struct aj_limits *limits, const char *code, size_t len,
		struct aj_cancel *cancel, struct aj_result *res, struct aj_error *err);

/* What a run's caller learns beside its result. */
struct run_fate {
	char id[33];           /* the run's id (queue_new_id): in its answer, and
				* in its worker's log and Redis claim */
	bool may_have_started; /* when lost: a worker took it, or none can tell */
};
/* service_run under the caller's run id (fate->id, set before), telling a
 * lost run apart: -ECONNRESET (its worker died or its answer cannot be
 * learnt; fate->may_have_started says whether it may have run; counted in
 * the metrics), besides service_run's answers. */
int service_run_fate(struct service *svc, const struct aj_limits *limits, const char *code,
		     size_t len, struct aj_cancel *cancel, struct run_fate *fate,
		     struct aj_result *res, struct aj_error *err);
/* The answer for a run that has an id but no result: status and code as
 * the API's errors, with "run_id", and for a lost run "lost": true,
 * "may_have_started" and "retry_safe" (true only if no worker ever took it). */
void respond_run_failure(struct http_response *rs, int status, const char *code,
			 const char *id, bool lost, bool may_have_started, const char *message);

/* The body as a JSON object whose keys are all in allowed (NULL-ended), or
 * NULL with the 400 in rs. */
json_t *request_body(const struct http_request *rq, struct http_response *rs,
		     const char *const *allowed);
/* Its "code": a string of Python source (no NUL, at most 4 MiB): 0, or -1
 * with the 400 or the 413. */
int request_code(json_t *o, const char **code, size_t *len, struct http_response *rs);
/* A run's result as the 200 answer with its "run_id", counted in the
 * metrics (t0: when it was admitted, now_ms() / 1e3); frees res. */
void respond_run(struct service *svc, struct http_response *rs, const char *id,
		 struct aj_result *res, double t0);

/* A queue place, then the run's turn (admit.h): 0, or -1 with the
 * refusal (429 or 503, Retry-After) in rs. admit_finish after the run. */
int service_admit(struct service *svc, struct key_use *u, struct http_response *rs);

/* Sessions when runs go through the queue (remote_api.c): the same
 * routes, served by the worker that holds each session. */
void remote_post_session(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const struct aj_limits *limits);
void remote_session_route(struct service *svc, const struct http_request *rq,
			  struct http_response *rs, const char *id, const char *tail);
json_t *remote_tiers(struct service *svc);
/* A session file operation's -errno as its HTTP answer. */
void respond_file_error(struct http_response *rs, int rc, const char *message);

/* One HTTP exchange as the API sees it: the request, read whole (its body
 * capped), and what to answer. */
struct http_request {
	const char *method;
	const char *path;     /* decoded, without the query */
	const char *query_dir; /* ?dir= of a file listing, or NULL */
	const char *body;
	size_t body_len;
	const struct key *key; /* who, after auth; NULL where none is needed */
	const char *accept;
	const char *origin;
	const char *protocol_version; /* MCP-Protocol-Version */
	const char *content_type;
};

struct http_response {
	int code;
	char *body;           /* malloc'ed */
	size_t len;
	const char *content_type;
	unsigned retry_after; /* seconds, for 429 and 503; 0: none */
	const char *allow;    /* for 405 */
};

/* The routes of the JSON API. */
void api_handle(struct service *svc, const struct http_request *rq, struct http_response *rs);
/* Which routes need a key (all but health). */
bool api_needs_key(const char *method, const char *path);
/* The largest body a route takes, decided from its method and path. */
size_t api_body_limit(const struct service *svc, const char *method, const char *path);

/* {"error": {"code": code, "message": ...}} with HTTP status. */
void respond_error(struct http_response *rs, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A JSON body; takes the reference. */
void respond_json(struct http_response *rs, int status, json_t *body);

/* The HTTP server over svc: serves until stop_http. */
int http_start(struct service *svc, struct aj_error *err);
void http_stop(struct service *svc);
/* Waits (at most timeout_sec) until no request is between its headers and
 * the end of its answer: the answers of the last runs reach their clients. */
void http_quiesce(double timeout_sec);

#endif
