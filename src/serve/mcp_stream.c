/* An /mcp POST's SSE answer: a queue of formatted events between the
 * call's thread and the connection's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/internal.h"
#include "mcp_stream.h"
#include "runs/sse.h"

/* One wait of the reader's: short, so that a keep-alive due is sent soon
 * and a connection that ends is not held up (respond.h's stream_read). */
#define WAIT_MS 1000

struct event {
	struct event *next;
	size_t len;
	char text[];
};

struct mcp_stream {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct event *head, *tail;
	size_t queued;          /* bytes in the queue */
	unsigned long dropped;  /* notifications past the bound */
	bool ended;             /* the producer is done */
	bool reader_gone;
	unsigned holds;
	/* The reader's own: the event being sent, from out_off. */
	struct event *out;
	size_t out_off;
	double idle_since;      /* now_ms() of the last event or keep-alive */
};

/* An event of text: head, then what, then tail. */
static struct event *event_of(const char *head, const char *what, const char *tail)
{
	size_t h = strlen(head), w = strlen(what), t = strlen(tail);
	struct event *e = malloc(sizeof *e + h + w + t + 1);
	if (!e)
		return NULL;
	memcpy(e->text, head, h);
	memcpy(e->text + h, what, w);
	memcpy(e->text + h + w, tail, t + 1);
	e->len = h + w + t;
	e->next = NULL;
	return e;
}

static void free_queue(struct mcp_stream *st)
{
	while (st->head) {
		struct event *e = st->head;
		st->head = e->next;
		free(e);
	}
	st->tail = NULL;
	st->queued = 0;
}

static void release(struct mcp_stream *st)
{
	pthread_mutex_lock(&st->lock);
	bool last = --st->holds == 0;
	pthread_mutex_unlock(&st->lock);
	if (!last)
		return;
	if (st->dropped)
		fprintf(stderr, "agentjail serve: /mcp: %lu notification(s) dropped: the client read "
				"slower than the run wrote\n",
			st->dropped);
	free_queue(st);
	free(st->out);
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->changed);
	free(st);
}

struct mcp_stream *mcp_stream_new(void)
{
	struct mcp_stream *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	pthread_mutex_init(&st->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	/* Waits are measured on the clock that does not jump. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->changed, &ca);
	pthread_condattr_destroy(&ca);
	st->holds = 2;
	st->idle_since = now_ms();
	return st;
}

void mcp_stream_push(struct mcp_stream *st, const char *msg, bool notification)
{
	/* A JSON-RPC message is one line (the server writes it compact, with
	 * no raw newline), so one data line carries it. */
	struct event *e = event_of("event: message\ndata: ", msg, "\n\n");
	pthread_mutex_lock(&st->lock);
	if (!e || st->reader_gone) {
		free(e);
	} else if (notification && st->queued + e->len > MCP_STREAM_QUEUE_MAX) {
		/* Bounded memory for a client that reads slowly or not at
		 * all: its notifications go, its result stays. */
		st->dropped++;
		free(e);
	} else {
		if (st->tail)
			st->tail->next = e;
		else
			st->head = e;
		st->tail = e;
		st->queued += e->len;
		pthread_cond_broadcast(&st->changed);
	}
	pthread_mutex_unlock(&st->lock);
}

void mcp_stream_end(struct mcp_stream *st)
{
	pthread_mutex_lock(&st->lock);
	st->ended = true;
	pthread_cond_broadcast(&st->changed);
	pthread_mutex_unlock(&st->lock);
	release(st);
}

/* The next event into st->out: 1, or 0 at the end. */
static int next_event(struct mcp_stream *st)
{
	free(st->out);
	st->out = NULL;
	st->out_off = 0;
	pthread_mutex_lock(&st->lock);
	while (!st->head && !st->ended) {
		if (now_ms() - st->idle_since >= SSE_KEEPALIVE_MS) {
			/* Nothing for a while: a comment keeps proxies and the
			 * client from taking the connection for dead. */
			st->out = event_of(": keep-alive\n\n", "", "");
			break;
		}
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += WAIT_MS / 1000;
		pthread_cond_timedwait(&st->changed, &st->lock, &until);
	}
	if (!st->out && st->head) {
		st->out = st->head;
		st->head = st->out->next;
		if (!st->head)
			st->tail = NULL;
		st->queued -= st->out->len;
	}
	pthread_mutex_unlock(&st->lock);
	st->idle_since = now_ms();
	return st->out ? 1 : 0;
}

static long stream_read(void *arg, char *buf, size_t max)
{
	struct mcp_stream *st = arg;
	if ((!st->out || st->out_off == st->out->len) && !next_event(st))
		return 0;
	size_t n = st->out->len - st->out_off;
	if (n > max)
		n = max;
	memcpy(buf, st->out->text + st->out_off, n);
	st->out_off += n;
	return (long)n;
}

static void stream_done(void *arg)
{
	struct mcp_stream *st = arg;
	pthread_mutex_lock(&st->lock);
	st->reader_gone = true;
	free_queue(st);
	pthread_mutex_unlock(&st->lock);
	release(st);
}

void mcp_stream_respond(struct mcp_stream *st, struct http_response *rs)
{
	rs->code = 200;
	rs->content_type = SSE_CONTENT_TYPE;
	rs->stream_read = stream_read;
	rs->stream_done = stream_done;
	rs->stream_arg = st;
}

void mcp_stream_unread(struct mcp_stream *st)
{
	stream_done(st);
}
