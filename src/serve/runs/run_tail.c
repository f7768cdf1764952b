/* A record followed into an aj_stream (run_tail.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run_tail.h"

struct run_tail {
	struct run_store *st;
	char id[33];
	char *owner;
	const struct aj_stream *stream;
	pthread_t thread;
	atomic_bool stop;
};

static void event_to_stream(struct run_tail *t, const struct run_event *e, uint64_t *offset)
{
	struct aj_event ev = {.data = e->data, .len = e->len, .name = e->name, .mime = e->mime};
	ev.kind = e->kind == RUN_EV_STDOUT   ? AJ_EVENT_STDOUT
		  : e->kind == RUN_EV_STDERR ? AJ_EVENT_STDERR
					     : AJ_EVENT_IMAGE;
	if (e->kind != RUN_EV_IMAGE) {
		ev.offset = offset[e->kind];
		offset[e->kind] += e->len;
	}
	t->stream->fn(t->stream->arg, &ev);
}

static void *tail_main(void *arg)
{
	struct run_tail *t = arg;
	uint64_t after = 0, offset[2] = {0, 0};
	bool done = false;
	while (!done) {
		struct run_event *ev = NULL;
		size_t n = 0;
		/* Waits in the store (a blocking read in Redis) for the next
		 * event, so the stop flag is looked at at least twice a second. */
		int rc = t->st->ops->events(t->st, t->id, t->owner, after, 500, &ev, &n, &done);
		if (rc) {
			/* Gone or unreachable: nothing more will come. Once asked
			 * to stop, no more waiting; before, a passing Redis
			 * hiccup is waited out. */
			if (atomic_load(&t->stop) || rc == -ENOENT)
				break;
			nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (ev[i].kind != RUN_EV_RESULT)
				event_to_stream(t, &ev[i], offset);
			after = ev[i].id;
		}
		run_events_free(ev, n);
		/* Asked to stop with the record ended, yet no end read: the end
		 * could not be written (Redis lost); the caller has its answer. */
		if (!n && atomic_load(&t->stop))
			break;
	}
	return NULL;
}

struct run_tail *run_tail_start(struct run_store *st, const char *id, const char *owner,
				const struct aj_stream *stream)
{
	struct run_tail *t = calloc(1, sizeof *t);
	if (!t || !(t->owner = strdup(owner))) {
		free(t);
		return NULL;
	}
	t->st = st;
	snprintf(t->id, sizeof t->id, "%s", id);
	t->stream = stream;
	atomic_init(&t->stop, false);
	if (pthread_create(&t->thread, NULL, tail_main, t)) {
		free(t->owner);
		free(t);
		return NULL;
	}
	return t;
}

void run_tail_stop(struct run_tail *t)
{
	if (!t)
		return;
	atomic_store(&t->stop, true);
	pthread_join(t->thread, NULL);
	free(t->owner);
	free(t);
}
