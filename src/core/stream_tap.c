/* The bounded queue and its delivery thread (stream_tap.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "stream_tap.h"

struct tap_event {
	struct tap_event *next;
	enum aj_event_kind kind;
	size_t len;
	char *name, *mime;      /* images only */
	char data[];
};

struct stream_tap {
	aj_event_fn fn;
	void *arg;
	size_t high, low;       /* pause at high; room again under low */
	int room_fd;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct tap_event *head, *tail;
	size_t held;            /* queued bytes, and the one being delivered */
	size_t peak;
	bool waiting;           /* the reader paused: signal room_fd under low */
	bool finishing;
	uint64_t lost;
	uint64_t offset[2];     /* bytes of each stream delivered so far */
	size_t pushed[2];       /* bytes of each stream pushed (the reader's side) */
};

static void deliver(struct stream_tap *t, struct tap_event *e)
{
	struct aj_event ev = {.kind = e->kind, .data = e->data, .len = e->len,
			      .name = e->name, .mime = e->mime};
	if (e->kind != AJ_EVENT_IMAGE) {
		ev.offset = t->offset[e->kind];
		t->offset[e->kind] += e->len;
	}
	t->fn(t->arg, &ev);
}

static void *delivery(void *arg)
{
	struct stream_tap *t = arg;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (!t->head && !t->finishing)
			pthread_cond_wait(&t->cv, &t->mu);
		struct tap_event *e = t->head;
		if (!e)
			break; /* finishing, and all delivered */
		t->head = e->next;
		if (!t->head)
			t->tail = NULL;
		pthread_mutex_unlock(&t->mu);
		/* fn runs unlocked: the supervisor pushes meanwhile. */
		deliver(t, e);
		pthread_mutex_lock(&t->mu);
		/* The chunk counts until fn is done with it: that is when
		 * its memory is given back. */
		t->held -= e->len;
		free(e->name);
		free(e->mime);
		free(e);
		if (t->waiting && t->held < t->low) {
			uint64_t one = 1;
			t->waiting = false;
			(void)!write(t->room_fd, &one, sizeof one);
		}
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int stream_tap_start(const struct aj_stream *stream, struct stream_tap **out)
{
	*out = NULL;
	if (!stream || !stream->fn)
		return -EINVAL;
	struct stream_tap *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->fn = stream->fn;
	t->arg = stream->arg;
	t->high = (size_t)(stream->buffer_kb ? stream->buffer_kb : AJ_DEFAULT_STREAM_BUFFER_KB) * 1024;
	t->low = t->high / 2;
	/* Non-blocking: the supervisor's poll says when to read it, and a
	 * read to reset it must never wait. */
	t->room_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->room_fd < 0) {
		int e = -errno;
		free(t);
		return e;
	}
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	/* The caller's signals stay the caller's: the delivery thread blocks
	 * them all, so a SIGINT or SIGCHLD is never handled on it. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&t->thread, NULL, delivery, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(t->room_fd);
		pthread_mutex_destroy(&t->mu);
		pthread_cond_destroy(&t->cv);
		free(t);
		return -rc;
	}
	*out = t;
	return 0;
}

static void enqueue(struct stream_tap *t, struct tap_event *e)
{
	pthread_mutex_lock(&t->mu);
	if (t->tail)
		t->tail->next = e;
	else
		t->head = e;
	t->tail = e;
	t->held += e->len;
	if (t->held > t->peak)
		t->peak = t->held;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

static void count_lost(struct stream_tap *t)
{
	pthread_mutex_lock(&t->mu);
	t->lost++;
	pthread_mutex_unlock(&t->mu);
}

void stream_tap_push(struct stream_tap *t, int stream, const char *p, size_t n)
{
	if (n == 0 || (stream != 0 && stream != 1))
		return;
	struct tap_event *e = malloc(sizeof *e + n);
	if (!e) {
		count_lost(t);
		return;
	}
	t->pushed[stream] += n; /* the reader's thread alone */
	*e = (struct tap_event){.kind = stream ? AJ_EVENT_STDERR : AJ_EVENT_STDOUT, .len = n};
	memcpy(e->data, p, n);
	enqueue(t, e);
}

void stream_tap_catch_up(struct stream_tap *t, const struct aj_result *res)
{
	if (!t)
		return;
	if (res->stdout_len > t->pushed[0])
		stream_tap_push(t, 0, res->stdout_buf + t->pushed[0], res->stdout_len - t->pushed[0]);
	if (res->stderr_len > t->pushed[1])
		stream_tap_push(t, 1, res->stderr_buf + t->pushed[1], res->stderr_len - t->pushed[1]);
}

void stream_tap_image(struct stream_tap *t, const char *name, const char *mime,
		      const void *data, size_t len)
{
	struct tap_event *e = malloc(sizeof *e + len);
	char *nm = strdup(name ? name : ""), *mm = strdup(mime ? mime : "");
	if (!e || !nm || !mm) {
		free(e), free(nm), free(mm);
		count_lost(t);
		return;
	}
	*e = (struct tap_event){.kind = AJ_EVENT_IMAGE, .len = len, .name = nm, .mime = mm};
	if (len)
		memcpy(e->data, data, len);
	enqueue(t, e);
}

bool stream_tap_over(struct stream_tap *t)
{
	pthread_mutex_lock(&t->mu);
	bool over = t->held >= t->high;
	if (over && !t->waiting) {
		/* Reset under the lock the signal is written under: no wake-up
		 * is lost, and no stale one makes the reader's poll spin. */
		uint64_t v;
		(void)!read(t->room_fd, &v, sizeof v);
		t->waiting = true;
	}
	pthread_mutex_unlock(&t->mu);
	return over;
}

int stream_tap_room_fd(const struct stream_tap *t)
{
	return t->room_fd;
}

void stream_tap_stats(struct stream_tap *t, size_t *peak, uint64_t *lost)
{
	pthread_mutex_lock(&t->mu);
	*peak = t->peak;
	*lost = t->lost;
	pthread_mutex_unlock(&t->mu);
}

void stream_tap_finish(struct stream_tap *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	t->finishing = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thread, NULL);
	close(t->room_fd);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	free(t);
}
