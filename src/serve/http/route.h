/* The routes under /v1/sessions/ID, parsed once for both backends: which
 * session, which operation, and the answers that need no session (404 for
 * no such route, 405 for a method the route never takes). */
#ifndef AJ_SERVE_ROUTE_H
#define AJ_SERVE_ROUTE_H

#include <stdint.h>

#include "respond.h"

#define SESSIONS_PREFIX "/v1/sessions/"

enum session_op {
	SESSION_CLOSE,  /* DELETE /v1/sessions/ID */
	SESSION_RUN,    /* POST .../runs */
	SESSION_EXEC,   /* POST .../exec: a command */
	SESSION_EGRESS, /* POST .../egress: keep only the rules named */
	SESSION_PUT,    /* PUT .../files/PATH */
	SESSION_GET,    /* GET .../files/PATH */
	SESSION_LIST,   /* GET .../files[?dir=D] */
	SESSION_FILES_METHOD, /* any other method on files: 405 once the
			       * session is found (allow says which) */
	SESSION_PROC,   /* .../processes[/PID[/events|/stdin|/signal|/resize]]: proc says which */
	SESSION_PAUSE,  /* POST .../pause: its sandbox freed, its state kept */
	SESSION_RESUME, /* POST .../resume */
	SESSION_FORK,   /* POST .../fork {"count"}: copies of its state */
	SESSION_CHECKPOINT, /* POST .../checkpoint: its state kept under an id */
};

/* The background command routes (docs/serve.md, "Background commands"). */
enum proc_action {
	PROC_SPAWN,  /* POST .../processes */
	PROC_LIST,   /* GET  .../processes */
	PROC_STATE,  /* GET  .../processes/PID[?wait=S] */
	PROC_EVENTS, /* GET  .../processes/PID/events */
	PROC_STDIN,  /* POST .../processes/PID/stdin */
	PROC_SIGNAL, /* POST .../processes/PID/signal */
	PROC_RESIZE, /* POST .../processes/PID/resize (a terminal's) */
};

struct session_route {
	char id[40];
	enum session_op op;
	const char *path;  /* SESSION_PUT, SESSION_GET: the file */
	const char *allow; /* SESSION_FILES_METHOD: the methods it takes */
	enum proc_action proc; /* SESSION_PROC */
	uint32_t pid;          /* SESSION_PROC but PROC_SPAWN, PROC_LIST */
};

/* rq->path, under SESSIONS_PREFIX, as a session call: 0, or -1 with the
 * answer (404 or 405) in rs. */
int session_route_parse(const struct http_request *rq, struct http_response *rs,
			struct session_route *r);

#endif
