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
#include "common.h"
#include "process_stream.h"
#include "sse_in.h"
#include "v1_client.h"

struct pstream {
	struct sse_relay r;         /* first: the relay frees it whole */
	bool pty;                   /* output is a terminal's: "pty" data */
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

static int emit_envelope(struct pstream *s, int flags, json_t *msg)
{
	return connect_envelope(&s->r.out, &s->r.len, &s->r.cap, flags, msg);
}

/* One v1 event (name NULL: a keep-alive) as envelopes. */
static int process_event(struct sse_in *in, const char *ev, json_t *d, void *arg)
{
	struct pstream *s = arg;
	if (!ev)
		return emit_envelope(s, 0, json_pack("{s:{s:{}}}", "event", "keepalive"));
	if (!strcmp(ev, "stdout") || !strcmp(ev, "stderr")) {
		const char *text = json_string_value(json_object_get(d, "text"));
		const char *b64 = json_string_value(json_object_get(d, "base64"));
		char *enc = text ? base64_encode(text, strlen(text), NULL) : NULL;
		const char *field = s->pty ? "pty" : ev;
		int rc = 0;
		if (text || b64)
			rc = emit_envelope(s, 0, json_pack("{s:{s:{s:s}}}", "event", "data", field,
						  enc ? enc : b64));
		free(enc);
		return rc;
	}
	if (!strcmp(ev, "result")) {
		in->stop = true;
		s->r.done = true;
		return emit_envelope(s, 0, json_pack("{s:{s:o}}", "event", "end", end_event(d))) ||
		       connect_end(&s->r.out, &s->r.len, &s->r.cap, NULL, NULL);
	}
	return 0;
}

/* The session went, or the command was forgotten: the stream ends saying
 * so, never silently. */
static int process_cut(struct sse_relay *r)
{
	return connect_end(&r->out, &r->len, &r->cap, "unavailable",
			   "the sandbox's session ended before the process did");
}

void e2b_process_stream(struct e2b_call *c, uint32_t pid, bool pty)
{
	struct pstream *s = calloc(1, sizeof *s);
	if (!s)
		return connect_error(c->rq, c->rs, "internal", "out of memory");
	s->pty = pty;
	s->r.in.on_event = process_event;
	s->r.in.arg = s;
	s->r.on_cut = process_cut;
	char path[160];
	snprintf(path, sizeof path, "/v1/sessions/%s/processes/%u/events", c->sb.id, pid);
	v1_call(c->svc, c->rq->key, "GET", path, NULL, "text/event-stream", &s->r.inner);
	/* The start event first, whatever follows: the SDKs require it. */
	if (!s->r.inner.stream_read ||
	    emit_envelope(s, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", (int)pid))) {
		char m[400];
		v1_error_message(&s->r.inner, m, sizeof m);
		int code = s->r.inner.stream_read ? 500 : s->r.inner.code;
		sse_relay_done(s);
		return connect_error(c->rq, c->rs, connect_code_of_http(code), "%s",
				     m[0] ? m : "the process's output cannot be read");
	}
	struct http_response *rs = c->rs;
	rs->code = 200;
	rs->content_type = CONNECT_STREAM_TYPE;
	rs->stream_read = sse_relay_read;
	rs->stream_done = sse_relay_done;
	rs->stream_arg = s;
}
