/* The v1 API's event streams read back (runs/sse.h's format): the E2B
 * wing turns each event into its own protocol's (process_stream.c,
 * execute.c). Lines are taken as they come, whatever the reads' sizes. */
#ifndef AJ_SERVE_E2B_SSE_IN_H
#define AJ_SERVE_E2B_SSE_IN_H

#include <jansson.h>
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

#endif
