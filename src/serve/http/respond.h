/* One HTTP exchange as the routes see it, and the answers they share: the
 * lowest layer of serve's API, knowing no route and no backend. */
#ifndef AJ_SERVE_RESPOND_H
#define AJ_SERVE_RESPOND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "agentjail.h"

struct key;

/* The request, read whole (its body capped), and what to answer. */
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
	/* The run routes' (runs_api.c): Last-Event-ID, and ?after=, ?limit=,
	 * ?before= (NULL: not given). */
	const char *last_event_id;
	const char *query_after, *query_limit, *query_before;
	const char *query_wait; /* GET .../processes/PID?wait= */
	void *conn;             /* the server's, for http_header and http_query */
};

/* A request header's value by name (case-insensitive), or NULL: for a
 * route that needs one of its own (the E2B API's). */
const char *http_header(const struct http_request *rq, const char *name);
/* A query argument's value (decoded), or NULL. */
const char *http_query(const struct http_request *rq, const char *name);

struct http_response {
	int code;
	char *body;           /* malloc'ed */
	size_t len;
	const char *content_type;
	unsigned retry_after; /* seconds, for 429 and 503; 0: none */
	const char *allow;    /* for 405 */
	char run_id[33];      /* X-Run-Id, when set: a streamed run's id */
	/* For the access log (access_log.h): the run this answer is about
	 * (else run_id, when set) and how it ended (a status, or an error's
	 * code). */
	char log_run[33];
	char log_verdict[32];
	char location[64];    /* Location, when set: where a background run is */
	/* One more header a route's protocol wants (the E2B API's
	 * X-Next-Token), when header_name is set. */
	const char *header_name;
	char header_value[160];
	/* A file of the console at /ui: sent with its Content-Security-Policy
	 * and the headers that keep it out of frames and referrers. */
	bool console;
	/* A streamed answer (Server-Sent Events), when stream_read is set:
	 * http.c sends code, content_type and the headers, then the body as
	 * stream_read gives it, on the connection's own thread. stream_read
	 * fills buf with at most max bytes and returns how many (> 0), 0 at
	 * the end, or -1 to cut the connection. It may block waiting for an
	 * event, but returns within a few seconds (with an SSE comment if
	 * nothing came) so that a client gone is noticed and shutdown is not
	 * held up. stream_done(stream_arg) once the connection ends, whether
	 * or not all was read; body is unused. */
	long (*stream_read)(void *arg, char *buf, size_t max);
	void (*stream_done)(void *arg);
	void *stream_arg;
};

/* {"error": {"code": code, "message": ...}} with HTTP status. */
void respond_error(struct http_response *rs, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A JSON body; takes the reference. */
void respond_json(struct http_response *rs, int status, json_t *body);
/* 405, naming the methods the route takes. */
void respond_method(struct http_response *rs, const char *method, const char *allow);
/* A session file operation's -errno as its HTTP answer. */
void respond_file_error(struct http_response *rs, int rc, const char *message);

/* The body within the JSON caps (json_caps.h), before it is parsed: 0,
 * or -1 with the 413 or the 400 naming the cap in rs. */
int request_json_caps(const struct http_request *rq, struct http_response *rs);
/* The body as a JSON object whose keys are all in allowed (NULL-ended), or
 * NULL with the 400 in rs. */
json_t *request_body(const struct http_request *rq, struct http_response *rs,
		     const char *const *allowed);
/* Its "code": a string of Python source (no NUL, at most 4 MiB): 0, or -1
 * with the 400 or the 413. */
int request_code(json_t *o, const char **code, size_t *len, struct http_response *rs);
/* The answer for a run that has an id but no result: status and code as
 * the API's errors, with "run_id", and for a lost run "lost": true,
 * "may_have_started" and "retry_safe" (true only if no worker ever took it). */
void respond_run_failure(struct http_response *rs, int status, const char *code,
			 const char *id, bool lost, bool may_have_started, const char *message);
/* That answer's object (respond_run_failure's body): a recorded run's
 * result when it ends without a result of its own. */
json_t *run_failure_json(const char *code, const char *id, bool lost, bool may_have_started,
			 const char *message);

#endif
