/* A process's output as E2B's process stream (process.c's Start and
 * Connect): the v1 API's event stream of the command
 * (/v1/sessions/ID/processes/PID/events, Server-Sent Events) read as it
 * comes and each event written again as a Connect envelope. The v1 stream
 * keeps the client's place and its keep-alives; this only translates, one
 * event at a time, and holds what one read of it brought. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "connect_rpc.h"
#include "e2b_internal.h"
#include "v1_client.h"

struct pstream {
	struct http_response inner; /* the v1 event stream */
	uint32_t pid;
	bool pty;                   /* output is a terminal's: "pty" data */
	bool started, done;
	char *line;                 /* the SSE text not yet a whole line */
	size_t line_len, line_cap;
	char event[16];             /* the event being read: its name */
	json_t *data;               /* and its data */
	char *out;                  /* envelopes to send, from pos */
	size_t len, pos, cap;
};

/* E2B's end of a process from agentjail's result: exitCode, exited, status
 * and error as envd words them (Go's exec: "exit status 3", "signal:
 * killed"). */
static json_t *end_event(json_t *result)
{
	json_t *code = json_object_get(result, "exit_code");
	json_t *sig = json_object_get(result, "signal");
	char status[300];
	json_t *end;
	if (json_is_integer(code)) {
		json_int_t n = json_integer_value(code);
		snprintf(status, sizeof status, "exit status %lld", (long long)n);
		end = json_pack("{s:b, s:s}", "exited", 1, "status", status);
		if (n) {
			json_object_set_new(end, "exitCode", json_integer(n));
			json_object_set_new(end, "error", json_string(status));
		}
		return end;
	}
	if (json_is_integer(sig)) {
		char name[64];
		snprintf(name, sizeof name, "%s", strsignal((int)json_integer_value(sig)));
		for (char *p = name; *p; p++)
			*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
		snprintf(status, sizeof status, "signal: %s", name);
	} else {
		/* No exit and no signal: the sandbox's own failure, in its words. */
		const char *m = json_string_value(json_object_get(result, "message"));
		snprintf(status, sizeof status, "%s", m ? m : "the command's end is unknown");
	}
	return json_pack("{s:i, s:b, s:s, s:s}", "exitCode", -1, "exited", 0, "status", status,
			 "error", status);
}

static int emit(struct pstream *s, int flags, json_t *msg)
{
	return connect_envelope(&s->out, &s->len, &s->cap, flags, msg);
}

/* One whole SSE event (its name, its data) as envelopes. */
static int take_event(struct pstream *s)
{
	const char *ev = s->event;
	json_t *d = s->data;
	int rc = 0;
	if (!strcmp(ev, "stdout") || !strcmp(ev, "stderr")) {
		const char *text = json_string_value(json_object_get(d, "text"));
		const char *b64 = json_string_value(json_object_get(d, "base64"));
		char *enc = text ? base64_encode(text, strlen(text), NULL) : NULL;
		const char *field = s->pty ? "pty" : ev;
		if (text || b64)
			rc = emit(s, 0, json_pack("{s:{s:{s:s}}}", "event", "data", field,
						  enc ? enc : b64));
		free(enc);
	} else if (!strcmp(ev, "result")) {
		rc = emit(s, 0, json_pack("{s:{s:o}}", "event", "end", end_event(d)));
		if (!rc)
			rc = connect_end(&s->out, &s->len, &s->cap, NULL, NULL);
		s->done = true;
	}
	s->event[0] = '\0';
	json_decref(s->data);
	s->data = NULL;
	return rc;
}

/* One SSE line (no newline). */
static int take_line(struct pstream *s, const char *l, size_t n)
{
	if (!n)
		return s->event[0] ? take_event(s) : 0;
	if (l[0] == ':') /* the v1 stream's keep-alive */
		return emit(s, 0, json_pack("{s:{s:{}}}", "event", "keepalive"));
	if (n > 7 && !strncmp(l, "event: ", 7))
		snprintf(s->event, sizeof s->event, "%.*s", (int)(n - 7), l + 7);
	else if (n > 6 && !strncmp(l, "data: ", 6)) {
		json_decref(s->data);
		s->data = json_loadb(l + 6, n - 6, 0, NULL);
	}
	return 0;
}

static int feed(struct pstream *s, const char *p, size_t n)
{
	if (s->line_len + n > s->line_cap) {
		size_t cap = (s->line_len + n) * 2;
		char *b = realloc(s->line, cap);
		if (!b)
			return -1;
		s->line = b;
		s->line_cap = cap;
	}
	memcpy(s->line + s->line_len, p, n);
	s->line_len += n;
	size_t start = 0;
	for (size_t i = 0; i < s->line_len && !s->done; i++) {
		if (s->line[i] != '\n')
			continue;
		if (take_line(s, s->line + start, i - start))
			return -1;
		start = i + 1;
	}
	memmove(s->line, s->line + start, s->line_len - start);
	s->line_len -= start;
	return 0;
}

static long pstream_read(void *arg, char *buf, size_t max)
{
	struct pstream *s = arg;
	while (s->pos == s->len) {
		if (s->done)
			return 0;
		s->len = s->pos = 0;
		if (!s->started) {
			s->started = true;
			if (emit(s, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", (int)s->pid)))
				return -1;
			continue;
		}
		char chunk[16384];
		long n = s->inner.stream_read(s->inner.stream_arg, chunk, sizeof chunk);
		if (n > 0 && feed(s, chunk, (size_t)n))
			return -1;
		if (n <= 0) {
			/* The session went, or the command was forgotten: the
			 * stream ends saying so, never silently. */
			s->done = true;
			if (connect_end(&s->out, &s->len, &s->cap, "unavailable",
					"the sandbox's session ended before the process did"))
				return -1;
		}
	}
	size_t n = s->len - s->pos < max ? s->len - s->pos : max;
	memcpy(buf, s->out + s->pos, n);
	s->pos += n;
	return (long)n;
}

static void pstream_done(void *arg)
{
	struct pstream *s = arg;
	if (s->inner.stream_done)
		s->inner.stream_done(s->inner.stream_arg);
	v1_free(&s->inner);
	json_decref(s->data);
	free(s->line);
	free(s->out);
	free(s);
}

void e2b_process_stream(struct e2b_call *c, uint32_t pid, bool pty)
{
	struct pstream *s = calloc(1, sizeof *s);
	if (!s)
		return connect_error(c->rq, c->rs, "internal", "out of memory");
	s->pid = pid;
	s->pty = pty;
	char path[160];
	snprintf(path, sizeof path, "/v1/sessions/%s/processes/%u/events", c->sb.id, pid);
	v1_call(c->svc, c->rq->key, "GET", path, NULL, "text/event-stream", &s->inner);
	if (!s->inner.stream_read) {
		char m[400];
		v1_error_message(&s->inner, m, sizeof m);
		int code = s->inner.code;
		pstream_done(s);
		return connect_error(c->rq, c->rs, connect_code_of_http(code), "%s",
				     m[0] ? m : "the process's output cannot be read");
	}
	struct http_response *rs = c->rs;
	rs->code = 200;
	rs->content_type = CONNECT_STREAM_TYPE;
	rs->stream_read = pstream_read;
	rs->stream_done = pstream_done;
	rs->stream_arg = s;
}
