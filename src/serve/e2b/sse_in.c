/* sse_in.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sse_in.h"

static int sse_line(struct sse_in *in, const char *l, size_t n)
{
	if (!n) {
		if (!in->event[0])
			return 0;
		int rc = in->on_event(in, in->event, in->data, in->arg);
		in->event[0] = '\0';
		json_decref(in->data);
		in->data = NULL;
		return rc;
	}
	if (l[0] == ':')
		return in->on_event(in, NULL, NULL, in->arg);
	if (n > 7 && !strncmp(l, "event: ", 7)) {
		snprintf(in->event, sizeof in->event, "%.*s", (int)(n - 7), l + 7);
	} else if (n > 6 && !strncmp(l, "data: ", 6)) {
		json_decref(in->data);
		in->data = json_loadb(l + 6, n - 6, 0, NULL);
	}
	return 0;
}

int sse_in_feed(struct sse_in *in, const char *p, size_t n)
{
	if (in->len + n > in->cap) {
		size_t cap = (in->len + n) * 2;
		char *b = realloc(in->line, cap);
		if (!b)
			return -1;
		in->line = b;
		in->cap = cap;
	}
	memcpy(in->line + in->len, p, n);
	in->len += n;
	size_t start = 0;
	for (size_t i = 0; i < in->len && !in->stop; i++) {
		if (in->line[i] != '\n')
			continue;
		if (sse_line(in, in->line + start, i - start))
			return -1;
		start = i + 1;
	}
	memmove(in->line, in->line + start, in->len - start);
	in->len -= start;
	return 0;
}

void sse_in_free(struct sse_in *in)
{
	free(in->line);
	json_decref(in->data);
	in->line = NULL;
	in->data = NULL;
	in->len = in->cap = 0;
}

int sse_relay_append(struct sse_relay *r, const char *p, size_t n)
{
	if (r->len + n > r->cap) {
		size_t cap = (r->len + n) * 2;
		char *b = realloc(r->out, cap);
		if (!b)
			return -1;
		r->out = b;
		r->cap = cap;
	}
	memcpy(r->out + r->len, p, n);
	r->len += n;
	return 0;
}

long sse_relay_read(void *arg, char *buf, size_t max)
{
	struct sse_relay *r = arg;
	while (r->pos == r->len) {
		if (r->done)
			return 0;
		r->len = r->pos = 0;
		char chunk[16384];
		long n = r->inner.stream_read(r->inner.stream_arg, chunk, sizeof chunk);
		if (n > 0 && sse_in_feed(&r->in, chunk, (size_t)n))
			return -1;
		if (n <= 0) {
			r->done = true;
			if (r->on_cut(r))
				return -1;
		}
	}
	size_t n = r->len - r->pos < max ? r->len - r->pos : max;
	memcpy(buf, r->out + r->pos, n);
	r->pos += n;
	return (long)n;
}

void sse_relay_done(void *arg)
{
	struct sse_relay *r = arg;
	if (r->inner.stream_done)
		r->inner.stream_done(r->inner.stream_arg);
	free(r->inner.body);
	sse_in_free(&r->in);
	free(r->out);
	free(r);
}
