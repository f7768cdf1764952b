/* Unit tests of the one supervision loop (src/linux/supervisor.c) over
 * plain pipes: no sandbox is started. Every tier's host side runs this
 * loop with its own hooks; the tier suites show each tier's ending, these
 * show the loop's rules once: a flood, the wall clock, a cancel, a stop
 * not confirmed in time (forced, once or until the end; broken; given up
 * on), the input writer, and the one place the program's output passes. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "harness.h"
#include "src/core/internal.h"
#include "src/linux/report.h"
#include "src/linux/supervisor.h"

/* What the hooks saw. */
struct probe {
	int stops, forces;
	int end_w;              /* closed by the force hook: the "sandbox" ends */
	int forces_to_end;      /* the force that closes it (0: the first) */
};

static void count_stop(struct supervisor *sv)
{
	((struct probe *)sv->ctx)->stops++;
}

static void force_end(struct supervisor *sv)
{
	struct probe *p = sv->ctx;
	if (++p->forces >= p->forces_to_end && p->end_w >= 0) {
		close(p->end_w);
		p->end_w = -1;
	}
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

/* A loop over one output pipe (the "program's stdout"), with a stop hook
 * that counts. */
struct rig {
	int out[2];
	struct capture co, ce;
	struct supervisor sv;
	struct outcome o;
	struct probe p;
};

static void rig_open(struct rig *r, size_t cap, double wall_sec)
{
	memset(r, 0, sizeof *r);
	assert_int_equal(pipe2(r->out, O_CLOEXEC | O_NONBLOCK), 0);
	capture_init(&r->co, cap);
	capture_init(&r->ce, cap);
	supervisor_init(&r->sv, &r->o, now_ms(), wall_sec);
	r->sv.out_fd[0] = r->out[0];
	r->sv.cap[0] = &r->co;
	r->sv.cap[1] = &r->ce;
	r->sv.stop = count_stop;
	r->sv.ctx = &r->p;
}

/* A sandbox that ends when the force hook closes end_w: the read end,
 * returned, is the loop's source of its end. */
static int rig_end(struct rig *r)
{
	int end[2];
	assert_int_equal(pipe2(end, O_CLOEXEC | O_NONBLOCK), 0);
	r->p.end_w = end[1];
	r->sv.src[0] = (struct supervisor_source){.fd = end[0], .while_stopping = true,
						  .ready = on_end};
	return end[0];
}

static void rig_close(struct rig *r)
{
	for (int i = 0; i < 2; i++)
		if (r->out[i] >= 0)
			close(r->out[i]);
	capture_free(&r->co);
	capture_free(&r->ce);
}

/* Output past the cap stops the sandbox once, at once, and keeps the cap's
 * worth. */
static void flood_stops_once(void **state)
{
	(void)state;
	struct rig r;
	rig_open(&r, 10000, 60);
	char chunk[4096];
	memset(chunk, 'x', sizeof chunk);
	for (int i = 0; i < 8; i++)
		assert_int_equal(write(r.out[1], chunk, sizeof chunk), (ssize_t)sizeof chunk);
	r.sv.grace_ms = 0; /* the stop ends it */
	supervisor_run(&r.sv);
	assert_true(r.o.output_overflow);
	assert_false(r.o.timed_out);
	assert_int_equal(r.p.stops, 1);
	assert_true(r.sv.stopping);
	assert_int_equal(r.co.len, 10000);
	assert_true(r.co.truncated);
	rig_close(&r);
}

/* The wall clock stops a silent sandbox; one that does not confirm the
 * stop within the grace is forced (every force_every_ms, 0: once), and the
 * loop waits for its end, which comes with force number forces_to_end. */
static void forced_to_its_end(double force_every_ms, int forces_to_end)
{
	struct rig r;
	rig_open(&r, 100, 0.05);
	int end = rig_end(&r);
	r.p.forces_to_end = forces_to_end;
	r.sv.grace_ms = 20;
	r.sv.force = force_end;
	r.sv.force_every_ms = force_every_ms;
	supervisor_run(&r.sv);
	assert_true(r.o.timed_out);
	assert_true(r.o.forced_kill);
	assert_int_equal(r.p.stops, 1);
	assert_int_equal(r.p.forces, forces_to_end);
	assert_true(r.sv.done);
	assert_false(r.sv.broken);
	close(end);
	rig_close(&r);
}

/* A setup that never finishes (clock_at_start: init never reports its
 * program started) ends at the setup deadline as a stall, never as the
 * program's timeout, however long the program's own wall clock. */
static void setup_stall_is_not_a_timeout(void **state)
{
	(void)state;
	struct rig r;
	rig_open(&r, 100, 3600);
	supervisor_await_start(&r.sv, 0.05);
	int end = rig_end(&r);
	r.sv.grace_ms = 20;
	r.sv.force = force_end;
	supervisor_run(&r.sv);
	assert_true(r.o.setup_stalled);
	assert_false(r.o.timed_out);
	assert_int_equal(r.p.stops, 1);
	assert_true(r.sv.done);
	close(end);
	rig_close(&r);
}

static void on_started(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)revents;
	supervisor_started(sv);
	src->fd = -1;
}

/* The program's wall clock starts when it starts: a setup that already
 * took a thousand seconds (far past the program's 0.05 s) is not charged
 * to it, and the program's clock then ends the run as a timeout, its
 * wall_ms counted from the start alone. */
static void wall_clock_starts_with_the_program(void **state)
{
	(void)state;
	struct rig r;
	rig_open(&r, 100, 0.05);
	r.sv.start_ms -= 1e6; /* the setup's thousand seconds */
	supervisor_await_start(&r.sv, 3600);
	int end = rig_end(&r);
	int started[2];
	assert_int_equal(pipe2(started, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(write(started[1], "s", 1), 1);
	r.sv.src[1] = (struct supervisor_source){.fd = started[0], .ready = on_started};
	r.sv.grace_ms = 20;
	r.sv.force = force_end;
	supervisor_run(&r.sv);
	assert_false(r.o.setup_stalled);
	assert_true(r.o.timed_out);
	assert_false(r.sv.awaiting_start);
	assert_true(r.o.wall_ms < 1e6);
	close(started[0]);
	close(started[1]);
	close(end);
	rig_close(&r);
}

static void timeout_then_force(void **state)
{
	(void)state;
	forced_to_its_end(0, 1);
}

/* A force that reaches only what is there as it runs (the guest's
 * kill(-1)): with force_every_ms it is repeated until the end comes. */
static void force_repeats_until_the_end(void **state)
{
	(void)state;
	forced_to_its_end(5, 3);
}

/* A stop not confirmed leaves the sandbox broken: without a force hook,
 * once the grace is over (a session's: the caller closes it); with one
 * repeated (the guest's), once give_up_ms is over, instead of holding the
 * loop forever. */
static void broken_when_not_ended(bool forcing)
{
	struct rig r;
	rig_open(&r, 100, 0.05);
	r.p.end_w = -1;
	r.sv.grace_ms = 20;
	if (forcing) {
		r.p.forces_to_end = INT_MAX; /* it never ends */
		r.sv.force = force_end;
		r.sv.force_every_ms = 5;
		r.sv.give_up_ms = 60;
	}
	supervisor_run(&r.sv);
	assert_true(r.o.timed_out);
	assert_true(r.sv.broken);
	assert_false(r.sv.done);
	assert_int_equal(r.o.forced_kill, forcing);
	assert_int_equal(r.p.stops, 1);
	rig_close(&r);
}

static void unconfirmed_stop_is_broken(void **state)
{
	(void)state;
	broken_when_not_ended(false);
}

static void give_up_ends_broken(void **state)
{
	(void)state;
	broken_when_not_ended(true);
}

/* The caller's cancel stops the sandbox as a timeout would. */
static void cancel_stops(void **state)
{
	(void)state;
	struct rig r;
	rig_open(&r, 100, 60);
	int cancel = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(cancel >= 0);
	r.sv.cancel_fd = cancel;
	supervisor_run(&r.sv);
	assert_true(r.o.cancelled);
	assert_false(r.o.timed_out);
	assert_int_equal(r.p.stops, 1);
	close(cancel);
	rig_close(&r);
}

static void close_input(struct supervisor *sv)
{
	close(sv->in_fd); /* the whole input is in: EOF ends the "sandbox" */
	sv->in_fd = -1;
}

/* The input is written whole, without blocking the loop, while the
 * program's output is read: here the output is the input, echoed through
 * one pipe three times its size. */
static void input_is_written_whole(void **state)
{
	(void)state;
	static char input[200000];
	for (size_t i = 0; i < sizeof input; i++)
		input[i] = (char)('a' + i % 26);
	struct rig r;
	rig_open(&r, sizeof input, 60);
	r.sv.in_fd = r.out[1];
	r.out[1] = -1; /* closed by the loop's input_end */
	r.sv.input = input;
	r.sv.input_len = sizeof input;
	r.sv.input_end = close_input;
	r.sv.src[0] = (struct supervisor_source){.fd = r.out[0], .after_streams = true,
						 .ready = on_output_end};
	supervisor_run(&r.sv);
	assert_int_equal(r.sv.input_sent, sizeof input);
	assert_int_equal(r.sv.in_fd, -1);
	assert_int_equal(r.co.len, sizeof input);
	assert_memory_equal(r.co.buf, input, sizeof input);
	assert_false(r.o.output_overflow);
	assert_int_equal(r.p.stops, 0);
	rig_close(&r);
}

/* Output handed over by a tier that reads it itself (frames) passes the
 * same place: capped, and a flood stops the sandbox; what the pipes hold
 * at the end counts too, without another stop. */
static void output_has_one_place(void **state)
{
	(void)state;
	struct rig r;
	rig_open(&r, 10, 60);
	supervisor_output(&r.sv, 1, "0123456789", 10);
	assert_false(r.o.output_overflow);
	supervisor_output(&r.sv, 1, "!", 1);
	assert_true(r.o.output_overflow);
	assert_int_equal(r.p.stops, 1);
	assert_int_equal(r.ce.len, 10);
	rig_close(&r);

	rig_open(&r, 10, 60);
	assert_int_equal(write(r.out[1], "0123456789abc", 13), 13);
	supervisor_drain(&r.sv);
	assert_true(r.o.output_overflow);
	assert_int_equal(r.p.stops, 0);
	assert_int_equal(r.co.len, 10);
	rig_close(&r);
}

/* A stand-in for the streaming queue: records what out_tap got, pauses
 * while told to, and wakes the loop by its room eventfd. */
struct tap {
	char got[256];
	size_t len;
	int chunks;
	atomic_bool paused;
	int room;               /* eventfd */
	int more_w;             /* on the first chunk: write "two" here, close it */
	size_t len_at_unpause;
};

static void tap_take(void *arg, int stream, const char *p, size_t n)
{
	struct tap *t = arg;
	assert_int_equal(stream, 0);
	assert_true(t->len + n <= sizeof t->got);
	memcpy(t->got + t->len, p, n);
	t->len += n;
	if (t->chunks++ == 0 && t->more_w >= 0) {
		/* The program goes on only after the first chunk reached
		 * the tap: it was handed over during the run. */
		assert_int_equal(write(t->more_w, "two", 3), 3);
		close(t->more_w);
		t->more_w = -1;
	}
}

static bool tap_paused(void *arg)
{
	return atomic_load(&((struct tap *)arg)->paused);
}

static void rig_tap(struct rig *r, struct tap *t, bool paused)
{
	memset(t, 0, sizeof *t);
	atomic_store(&t->paused, paused);
	t->more_w = -1;
	t->room = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(t->room >= 0);
	r->sv.stream.out_tap = tap_take;
	r->sv.stream.out_paused = tap_paused;
	r->sv.stream.out_room_fd = t->room;
	r->sv.stream.tap_arg = t;
}

/* Each piece reaches the tap as it is read, while the loop runs (the
 * "program" writes its second piece only once the first reached the tap),
 * and nothing past the cap, in the loop or in the drain. */
static void output_reaches_the_tap(void **state)
{
	(void)state;
	struct rig r;
	struct tap t;
	rig_open(&r, 100, 60);
	rig_tap(&r, &t, false);
	t.more_w = r.out[1];
	r.out[1] = -1;
	assert_int_equal(write(t.more_w, "one", 3), 3);
	r.sv.src[0] = (struct supervisor_source){.fd = r.out[0], .after_streams = true,
						 .ready = on_output_end};
	supervisor_run(&r.sv);
	assert_int_equal(t.chunks, 2);
	assert_int_equal(t.len, 6);
	assert_memory_equal(t.got, "onetwo", 6);
	assert_int_equal(r.co.len, 6);
	rig_close(&r);
	close(t.room);

	rig_open(&r, 10, 60);
	rig_tap(&r, &t, false);
	supervisor_output(&r.sv, 0, "01234", 5);
	supervisor_output(&r.sv, 0, "56789abc", 8);
	supervisor_output(&r.sv, 0, "d", 1);
	assert_true(r.o.output_overflow);
	assert_int_equal(t.len, 10);
	assert_memory_equal(t.got, "0123456789", 10);
	rig_close(&r);
	close(t.room);

	rig_open(&r, 10, 60);
	rig_tap(&r, &t, false);
	assert_int_equal(write(r.out[1], "0123456789abc", 13), 13);
	supervisor_drain(&r.sv);
	assert_int_equal(t.len, 10);
	assert_memory_equal(t.got, "0123456789", 10);
	rig_close(&r);
	close(t.room);
}

/* Unpauses the tap a while after the loop began, noting what it had got
 * by then, and wakes the loop by the room fd alone. */
static void *unpause_later(void *arg)
{
	struct tap *t = arg;
	nanosleep(&(struct timespec){.tv_nsec = 200 * 1000000L}, NULL);
	t->len_at_unpause = t->len;
	atomic_store(&t->paused, false);
	uint64_t one = 1;
	assert_int_equal(write(t->room, &one, sizeof one), (ssize_t)sizeof one);
	return NULL;
}

/* While paused, neither the output pipe nor a source that carries output
 * is read; the room fd resumes the loop (the wall clock, 30 s, would end
 * it otherwise, timed out). */
static void paused_until_room(void **state)
{
	(void)state;
	struct rig r;
	struct tap t;
	rig_open(&r, 100, 30);
	rig_tap(&r, &t, true);
	assert_int_equal(write(r.out[1], "abc", 3), 3);
	close(r.out[1]);
	r.out[1] = -1;
	r.sv.src[0] = (struct supervisor_source){.fd = r.out[0], .after_streams = true,
						 .carries_output = true, .ready = on_output_end};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, unpause_later, &t), 0);
	supervisor_run(&r.sv);
	pthread_join(th, NULL);
	assert_false(r.o.timed_out);
	assert_true(r.sv.done);
	assert_int_equal(t.len_at_unpause, 0);
	assert_int_equal(t.len, 3);
	assert_memory_equal(t.got, "abc", 3);
	rig_close(&r);
	close(t.room);
}

static void count_ready(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)src, (void)revents;
	((struct probe *)sv->ctx)->forces++;
}

/* A consumer that never catches up does not hold the run past its wall
 * clock, and nothing is read meanwhile. */
static void wall_clock_ends_a_paused_run(void **state)
{
	(void)state;
	struct rig r;
	struct tap t;
	rig_open(&r, 100, 0.2);
	rig_tap(&r, &t, true);
	int frames[2];
	assert_int_equal(pipe2(frames, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(write(frames[1], "frame", 5), 5);
	assert_int_equal(write(r.out[1], "abc", 3), 3);
	r.sv.src[0] = (struct supervisor_source){.fd = frames[0], .carries_output = true,
						 .ready = count_ready};
	r.sv.grace_ms = 0;
	supervisor_run(&r.sv);
	assert_true(r.o.timed_out);
	assert_int_equal(r.p.stops, 1);
	assert_int_equal(r.p.forces, 0);
	assert_int_equal(t.len, 0);
	assert_int_equal(r.co.len, 0);
	close(frames[0]);
	close(frames[1]);
	rig_close(&r);
	close(t.room);
}

/* boot.py's exit line, as docker runs and boot sessions read it. */
static void exit_line_is_parsed_strictly(void **state)
{
	(void)state;
	struct sandbox_report r;
	assert_true(report_parse_exited("256 1500 2048 0", 0, &r));
	assert_int_equal(r.kind, REPORT_EXITED);
	assert_int_equal(r.wstatus, 256);
	assert_int_equal(r.cpu_us, 1500);
	assert_int_equal(r.maxrss_kb, 2048);
	assert_int_equal(r.flags, 0);
	assert_true(report_parse_exited("9 0 0 0\n", '\n', &r));
	assert_int_equal(r.wstatus, 9);
	/* The launcher's verdict pipe, as the last number (MEMERR). */
	assert_true(report_parse_exited("256 0 0 1\n", '\n', &r));
	assert_int_equal(r.flags, REPORT_MEMORY_ERROR);
	assert_false(report_parse_exited("256 0 0 2\n", '\n', &r));
	assert_false(report_parse_exited("256 0 0\n", '\n', &r));
	assert_false(report_parse_exited("9 0 0 0\n", 0, &r));
	assert_false(report_parse_exited("9 0 0 0", '\n', &r));
	assert_false(report_parse_exited("9 0 0 0 x", 0, &r));
	assert_false(report_parse_exited("9 -1 0 0", 0, &r));
	assert_false(report_parse_exited("9 0", 0, &r));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flood_stops_once),
		cmocka_unit_test(timeout_then_force),
		cmocka_unit_test(setup_stall_is_not_a_timeout),
		cmocka_unit_test(wall_clock_starts_with_the_program),
		cmocka_unit_test(unconfirmed_stop_is_broken),
		cmocka_unit_test(force_repeats_until_the_end),
		cmocka_unit_test(give_up_ends_broken),
		cmocka_unit_test(cancel_stops),
		cmocka_unit_test(input_is_written_whole),
		cmocka_unit_test(output_has_one_place),
		cmocka_unit_test(output_reaches_the_tap),
		cmocka_unit_test(paused_until_room),
		cmocka_unit_test(wall_clock_ends_a_paused_run),
		cmocka_unit_test(exit_line_is_parsed_strictly),
	};
	return cmocka_run_group_tests_name("supervisor", tests, NULL, NULL);
}
