/* The SSE reader over a run store: what the client gets is read from the
 * record, never handed from the run to the connection, so a client that
 * drops changes nothing for the run, and one that comes back is the same
 * reader from its Last-Event-ID. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "sse.h"

/* One wait of the reader's: short, so a record dropped or a keep-alive
 * due is seen soon. */
#define SSE_WAIT_MS 1000

bool accepts_sse(const struct http_request *rq)
{
	return rq->accept && strcasestr(rq->accept, SSE_CONTENT_TYPE);
}

const char *run_event_name(enum run_event_kind k)
{
	switch (k) {
	case RUN_EV_STDOUT:
		return "stdout";
	case RUN_EV_STDERR:
		return "stderr";
	case RUN_EV_IMAGE:
		return "image";
	default:
		return "result";
	}
}

static json_t *base64_string(const char *p, size_t n)
{
	char *b = base64_encode(p, n, NULL);
	json_t *s = b ? json_string(b) : NULL;
	free(b);
	return s;
}

json_t *run_event_data(const struct run_event *ev)
{
	if (ev->kind == RUN_EV_RESULT)
		return json_loadb(ev->data, ev->len, 0, NULL);
	if (ev->kind == RUN_EV_IMAGE)
		return json_pack("{s:s, s:s, s:o}", "name", ev->name ? ev->name : "",
				 "mime", ev->mime ? ev->mime : "application/octet-stream",
				 /* "data", as an image is in a result's
				  * "images": one name for an image's bytes */
				 "data", base64_string(ev->data, ev->len));
	/* json_stringn refuses what is not valid UTF-8: then the bytes go as
	 * they are, in base64 (a chunk may split a character). */
	json_t *text = json_stringn(ev->data, ev->len);
	if (text)
		return json_pack("{s:o}", "text", text);
	return json_pack("{s:o}", "base64", base64_string(ev->data, ev->len));
}

char *sse_format_as(const char *id, const struct run_event *ev, size_t *len)
{
	char *data = NULL;
	/* The result's text is the one-line contract object already. */
	if (ev->kind == RUN_EV_RESULT && !memchr(ev->data, '\n', ev->len)) {
		data = malloc(ev->len + 1);
		if (data) {
			memcpy(data, ev->data, ev->len);
			data[ev->len] = '\0';
		}
	} else {
		json_t *o = run_event_data(ev);
		data = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
						 JSON_REAL_PRECISION(12))
			 : NULL;
		json_decref(o);
	}
	if (!data)
		return NULL;
	char *out = NULL;
	int n = asprintf(&out, "id: %s\nevent: %s\ndata: %s\n\n", id, run_event_name(ev->kind),
			 data);
	free(data);
	if (n < 0)
		return NULL;
	*len = (size_t)n;
	return out;
}

char *sse_format(const struct run_event *ev, size_t *len)
{
	char id[24];
	snprintf(id, sizeof id, "%llu", (unsigned long long)ev->id);
	return sse_format_as(id, ev, len);
}

/* What is being sent: at most three pieces (a result's header, its text
 * as the store gave it, and the blank line), so the largest event, the
 * result, is never copied again to be sent. */
struct piece {
	char *p;
	size_t n;
	bool owned;
};

struct sse_reader {
	struct run_store *st;
	char id[33];
	char *owner;
	uint64_t after;         /* the last event given to the client */
	struct run_event *batch;
	size_t n, next;
	bool done;              /* the batch holds the result: nothing follows */
	bool read_once;         /* the store was read at least once */
	bool ended_at_start;    /* its first read found the run ended, after all */
	bool result_sent;
	struct piece out[3];    /* sent in order, the current one from off */
	int pieces, cur;
	size_t off;
	bool ended;
	double idle_since;      /* now_ms() of the last event or keep-alive */
	int keepalive_ms;
};

static void out_clear(struct sse_reader *r)
{
	for (int i = 0; i < r->pieces; i++)
		if (r->out[i].owned)
			free(r->out[i].p);
	r->pieces = r->cur = 0;
	r->off = 0;
}

static void out_add(struct sse_reader *r, char *p, size_t n, bool owned)
{
	r->out[r->pieces++] = (struct piece){p, n, owned};
}

/* The event ev into r->out: 0, or -1 on ENOMEM. The event's bytes leave
 * the batch as soon as they are in r->out: a reader holds one event at
 * most twice over, and a result once. */
static int event_out(struct sse_reader *r, struct run_event *ev)
{
	if (ev->kind == RUN_EV_RESULT && !memchr(ev->data, '\n', ev->len)) {
		/* The result's text is the one-line contract object already. */
		char *head = NULL;
		int n = asprintf(&head, "id: %llu\nevent: result\ndata: ",
				 (unsigned long long)ev->id);
		if (n < 0)
			return -1;
		out_add(r, head, (size_t)n, true);
		out_add(r, ev->data, ev->len, true);
		ev->data = NULL;
		out_add(r, (char *)"\n\n", 2, false);
		return 0;
	}
	size_t len;
	char *t = sse_format(ev, &len);
	free(ev->data);
	ev->data = NULL;
	if (!t)
		return -1;
	out_add(r, t, len, true);
	return 0;
}

static bool batch_has_result(const struct sse_reader *r)
{
	return r->n && r->batch[r->n - 1].kind == RUN_EV_RESULT;
}

/* A live run that ended at or before the client's Last-Event-ID (one it
 * was given by another run's stream, or made up): the run's end would
 * pass unseen, so its result goes anyway, the one event past the id.
 * Every stream of a live run ends with its result. 0, or -1 to cut. */
static int result_anyway(struct sse_reader *r)
{
	struct run_info info;
	if (r->st->ops->info(r->st, r->id, r->owner, &info))
		return -1;
	uint64_t last = info.last_id;
	run_info_clear(&info);
	if (!last)
		return -1;
	run_events_free(r->batch, r->n);
	r->batch = NULL;
	r->n = r->next = 0;
	bool done;
	if (r->st->ops->events(r->st, r->id, r->owner, last - 1, 0, &r->batch, &r->n, &done) ||
	    !batch_has_result(r))
		return -1;
	return 0;
}

/* The next text to send into r->out: 1, 0 at the end, -1 to cut. */
static int next_text(struct sse_reader *r)
{
	out_clear(r);
	for (;;) {
		if (r->next < r->n) {
			struct run_event *ev = &r->batch[r->next++];
			if (ev->kind == RUN_EV_RESULT)
				r->result_sent = true;
			if (event_out(r, ev))
				return -1;
			r->after = ev->id;
			r->idle_since = now_ms();
			return 1;
		}
		run_events_free(r->batch, r->n);
		r->batch = NULL;
		r->n = r->next = 0;
		if (r->done)
			return 0;
		int wait = r->keepalive_ms < SSE_WAIT_MS ? r->keepalive_ms : SSE_WAIT_MS;
		int rc = r->st->ops->events(r->st, r->id, r->owner, r->after, wait, &r->batch,
					    &r->n, &r->done);
		if (rc)
			return -1; /* expired or dropped mid-read: cut, not a silent end */
		if (!r->read_once) {
			r->read_once = true;
			r->ended_at_start = r->done && !r->n;
		}
		if (r->done && !r->ended_at_start && !r->result_sent && !batch_has_result(r) &&
		    result_anyway(r))
			return -1;
		if (!r->n && !r->done && now_ms() - r->idle_since >= r->keepalive_ms) {
			static char keepalive[] = ": keep-alive\n\n";
			out_add(r, keepalive, strlen(keepalive), false);
			r->idle_since = now_ms();
			return 1;
		}
	}
}

static long sse_read(void *arg, char *buf, size_t max)
{
	struct sse_reader *r = arg;
	while (r->cur < r->pieces && r->off == r->out[r->cur].n) {
		r->cur++;
		r->off = 0;
	}
	if (r->cur == r->pieces) {
		if (r->ended)
			return 0;
		int rc = next_text(r);
		if (rc <= 0) {
			r->ended = true;
			return rc;
		}
	}
	struct piece *pc = &r->out[r->cur];
	size_t n = pc->n - r->off;
	if (n > max)
		n = max;
	memcpy(buf, pc->p + r->off, n);
	r->off += n;
	return (long)n;
}

static void sse_done(void *arg)
{
	struct sse_reader *r = arg;
	run_events_free(r->batch, r->n);
	out_clear(r);
	free(r->owner);
	free(r);
}

int sse_keepalive_ms(unsigned idle_sec)
{
	if (idle_sec * 500u < (unsigned)SSE_KEEPALIVE_MS)
		return idle_sec ? (int)(idle_sec * 500u) : 500;
	return SSE_KEEPALIVE_MS;
}

int sse_answer(struct http_response *rs, struct run_store *st, const char *id,
	       const char *owner, uint64_t after, unsigned idle_sec)
{
	struct sse_reader *r = calloc(1, sizeof *r);
	/* The client waits this long before it reconnects (SSE's retry). */
	static char first[] = SSE_RETRY;
	if (!r || !(r->owner = strdup(owner))) {
		free(r);
		return -ENOMEM;
	}
	r->st = st;
	snprintf(r->id, sizeof r->id, "%s", id);
	r->after = after;
	r->idle_since = now_ms();
	r->keepalive_ms = sse_keepalive_ms(idle_sec);
	out_add(r, first, strlen(first), false);
	rs->code = 200;
	rs->content_type = SSE_CONTENT_TYPE;
	rs->stream_read = sse_read;
	rs->stream_done = sse_done;
	rs->stream_arg = r;
	snprintf(rs->run_id, sizeof rs->run_id, "%s", id);
	return 0;
}
