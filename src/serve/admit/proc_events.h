/* GET /v1/sessions/ID/processes/PID/events: a background command's output
 * as Server-Sent Events in runs' format (runs/sse.h: stdout and stderr
 * events, {"text"} or {"base64"}, then a result event and the end), read
 * from the session as the client takes it. Each event's id is the place
 * after it, "OUT-ERR" (bytes of stdout and stderr given so far), so a
 * client that reconnects with Last-Event-ID (or ?after=OUT-ERR) gets the
 * rest exactly once: the session keeps the command's output (up to the
 * output limit), and a read starts where the client's place is. */
#ifndef AJ_SERVE_PROC_EVENTS_H
#define AJ_SERVE_PROC_EVENTS_H

#include <jansson.h>
#include <stdint.h>

#include "../http/respond.h"

/* Where the reads go: call answers a read request (proc_read_request) as
 * proc_call_run does, or NULL when the session cannot be reached (the
 * stream is cut); done once the stream ends. */
struct proc_source {
	json_t *(*call)(void *arg, json_t *req);
	void (*done)(void *arg);
	void *arg;
};

/* The client's place: Last-Event-ID, else ?after=, else the start. 0, or
 * -1 with the 400 in rs. */
int proc_events_after(const struct http_request *rq, struct http_response *rs, uint64_t off[2]);
/* Answers rs as pid's event stream from off, its reads through src (done
 * is called whatever happens, once), on a connection closed after
 * idle_sec s without a byte: 0, or -ENOMEM. The first read is made here,
 * so a pid the session does not know is its 404, not a stream. */
int proc_events_answer(struct http_response *rs, const struct proc_source *src, uint32_t pid,
		       const uint64_t off[2], unsigned idle_sec);

#endif
