/* A background command's event stream (proc_events.h). Nothing is kept
 * here but the client's place and the text being sent: each read asks the
 * session for what follows the place, so a client that drops loses
 * nothing, and one that comes back is the same reader from its place. The
 * stream holds no run slot: its reads are short (200 ms at most inside
 * the sandbox, the session's other calls going on between them), it ends
 * with the command (whose own timeout, or the session's lifetime, bounds
 * it) or the session, and it sends a comment when idle so that a client
 * gone is seen. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "../runs/sse.h"
#include "proc_call.h"
#include "proc_events.h"

struct proc_reader {
	struct proc_source src;
	uint32_t pid;
	uint64_t off[2];   /* the bytes of stdout and stderr given so far */
	char *text;        /* what is being sent, from pos */
	size_t len, pos, cap;
	bool ended;        /* the result is in text: nothing follows */
	json_t *first;     /* the first read's body, made before the answer */
	double idle_since; /* now_ms() of the last event or comment */
	int keepalive_ms;
};

int proc_events_after(const struct http_request *rq, struct http_response *rs, uint64_t off[2])
{
	const char *v = rq->last_event_id ? rq->last_event_id : rq->query_after;
	unsigned long long a, b;
	int n = 0;
	off[0] = off[1] = 0;
	if (!v)
		return 0;
	if (sscanf(v, "%llu-%llu%n", &a, &b, &n) != 2 || v[n] || v[0] == '-' ||
	    strchr(v, '+') || strchr(v, ' ')) {
		respond_error(rs, 400, "bad_request", "%s: expected OUT-ERR (the bytes of stdout "
			      "and stderr had so far, as an event's id gives them), not '%.40s'",
			      rq->last_event_id ? "Last-Event-ID" : "after", v);
		return -1;
	}
	off[0] = a;
	off[1] = b;
	return 0;
}

static int add_text(struct proc_reader *r, const char *p, size_t n)
{
	if (r->len + n > r->cap) {
		size_t cap = (r->len + n) * 2;
		char *t = realloc(r->text, cap);
		if (!t)
			return -1;
		r->text = t;
		r->cap = cap;
	}
	memcpy(r->text + r->len, p, n);
	r->len += n;
	return 0;
}

static int stream_event(struct proc_reader *r, enum run_event_kind kind, char *data, size_t n)
{
	char id[48];
	size_t len;
	snprintf(id, sizeof id, "%" PRIu64 "-%" PRIu64, r->off[0], r->off[1]);
	struct run_event ev = {.kind = kind, .data = data, .len = n};
	char *t = sse_format_as(id, &ev, &len);
	int rc = t ? add_text(r, t, len) : -1;
	free(t);
	return rc;
}

/* A terminal's window moved past the client's place in stdout: the place
 * goes to where the read's bytes start, so each event's id stays the
 * offset after its own bytes, and the bytes between, which no one can
 * have any more, are said to be gone (a comment, which clients skip)
 * rather than passed off as given. 0, or -1 (a from behind the place). */
static int take_window(struct proc_reader *r, json_t *body)
{
	json_t *from = json_object_get(body, "out_from");
	if (!from)
		return 0;
	if (!json_is_integer(from) || json_integer_value(from) < 0 ||
	    (uint64_t)json_integer_value(from) < r->off[0])
		return -1;
	uint64_t to = (uint64_t)json_integer_value(from);
	char note[128];
	int n = to > r->off[0] ? snprintf(note, sizeof note, ": stdout %" PRIu64 " to %" PRIu64
					 " is gone (a terminal keeps its last output)\n\n",
					 r->off[0], to)
			       : 0;
	r->off[0] = to;
	return n > 0 ? add_text(r, note, (size_t)n) : 0;
}

/* A read's body as events: 0, or -1 (a body that is not a read's). */
static int take_read(struct proc_reader *r, json_t *body)
{
	static const char *const keys[] = {"out", "err"};
	if (take_window(r, body))
		return -1;
	for (int i = 0; i < 2; i++) {
		json_t *d = json_object_get(body, keys[i]);
		unsigned char *buf = NULL;
		size_t n = 0;
		if (!json_is_string(d) ||
		    base64_decode(json_string_value(d), json_string_length(d), &buf, &n))
			return -1;
		r->off[i] += n;
		int rc = n ? stream_event(r, i ? RUN_EV_STDERR : RUN_EV_STDOUT, (char *)buf, n) : 0;
		free(buf);
		if (rc)
			return -1;
	}
	if (!json_is_true(json_object_get(body, "ended")))
		return 0;
	char *res = json_dumps(json_object_get(body, "result"), JSON_COMPACT | JSON_PRESERVE_ORDER |
									JSON_REAL_PRECISION(12));
	int rc = res ? stream_event(r, RUN_EV_RESULT, res, strlen(res)) : -1;
	free(res);
	r->ended = true;
	return rc;
}

/* The answer to one read from the client's place: 200's body, else NULL
 * with the answer in *other (when one came). */
static json_t *fetch(struct proc_reader *r, json_t **other)
{
	json_t *req = proc_read_request(r->pid, r->off);
	json_t *ans = req ? r->src.call(r->src.arg, req) : NULL;
	json_decref(req);
	json_t *body = json_object_get(ans, "body");
	if (json_integer_value(json_object_get(ans, "http")) == 200 && json_is_object(body)) {
		json_incref(body);
		json_decref(ans);
		return body;
	}
	if (other)
		*other = ans;
	else
		json_decref(ans);
	return NULL;
}

static long proc_read_fn(void *arg, char *buf, size_t max)
{
	struct proc_reader *r = arg;
	while (r->pos == r->len) {
		if (r->ended)
			return 0;
		r->len = r->pos = 0;
		json_t *body = r->first ? r->first : fetch(r, NULL);
		r->first = NULL;
		/* The session gone, or the command forgotten: cut, not a
		 * silent end, so the client asks again and learns why. */
		int rc = body ? take_read(r, body) : -1;
		json_decref(body);
		if (rc)
			return -1;
		if (r->len) {
			r->idle_since = now_ms();
		} else if (now_ms() - r->idle_since >= r->keepalive_ms) {
			static const char keepalive[] = ": keep-alive\n\n";
			if (add_text(r, keepalive, strlen(keepalive)))
				return -1;
			r->idle_since = now_ms();
		}
	}
	size_t n = r->len - r->pos < max ? r->len - r->pos : max;
	memcpy(buf, r->text + r->pos, n);
	r->pos += n;
	return (long)n;
}

static void proc_done_fn(void *arg)
{
	struct proc_reader *r = arg;
	if (r->src.done)
		r->src.done(r->src.arg);
	json_decref(r->first);
	free(r->text);
	free(r);
}

int proc_events_answer(struct http_response *rs, const struct proc_source *src, uint32_t pid,
		       const uint64_t off[2], unsigned idle_sec)
{
	struct proc_reader *r = calloc(1, sizeof *r);
	if (!r || add_text(r, SSE_RETRY, strlen(SSE_RETRY))) {
		free(r);
		if (src->done)
			src->done(src->arg);
		return -ENOMEM;
	}
	*r = (struct proc_reader){.src = *src, .pid = pid, .off = {off[0], off[1]},
				  .text = r->text, .len = r->len, .cap = r->cap,
				  .idle_since = now_ms(), .keepalive_ms = sse_keepalive_ms(idle_sec)};
	json_t *other = NULL;
	/* Known before the stream starts: an unknown pid is a 404, an offset
	 * past the output a 400, a closed session a 410. */
	if (!(r->first = fetch(r, &other))) {
		if (other)
			proc_call_answer(other, rs);
		else
			respond_error(rs, 503, "session_unavailable", "the session cannot be reached; "
				      "retry");
		json_decref(other);
		proc_done_fn(r);
		return 0;
	}
	rs->code = 200;
	rs->content_type = SSE_CONTENT_TYPE;
	rs->stream_read = proc_read_fn;
	rs->stream_done = proc_done_fn;
	rs->stream_arg = r;
	return 0;
}
