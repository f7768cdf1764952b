/* A session's background commands over HTTP (docs/serve.md, "Background
 * commands"):
 *
 *   POST /v1/sessions/ID/processes             exec's body, "stdin": true
 *                                               to keep stdin open, or "pty" for
 *                                               a terminal (proc_pty.h) -> 201 {"pid"}
 *   GET  /v1/sessions/ID/processes             {"processes": [{"pid", "command",
 *                                               "running"}]}
 *   GET  .../processes/PID[?wait=S]            running: {"pid", "command",
 *                                               "running": true}; ended: exec's
 *                                               result object with "pid"
 *   GET  .../processes/PID/events              SSE (proc_events.h)
 *   POST .../processes/PID/stdin               {"data"?: base64, "close"?: bool}
 *   POST .../processes/PID/signal              {"signal": "SIGTERM" | 15}
 *   POST .../processes/PID/resize              {"cols", "rows"} (a terminal's:
 *                                               "pty" in the spawn, proc_pty.h)
 *
 * Each route is one JSON request for whoever holds the session (the local
 * backend here, the queue's worker there), run on the session by
 * proc_call_run, and its answer JSON that either backend hands to the
 * client: the backends differ only in how a request travels, so they
 * answer alike. */
#ifndef AJ_SERVE_PROC_CALL_H
#define AJ_SERVE_PROC_CALL_H

#include <jansson.h>
#include <stdint.h>

#include "agentjail.h"
#include "../http/respond.h"
#include "../http/route.h"
#include "proc_answer.h"

/* The longest ?wait= of GET .../processes/PID, in seconds: a request
 * holds its connection and thread while it waits. */
#define PROC_WAIT_MAX_SEC 60

/* The request for route r ({"op": "proc", "action", "pid"?, "body"?,
 * "wait"?}; not for PROC_EVENTS, whose reads proc_read_request makes):
 * NULL with the 400 in rs (a body or a query of the wrong shape). */
json_t *proc_call_request(const struct http_request *rq, struct http_response *rs,
			  const struct session_route *r);
/* One read of pid's output from off (stdout, stderr) on. */
json_t *proc_read_request(uint32_t pid, const uint64_t off[2]);
/* Whether req is one of these (the worker's op). */
bool proc_call_is(const char *op);
/* req run on s: {"http": status, "body": object}; NULL on ENOMEM. A read's
 * body: {"out", "out_from" (the stdout offset out starts at), "err"
 * (base64), "ended", and once ended "result"}. */
json_t *proc_call_run(struct aj_session *s, json_t *req);
/* An answer as rs's (one that is not proc_call_run's: 502). */
void proc_call_answer(json_t *answer, struct http_response *rs);

#endif
