/* Unit tests of the streaming queue (src/core/stream_tap.c) without a
 * sandbox: the events keep their order and offsets, all are delivered
 * before finish returns, a reader that pauses while the tap says "over"
 * holds memory to the buffer and one read however slow the consumer, and
 * the room fd wakes it only once the consumer has caught up. */
#include <poll.h>
#include <pthread.h>
#include <time.h>

#include "harness.h"
#include "src/core/stream_tap.h"

#define MAX_SEEN 4096

/* What the consumer saw, in order. */
struct seen {
	int n;
	enum aj_event_kind kind[MAX_SEEN];
	uint64_t offset[MAX_SEEN];
	size_t len[MAX_SEEN];
	char first[MAX_SEEN];   /* each chunk's first byte */
	char name[64], mime[64];
	long sleep_ns;          /* per event: a slow consumer */
	/* A gate the consumer waits at until opened (over/room test). */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool gated;
	int entered;            /* events fn has started on */
};

static void seen_init(struct seen *s)
{
	memset(s, 0, sizeof *s);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
}

static void record(void *arg, const struct aj_event *ev)
{
	struct seen *s = arg;
	pthread_mutex_lock(&s->mu);
	s->entered++;
	pthread_cond_broadcast(&s->cv);
	while (s->gated)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	if (s->sleep_ns)
		nanosleep(&(struct timespec){.tv_nsec = s->sleep_ns}, NULL);
	assert_true(s->n < MAX_SEEN);
	s->kind[s->n] = ev->kind;
	s->offset[s->n] = ev->offset;
	s->len[s->n] = ev->len;
	s->first[s->n] = ev->len ? ev->data[0] : 0;
	if (ev->kind == AJ_EVENT_IMAGE) {
		snprintf(s->name, sizeof s->name, "%s", ev->name);
		snprintf(s->mime, sizeof s->mime, "%s", ev->mime);
	}
	s->n++;
}

static struct stream_tap *start(struct seen *s, uint32_t kb)
{
	struct aj_stream st = {.fn = record, .arg = s, .buffer_kb = kb};
	struct stream_tap *t = NULL;
	assert_int_equal(stream_tap_start(&st, &t), 0);
	assert_non_null(t);
	return t;
}

static void no_fn_is_refused(void **state)
{
	(void)state;
	struct aj_stream st = {0};
	struct stream_tap *t = (void *)1;
	assert_int_equal(stream_tap_start(&st, &t), -EINVAL);
	assert_null(t);
	assert_int_equal(stream_tap_start(NULL, &t), -EINVAL);
	stream_tap_finish(NULL);
}

/* Chunks of both streams in the order pushed, each stream's offsets
 * counting only its own bytes, the image last; all before finish returns
 * though the consumer is slower than the pushes. */
static void order_and_offsets_kept(void **state)
{
	(void)state;
	struct seen s;
	seen_init(&s);
	s.sleep_ns = 200000;
	struct stream_tap *t = start(&s, 0);
	char chunk[100];
	uint64_t off[2] = {0, 0};
	for (int i = 0; i < 300; i++) {
		int stream = i % 3 == 2;
		size_t n = 1 + (size_t)i % 50;
		memset(chunk, 'A' + i % 26, n);
		stream_tap_push(t, stream, chunk, n);
	}
	stream_tap_push(t, 0, chunk, 0); /* nothing: no event */
	stream_tap_image(t, "figure-1.png", "image/png", "\x89PNG", 4);
	stream_tap_finish(t);
	assert_int_equal(s.n, 301);
	for (int i = 0; i < 300; i++) {
		int stream = i % 3 == 2;
		assert_int_equal(s.kind[i], stream ? AJ_EVENT_STDERR : AJ_EVENT_STDOUT);
		assert_int_equal(s.len[i], 1 + (size_t)i % 50);
		assert_int_equal(s.first[i], 'A' + i % 26);
		assert_int_equal(s.offset[i], off[stream]);
		off[stream] += s.len[i];
	}
	assert_int_equal(s.kind[300], AJ_EVENT_IMAGE);
	assert_int_equal(s.len[300], 4);
	assert_string_equal(s.name, "figure-1.png");
	assert_string_equal(s.mime, "image/png");
}

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* A reader as the supervisor is: before each read, while the tap is
 * over, it waits on the room fd. A consumer far slower than the reader
 * never lets the queue hold more than the buffer and one read. */
static void slow_consumer_bounds_memory(void **state)
{
	(void)state;
	struct seen s;
	seen_init(&s);
	s.sleep_ns = 100000;
	struct stream_tap *t = start(&s, 4);
	char chunk[1000];
	memset(chunk, 'x', sizeof chunk);
	int pauses = 0;
	for (int i = 0; i < 200; i++) {
		while (stream_tap_over(t)) {
			pauses++;
			readable(stream_tap_room_fd(t), -1);
		}
		stream_tap_push(t, 0, chunk, sizeof chunk);
	}
	assert_true(pauses > 0);
	size_t peak;
	uint64_t lost;
	stream_tap_stats(t, &peak, &lost);
	assert_true(peak <= 4 * 1024 + sizeof chunk);
	assert_true(peak >= 4 * 1024);
	assert_int_equal(lost, 0);
	stream_tap_finish(t);
	assert_int_equal(s.n, 200);
}

/* Over at the buffer's worth; the room fd stays quiet while the consumer
 * is stuck, and wakes the reader once it has caught up (under half the
 * buffer), after which the tap is no longer over. */
static void over_then_room(void **state)
{
	(void)state;
	struct seen s;
	seen_init(&s);
	s.gated = true;
	struct stream_tap *t = start(&s, 1);
	char chunk[600];
	memset(chunk, 'y', sizeof chunk);
	stream_tap_push(t, 0, chunk, sizeof chunk);
	assert_false(stream_tap_over(t));
	stream_tap_push(t, 1, chunk, sizeof chunk); /* past the mark by one read */
	assert_true(stream_tap_over(t));
	/* The consumer holds the first chunk: still over, no room. */
	pthread_mutex_lock(&s.mu);
	while (s.entered < 1)
		pthread_cond_wait(&s.cv, &s.mu);
	pthread_mutex_unlock(&s.mu);
	assert_true(stream_tap_over(t));
	assert_false(readable(stream_tap_room_fd(t), 0));
	pthread_mutex_lock(&s.mu);
	s.gated = false;
	pthread_cond_broadcast(&s.cv);
	pthread_mutex_unlock(&s.mu);
	assert_true(readable(stream_tap_room_fd(t), 60000));
	assert_false(stream_tap_over(t));
	stream_tap_finish(t);
	assert_int_equal(s.n, 2);
}

/* What a tier did not stream (the microvm's output comes in its result)
 * is delivered after what it did, so fn always gets the whole result. */
static void catch_up_delivers_the_rest(void **state)
{
	(void)state;
	struct seen s;
	seen_init(&s);
	struct stream_tap *t = start(&s, 0);
	stream_tap_push(t, 0, "ab", 2);
	struct aj_result r = {.stdout_buf = "abcd", .stdout_len = 4, .stderr_buf = "E",
			      .stderr_len = 1};
	stream_tap_catch_up(t, &r);
	stream_tap_catch_up(t, &r); /* nothing more */
	stream_tap_finish(t);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.kind[1], AJ_EVENT_STDOUT);
	assert_int_equal(s.offset[1], 2);
	assert_int_equal(s.first[1], 'c');
	assert_int_equal(s.kind[2], AJ_EVENT_STDERR);
	assert_int_equal(s.offset[2], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_fn_is_refused),
		cmocka_unit_test(order_and_offsets_kept),
		cmocka_unit_test(slow_consumer_bounds_memory),
		cmocka_unit_test(over_then_room),
		cmocka_unit_test(catch_up_delivers_the_rest),
	};
	return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}
