/* The v1 API's event streams read back (runs/sse.h's format): the E2B
 * wing turns each event into its own protocol's (process_stream.c,
 * execute.c). Lines are taken as they come, whatever the reads' sizes. */
#ifndef AJ_SERVE_E2B_SSE_IN_H
#define AJ_SERVE_E2B_SSE_IN_H

#include <jansson.h>

#include "../http/respond.h"
#include <stdbool.h>
#include <stddef.h>

struct sse_in {
	char *line;             /* the text not yet a whole line */
	size_t len, cap;
	char event[16];         /* the event being read: its name */
	json_t *data;           /* and its data */
	bool stop;              /* set by on_event: the rest is not read */
	/* A whole event (name, data: NULL when it held none) or, with name
	 * NULL, a comment (the stream's keep-alive): 0, or -1 to fail. */
	int (*on_event)(struct sse_in *in, const char *name, json_t *data, void *arg);
	void *arg;
};

/* Takes n more bytes: 0, or -1 (out of memory, or on_event failed). */
int sse_in_feed(struct sse_in *in, const char *p, size_t n);
void sse_in_free(struct sse_in *in);

/* A v1 event stream (inner) relayed as another protocol's answer: inner is
 * read only when what was made of it so far (out, from pos) is sent, each
 * event turned into the other protocol's text by in.on_event, which
 * appends to out (sse_relay_append) and sets done at the last one. The
 * first member of a calloc'ed struct of its user's, which sse_relay_done
 * frees whole. */
struct sse_relay {
	struct http_response inner;
	struct sse_in in;
	char *out;
	size_t len, pos, cap;
	bool done;
	/* inner ended or was cut before done: appends the words that end the
	 * answer saying so (never a silent end). 0, or -1. */
	int (*on_cut)(struct sse_relay *r);
};

/* n bytes more to send: 0, or -1 (out of memory). */
int sse_relay_append(struct sse_relay *r, const char *p, size_t n);
/* An http_response's stream_read and stream_done, arg the relay. */
long sse_relay_read(void *arg, char *buf, size_t max);
void sse_relay_done(void *arg);

#endif
