/* Unit tests of the one supervision loop (src/linux/supervisor.c) over
 * plain pipes: no sandbox is started. Every tier's host side runs this
 * loop with its own hooks; the tier suites show each tier's ending, these
 * show the loop's rules once: a flood, the wall clock, a cancel, a stop
 * not confirmed in time (forced, or broken), the input writer, and the
 * one place the program's output passes. */
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "harness.h"
#include "src/core/internal.h"
#include "src/linux/report.h"
#include "src/linux/supervisor.h"

/* What the hooks saw. */
struct probe {
	int stops, forces;
	int end_w;              /* written by the force hook: the "sandbox" ends */
	int in_w;               /* the input's pipe */
	const char *input;
	size_t input_len, sent;
};

static void count_stop(struct supervisor *sv)
{
	((struct probe *)sv->ctx)->stops++;
}

static void force_end(struct supervisor *sv)
{
	struct probe *p = sv->ctx;
	p->forces++;
	close(p->end_w);
	p->end_w = -1;
}

static void on_end(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)src, (void)revents;
	sv->done = true;
}

/* Ready in the same wake-up as the stream it watches: done once that
 * stream has reached its end. */
static void on_output_end(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)src, (void)revents;
	if (!sv->stream_open[0])
		sv->done = true;
}

static void nonblocking_pipe(int fds[2])
{
	assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
}

/* A loop over one output pipe, a 1 s wall clock unless the test says. */
static void setup(struct supervisor *sv, struct outcome *o, struct probe *p,
		  struct capture *out, struct capture *err, int out_r, double wall_sec)
{
	memset(o, 0, sizeof *o);
	supervisor_init(sv, o, now_ms(), wall_sec);
	sv->out_fd[0] = out_r;
	sv->cap[0] = out;
	sv->cap[1] = err;
	sv->stop = count_stop;
	sv->ctx = p;
}

/* Output past the cap stops the sandbox once, at once, and keeps the cap's
 * worth. */
static void flood_stops_once(void **state)
{
	(void)state;
	int fds[2];
	nonblocking_pipe(fds);
	char chunk[4096];
	memset(chunk, 'x', sizeof chunk);
	for (int i = 0; i < 8; i++)
		assert_int_equal(write(fds[1], chunk, sizeof chunk), (ssize_t)sizeof chunk);
	struct capture out, err;
	capture_init(&out, 10000);
	capture_init(&err, 10000);
	struct supervisor sv;
	struct outcome o;
	struct probe p = {0};
	setup(&sv, &o, &p, &out, &err, fds[0], 60);
	sv.grace_ms = 0; /* the stop ends it */
	supervisor_run(&sv);
	assert_true(o.output_overflow);
	assert_false(o.timed_out);
	assert_int_equal(p.stops, 1);
	assert_true(sv.stopping);
	assert_int_equal(out.len, 10000);
	assert_true(out.truncated);
	close(fds[0]);
	close(fds[1]);
	capture_free(&out);
	capture_free(&err);
}

/* The wall clock stops a silent sandbox; one that does not confirm the
 * stop within the grace is forced, and the loop waits for its end. */
static void timeout_then_force(void **state)
{
	(void)state;
	int out[2], end[2];
	nonblocking_pipe(out);
	nonblocking_pipe(end);
	struct capture co, ce;
	capture_init(&co, 100);
	capture_init(&ce, 100);
	struct supervisor sv;
	struct outcome o;
	struct probe p = {.end_w = end[1]};
	setup(&sv, &o, &p, &co, &ce, out[0], 0.05);
	sv.grace_ms = 20;
	sv.force = force_end;
	sv.src[0] = (struct supervisor_source){.fd = end[0], .while_stopping = true,
					       .ready = on_end};
	supervisor_run(&sv);
	assert_true(o.timed_out);
	assert_true(o.forced_kill);
	assert_int_equal(p.stops, 1);
	assert_int_equal(p.forces, 1);
	assert_true(sv.done);
	assert_false(sv.broken);
	close(out[0]);
	close(out[1]);
	close(end[0]);
	capture_free(&co);
	capture_free(&ce);
}

/* Without a force hook, a stop not confirmed within the grace leaves the
 * sandbox broken (a session's: the caller closes it). */
static void unconfirmed_stop_is_broken(void **state)
{
	(void)state;
	int out[2];
	nonblocking_pipe(out);
	struct capture co, ce;
	capture_init(&co, 100);
	capture_init(&ce, 100);
	struct supervisor sv;
	struct outcome o;
	struct probe p = {0};
	setup(&sv, &o, &p, &co, &ce, out[0], 0.05);
	sv.grace_ms = 20;
	supervisor_run(&sv);
	assert_true(o.timed_out);
	assert_true(sv.broken);
	assert_false(o.forced_kill);
	assert_int_equal(p.stops, 1);
	close(out[0]);
	close(out[1]);
	capture_free(&co);
	capture_free(&ce);
}

/* The caller's cancel stops the sandbox as a timeout would. */
static void cancel_stops(void **state)
{
	(void)state;
	int out[2];
	nonblocking_pipe(out);
	int cancel = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(cancel >= 0);
	struct capture co, ce;
	capture_init(&co, 100);
	capture_init(&ce, 100);
	struct supervisor sv;
	struct outcome o;
	struct probe p = {0};
	setup(&sv, &o, &p, &co, &ce, out[0], 60);
	sv.cancel_fd = cancel;
	supervisor_run(&sv);
	assert_true(o.cancelled);
	assert_false(o.timed_out);
	assert_int_equal(p.stops, 1);
	close(cancel);
	close(out[0]);
	close(out[1]);
	capture_free(&co);
	capture_free(&ce);
}

static bool probe_wants_write(struct supervisor *sv)
{
	const struct probe *p = sv->ctx;
	return p->sent < p->input_len && !sv->done;
}

static int probe_write(struct supervisor *sv)
{
	struct probe *p = sv->ctx;
	ssize_t w = write(p->in_w, p->input + p->sent, p->input_len - p->sent);
	if (w > 0)
		p->sent += (size_t)w;
	if (p->sent == p->input_len) {
		close(p->in_w); /* the whole input is in: EOF ends the "sandbox" */
		p->in_w = sv->in_fd = -1;
	}
	return 0;
}

/* The input is written whole, without blocking the loop, while the
 * program's output is read: here the output is the input, echoed. */
static void input_is_written_whole(void **state)
{
	(void)state;
	int in[2];
	nonblocking_pipe(in);
	static char input[200000];
	for (size_t i = 0; i < sizeof input; i++)
		input[i] = (char)('a' + i % 26);
	struct capture co, ce;
	capture_init(&co, sizeof input);
	capture_init(&ce, 100);
	struct supervisor sv;
	struct outcome o;
	struct probe p = {.in_w = in[1], .input = input, .input_len = sizeof input};
	setup(&sv, &o, &p, &co, &ce, in[0], 60);
	sv.in_fd = in[1];
	sv.wants_write = probe_wants_write;
	sv.write = probe_write;
	/* The output pipe's end is the sandbox's. */
	sv.src[0] = (struct supervisor_source){.fd = in[0], .after_streams = true,
					       .ready = on_output_end};
	supervisor_run(&sv);
	assert_int_equal(p.sent, sizeof input);
	assert_int_equal(co.len, sizeof input);
	assert_memory_equal(co.buf, input, sizeof input);
	assert_false(o.output_overflow);
	assert_int_equal(p.stops, 0);
	close(in[0]);
	capture_free(&co);
	capture_free(&ce);
}

/* Output handed over by a tier that reads it itself (frames) passes the
 * same place: capped, and a flood stops the sandbox; what the pipes hold
 * at the end counts too, without another stop. */
static void output_has_one_place(void **state)
{
	(void)state;
	struct capture co, ce;
	capture_init(&co, 10);
	capture_init(&ce, 10);
	struct supervisor sv;
	struct outcome o;
	struct probe p = {0};
	setup(&sv, &o, &p, &co, &ce, -1, 60);
	supervisor_output(&sv, 1, "0123456789", 10);
	assert_false(o.output_overflow);
	supervisor_output(&sv, 1, "!", 1);
	assert_true(o.output_overflow);
	assert_int_equal(p.stops, 1);
	assert_int_equal(ce.len, 10);

	int fds[2];
	nonblocking_pipe(fds);
	struct outcome o2;
	struct probe p2 = {0};
	setup(&sv, &o2, &p2, &co, &ce, fds[0], 60);
	co.len = 0;
	co.truncated = false;
	assert_int_equal(write(fds[1], "0123456789abc", 13), 13);
	supervisor_drain(&sv);
	assert_true(o2.output_overflow);
	assert_int_equal(p2.stops, 0);
	assert_int_equal(co.len, 10);
	close(fds[0]);
	close(fds[1]);
	capture_free(&co);
	capture_free(&ce);
}

/* boot.py's exit line, as docker runs and boot sessions read it. */
static void exit_line_is_parsed_strictly(void **state)
{
	(void)state;
	struct sandbox_report r;
	assert_true(report_parse_exited("256 1500 2048", 0, &r));
	assert_int_equal(r.kind, REPORT_EXITED);
	assert_int_equal(r.wstatus, 256);
	assert_int_equal(r.cpu_us, 1500);
	assert_int_equal(r.maxrss_kb, 2048);
	assert_true(report_parse_exited("9 0 0\n", '\n', &r));
	assert_int_equal(r.wstatus, 9);
	assert_false(report_parse_exited("9 0 0\n", 0, &r));
	assert_false(report_parse_exited("9 0 0", '\n', &r));
	assert_false(report_parse_exited("9 0 0 x", 0, &r));
	assert_false(report_parse_exited("9 -1 0", 0, &r));
	assert_false(report_parse_exited("9 0", 0, &r));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flood_stops_once),
		cmocka_unit_test(timeout_then_force),
		cmocka_unit_test(unconfirmed_stop_is_broken),
		cmocka_unit_test(cancel_stops),
		cmocka_unit_test(input_is_written_whole),
		cmocka_unit_test(output_has_one_place),
		cmocka_unit_test(exit_line_is_parsed_strictly),
	};
	return cmocka_run_group_tests_name("supervisor", tests, NULL, NULL);
}
