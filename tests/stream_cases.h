/* The streaming cases every tier runs (docs/streaming.md; include it after
 * hostile.h, then put STREAM_TABLE in the tier's test list): output
 * reaches the stream's fn while the program still runs, the output cap and
 * a flood hold while streaming, and a consumer slower than the program
 * still gets every byte, the same bytes as the result. Nothing here names
 * a tier; every assertion is about order and state, never time. */
#ifndef AJ_TEST_STREAM_CASES_H
#define AJ_TEST_STREAM_CASES_H

#include <pthread.h>

/* What a stream's fn saw (it runs on the library's thread: it records,
 * the case asserts afterwards). */
struct stream_seen {
	pthread_mutex_t mu;
	struct fixture *f;
	char *out, *err;        /* the chunks, concatenated per stream */
	size_t out_len, err_len;
	int out_events, err_events, image_events;
	bool offsets_ok;        /* each chunk's offset = its stream's bytes before it */
	bool order_ok;          /* no chunk after an image */
	int alive_at_first;     /* the sandbox's processes at the first chunk */
	char image_name[64];    /* the last image's */
	long sleep_us;          /* per event: a slow consumer */
};

/* The case's: set up by stream_setup. */
static struct stream_seen stream_seen;

static void stream_seen_init(struct stream_seen *s, struct fixture *f)
{
	memset(s, 0, sizeof *s);
	pthread_mutex_init(&s->mu, NULL);
	s->f = f;
	s->offsets_ok = s->order_ok = true;
	s->alive_at_first = -1;
}

static void stream_seen_free(struct stream_seen *s)
{
	free(s->out);
	free(s->err);
	pthread_mutex_destroy(&s->mu);
}

static void stream_append(char **buf, size_t *len, const char *p, size_t n)
{
	char *b = realloc(*buf, *len + n + 1);
	if (!b)
		abort(); /* a test's own allocation: nothing sensible to record */
	memcpy(b + *len, p, n);
	*len += n;
	b[*len] = 0;
	*buf = b;
}

static void stream_record(void *arg, const struct aj_event *ev)
{
	struct stream_seen *s = arg;
	if (s->alive_at_first < 0 && ev->kind != AJ_EVENT_IMAGE)
		/* The program prints once more after this chunk, so its
		 * processes are there if the chunk came as it was written,
		 * gone if it came only at the run's end. */
		s->alive_at_first = sandbox_processes(s->f);
	if (s->sleep_us)
		sleep_ms((int)(s->sleep_us / 1000));
	pthread_mutex_lock(&s->mu);
	if (ev->kind == AJ_EVENT_STDOUT) {
		s->offsets_ok &= ev->offset == s->out_len;
		s->order_ok &= s->image_events == 0;
		stream_append(&s->out, &s->out_len, ev->data, ev->len);
		s->out_events++;
	} else if (ev->kind == AJ_EVENT_STDERR) {
		s->offsets_ok &= ev->offset == s->err_len;
		s->order_ok &= s->image_events == 0;
		stream_append(&s->err, &s->err_len, ev->data, ev->len);
		s->err_events++;
	} else {
		snprintf(s->image_name, sizeof s->image_name, "%s", ev->name);
		s->image_events++;
	}
	pthread_mutex_unlock(&s->mu);
}

/* Runs code with f's cfg, streaming to s (buffer_kb 0: the default); the
 * run must end with status want. */
static void stream_run(struct fixture *f, struct stream_seen *s, uint32_t buffer_kb,
		       const char *code, enum aj_status want, struct aj_result *r)
{
	struct aj_stream st = {.fn = stream_record, .arg = s, .buffer_kb = buffer_kb};
	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	if (aj_open(&f->cfg, &sb, &err))
		fail_msg("aj_open: %s", err.message);
	int rc = aj_run_streaming(sb, code, strlen(code), NULL, &st, r);
	aj_close(sb);
	assert_int_equal(rc, 0);
	assert_status(r, want);
}

/* The result's streams are exactly what the events carried; then both
 * are freed. */
static void stream_matches_result(struct stream_seen *s, struct aj_result *r)
{
	assert_true(s->offsets_ok);
	assert_true(s->order_ok);
	assert_int_equal(s->out_len, r->stdout_len);
	assert_int_equal(s->err_len, r->stderr_len);
	if (s->out_len)
		assert_memory_equal(s->out, r->stdout_buf, s->out_len);
	if (s->err_len)
		assert_memory_equal(s->err, r->stderr_buf, s->err_len);
	aj_result_free(r);
	stream_seen_free(s);
}

/* Print, sleep, print: the first line reaches fn while the program is
 * still there (it has a line left to print), the second after it, and the
 * run's result holds both, as the events did. */
static void stream_first_output_before_the_end(void **state)
{
	struct fixture *f = *state;
	struct stream_seen *s = &stream_seen;
	f->cfg.limits.wall_sec = 30;
	struct aj_result r;
	stream_run(f, s, 0,
		   "import sys, time\n"
		   "print('first', flush=True)\n"
		   "time.sleep(2)\n"
		   "print('second', file=sys.stderr, flush=True)\n"
		   "print('third')\n",
		   AJ_STATUS_OK, &r);
	assert_true(s->alive_at_first > 0);
	assert_true(s->out_events >= 2); /* "first" alone, before the sleep */
	assert_true(s->err_events >= 1); /* one write or two (print's text, then its newline) */
	assert_string_equal(r.stdout_buf, "first\nthird\n");
	assert_string_equal(r.stderr_buf, "second\n");
	stream_matches_result(s, &r);
}

/* A flood while streaming: stopped at the cap as without streaming, and
 * fn got the cap's worth, never a byte past it. A small buffer makes the
 * supervisor pause and resume on the way. */
static void stream_flood_holds_the_cap(void **state)
{
	struct fixture *f = *state;
	struct stream_seen *s = &stream_seen;
	f->cfg.limits.output_kb = 256;
	struct aj_result r;
	stream_run(f, s, 16,
		   "import sys\n"
		   "while True:\n"
		   "    sys.stdout.write('x' * 65536)\n",
		   AJ_STATUS_OUTPUT_LIMIT, &r);
	assert_true(r.stdout_truncated);
	assert_int_equal(r.stdout_len, 256 * 1024);
	stream_matches_result(s, &r);
}

/* A consumer far slower than the program (a few KiB of buffer, a pause
 * per event) still gets every byte of both streams, in order, and the
 * program is only slowed, not stopped. */
static void stream_slow_consumer_gets_everything(void **state)
{
	struct fixture *f = *state;
	struct stream_seen *s = &stream_seen;
	s->sleep_us = 2000;
	f->cfg.limits.wall_sec = 60;
	struct aj_result r;
	stream_run(f, s, 4,
		   "import sys\n"
		   "for i in range(300):\n"
		   "    sys.stdout.write('%05d' % i + 'o' * 1000 + '\\n')\n"
		   "    if i % 10 == 0:\n"
		   "        sys.stderr.write('e%d\\n' % i)\n",
		   AJ_STATUS_OK, &r);
	assert_int_equal(r.stdout_len, 300 * 1006);
	stream_matches_result(s, &r);
}

/* A session of f's tier with a 30 s wall clock per call. */
static struct aj_session *stream_session_open(struct fixture *f)
{
	f->cfg.limits.wall_sec = 30;
	struct aj_session *ss = NULL;
	struct aj_error err = {0};
	if (aj_session_open(&f->cfg, &ss, &err))
		fail_msg("aj_session_open: %s", err.message);
	return ss;
}

/* A session call streams too: its output as events, the same bytes as
 * its result; and a stream without fn is refused with words. */
static void stream_session_call(void **state)
{
	struct stream_seen *s = &stream_seen;
	struct aj_session *ss = stream_session_open(*state);
	struct aj_stream st = {.fn = stream_record, .arg = s};
	/* A new file in outputs/ is one of the call's images. */
	const char *code = "import os, sys\nprint('a' * 5000)\nprint('b', file=sys.stderr)\n"
			   "os.makedirs('outputs', exist_ok=True)\n"
			   "n = open('outputs/s.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n')\n";
	struct aj_result r;
	assert_int_equal(aj_session_run_streaming(ss, code, strlen(code), NULL, &st, &r), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_true(s->out_events >= 1);
	assert_int_equal(r.stdout_len, 5001);
	assert_int_equal(r.image_count, 1);
	assert_int_equal(s->image_events, 1); /* after the output: order_ok */
	assert_string_equal(s->image_name, "outputs/s.png");
	stream_matches_result(s, &r);
	struct aj_stream none = {0};
	assert_int_equal(aj_session_run_streaming(ss, "x", 1, NULL, &none, &r), -EINVAL);
	assert_status(&r, AJ_STATUS_SANDBOX_ERROR);
	assert_true(contains(r.message, "no fn"));
	aj_result_free(&r);
	aj_session_close(ss);
}

/* An interpreter that a cell's thread ends, printing as it goes, between
 * two calls: the next call finds it gone before it took the request, and
 * the tier reads what it printed as it ended. fn then holds exactly the
 * call's result (never the dying one's output and then a second
 * attempt's), and the code ran at most once: either a fresh interpreter
 * ran it, or the result says it did not run. */
static void stream_session_retry_is_the_result(void **state)
{
	struct stream_seen *s = &stream_seen;
	struct aj_session *ss = stream_session_open(*state);
	const char *cell1 = "import os, sys, threading, time\n"
			    "def later():\n"
			    "    time.sleep(0.2)\n"
			    "    print('dying words', flush=True)\n"
			    "    os._exit(0)\n"
			    "threading.Thread(target=later).start()\n";
	struct aj_result r;
	assert_int_equal(aj_session_run(ss, cell1, strlen(cell1), &r), 0);
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	/* Well after its end, so that the sandbox has reported it before the
	 * next call writes its request. */
	sleep_ms(1000);
	struct aj_stream st = {.fn = stream_record, .arg = s};
	const char *cell2 = "open('runs', 'a').write('x')\nprint('once')\n";
	assert_int_equal(aj_session_run_streaming(ss, cell2, strlen(cell2), NULL, &st, &r), 0);
	bool ran = contains(r.stdout_buf, "once");
	if (!ran) {
		assert_status(&r, AJ_STATUS_SANDBOX_ERROR);
		assert_true(contains(r.message, "did not run"));
	}
	stream_matches_result(s, &r);
	const char *count = "import os\n"
			    "print(len(open('runs').read()) if os.path.exists('runs') else 0)\n";
	assert_int_equal(aj_session_run(ss, count, strlen(count), &r), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, ran ? "1\n" : "0\n");
	aj_result_free(&r);
	aj_session_close(ss);
}

static int stream_setup(void **state)
{
	case_setup(state);
	stream_seen_init(&stream_seen, *state);
	return 0;
}

#define STREAM_TEST(fn) cmocka_unit_test_setup_teardown(fn, stream_setup, case_teardown)
#define STREAM_TABLE                                                                         \
	STREAM_TEST(stream_first_output_before_the_end), STREAM_TEST(stream_flood_holds_the_cap), \
	STREAM_TEST(stream_slow_consumer_gets_everything), STREAM_TEST(stream_session_call),      \
	STREAM_TEST(stream_session_retry_is_the_result)

#endif
