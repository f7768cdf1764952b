/* What one call on a session asks, read from its JSON once for both
 * backends and the worker, and the one way it is run on a session:
 *
 *   POST /v1/sessions/ID/runs  {"code", "limits"?, "language"?, "value"?,
 *                              "context"?, "fresh"?}: code in the session
 *                              (aj_session_run_lang: Python unless named;
 *                              with a notebook's asks, aj_session_run_cell),
 *                              a call's own shorter timeout kept by a timer
 *   POST /v1/sessions/ID/exec  {"command" | "argv", "cwd"?, "env"?,
 *                              "stdin"? (base64), "timeout"?}: a command in
 *                              the session's sandbox (aj_session_exec),
 *                              which keeps its own timeout
 *
 * Everything after the body (admission, the record, SSE, the queue, the
 * answer) is the same for both, so a route, a runner and the worker hold
 * a struct call_body and never ask which it is. The body stays the JSON
 * object it came as: the queue backend forwards it to the session's
 * worker, which reads it with the same function. */
#ifndef AJ_SERVE_CALL_BODY_H
#define AJ_SERVE_CALL_BODY_H

#include <jansson.h>
#include <stdbool.h>

#include "agentjail.h"
#include "request_env.h"
#include "../http/respond.h"

struct call_body {
	json_t *o;   /* the body, a reference: the strings below point into it */
	bool exec;   /* a command (.../exec), else code (.../runs) */
	bool spawn;  /* a command in the background (POST .../processes) */
	bool stdin_open; /* spawn's "stdin": true: kept open for .../stdin */
	/* code */
	const char *code;
	size_t len;
	enum aj_language lang; /* "language": AJ_LANG_PYTHON unless named */
	double call_sec; /* limits.timeout_sec, 0: the session's own clock */
	bool value;      /* "value": true, a cell's last value apart (Python) */
	const char *context; /* "context": a namespace of its own (Python) */
	bool fresh;      /* "fresh": true, the context's state forgotten first */
	/* a command: x points into o and into what follows, owned */
	struct aj_exec x;
	const char **argv;
	struct request_env *env;
	const char **env_list;
	unsigned char *stdin_data;
};

/* o (a reference is taken) as a call of its kind against cfg, the
 * session's config (or, where serve holds no session, the deployer's: the
 * session's worker reads it again against its own). Fields beside the
 * call's own are not looked at. 0; or -1 with the answer's *status (400,
 * 413), *code and err naming the field. */
int call_body_parse(json_t *o, bool exec, const struct aj_config *cfg, struct call_body *b,
		    int *status, const char **code, struct aj_error *err);
/* o as POST .../processes' body: exec's fields, but "stdin" may be true
 * (kept open) as well as base64 (given, then closed), and "timeout" is
 * within the session's lifetime (none: as long as the session lives).
 * As call_body_parse. */
int call_body_parse_spawn(json_t *o, const struct aj_config *cfg, struct call_body *b,
			  int *status, const char **code, struct aj_error *err);
/* rq's body as a call of its kind (no field but the call's own): 0, or -1
 * with the answer in rs. */
int call_body_read(const struct http_request *rq, struct http_response *rs, bool exec,
		   const struct aj_config *cfg, struct call_body *b);
/* What b holds is freed. A holder may hand it on whole (a struct copy, a
 * recorded call's runner taking the route's): nothing in it points into
 * the struct itself, and the one it was taken from is then left zeroed. */
void call_body_clear(struct call_body *b);
/* b run on s, its output to stream (NULL: none): the library's return
 * (-ESHUTDOWN: the session is closed); -EAGAIN when a call's own timeout
 * could not be kept (no thread for its timer), res saying so. */
int call_body_run(struct aj_session *s, const struct call_body *b, struct aj_cancel *cancel,
		  const struct aj_stream *stream, struct aj_result *res);
/* b as the queue's request to the session's worker: its body with "op"
 * (session_run, session_run_language: code in another language than
 * Python, which a worker without languages refuses, or session_exec) and
 * "session"; NULL on ENOMEM. */
json_t *call_body_request(const struct call_body *b, const char *session);
/* A worker's request's op as a call's kind: 0 with *exec, or -1 for
 * another op. */
int call_body_op(const char *op, bool *exec);

#endif
