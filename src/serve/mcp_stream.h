/* One /mcp POST answered as Server-Sent Events (MCP Streamable HTTP): the
 * JSON-RPC messages its call sends, each as an `event: message`, the
 * notifications first and the response last, then the end of the body.
 *
 * The call's thread queues messages; http.c pulls them only as fast as the
 * client reads. The queue is bounded: a notification that would take it
 * past MCP_STREAM_QUEUE_MAX bytes is dropped (the result carries the whole
 * output anyway), the response never is. A client that goes away changes
 * nothing for the run (the transport says a disconnect is no cancel): what
 * is sent after that is dropped. */
#ifndef AJ_SERVE_MCP_STREAM_H
#define AJ_SERVE_MCP_STREAM_H

#include <stdbool.h>

#include "http/respond.h"

#define MCP_STREAM_QUEUE_MAX (4u << 20)

struct mcp_stream;

/* A stream held twice: by its producer (the call) and its reader (the
 * HTTP answer). NULL on ENOMEM. */
struct mcp_stream *mcp_stream_new(void);
/* One whole message; a notification may be dropped (above). */
void mcp_stream_push(struct mcp_stream *st, const char *msg, bool notification);
/* The producer is done: the body ends after what is queued. Drops the
 * producer's hold. */
void mcp_stream_end(struct mcp_stream *st);
/* Answers rs with the stream (200, text/event-stream); the reader's hold
 * goes with rs and ends when the connection does. */
void mcp_stream_respond(struct mcp_stream *st, struct http_response *rs);
/* Drops the reader's hold, for a stream never given to an answer. */
void mcp_stream_unread(struct mcp_stream *st);

#endif
