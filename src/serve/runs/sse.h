/* A run's events as Server-Sent Events (docs/serve.md, "Streaming and
 * background runs"): the one wire format of every route that streams.
 *
 *   id: 7
 *   event: stdout            stdout | stderr | image | result
 *   data: {"text": ...}      {"base64": ...} when the chunk is not UTF-8
 *
 * The body starts with "retry: 1000"; the result is the last event, then
 * the body ends. */
#ifndef AJ_SERVE_SSE_H
#define AJ_SERVE_SSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../http/respond.h"
#include "runs.h"

#define SSE_CONTENT_TYPE "text/event-stream"
/* Nothing happened for this long: a comment line keeps proxies and the
 * client from taking the connection for dead. Sooner when serve's own
 * idle timeout is shorter: half of it, or the connection would be cut. */
#define SSE_KEEPALIVE_MS 10000

/* Whether the request asks for an event stream (its Accept names one). */
bool accepts_sse(const struct http_request *rq);

const char *run_event_name(enum run_event_kind k);
/* An event's data field as JSON: {"text"} (valid UTF-8) or {"base64"}
 * for output, {"name", "mime", "data"} (base64) for an image, the contract object
 * for the result. NULL: out of memory (or a result that is not JSON). */
json_t *run_event_data(const struct run_event *ev);
/* The event as its SSE text (malloc'ed, *len): NULL on ENOMEM. */
char *sse_format(const struct run_event *ev, size_t *len);
/* The same under an id of the caller's words (ev->id unused): a stream
 * whose place is not an event number (a background command's offsets). */
char *sse_format_as(const char *id, const struct run_event *ev, size_t *len);
/* The first text of every stream: how long a client waits to reconnect. */
#define SSE_RETRY "retry: 1000\n\n"
/* How often a stream with nothing to say sends a comment, for a server
 * whose connections are cut after idle_sec s without a byte. */
int sse_keepalive_ms(unsigned idle_sec);

/* Answers rs as a stream of run id's events after event number after,
 * read from st as owner, on a connection closed after idle_sec s without
 * a byte sent: rs's stream fields set, 0; or -ENOMEM. The
 * reader holds one batch of events and one formatted event at a time,
 * whatever the run printed, and writes only as fast as the client reads
 * (it is called only when the socket takes more). */
int sse_answer(struct http_response *rs, struct run_store *st, const char *id,
	       const char *owner, uint64_t after, unsigned idle_sec);

#endif
