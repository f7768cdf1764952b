/* The one supervision loop (supervisor.h). */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "supervisor.h"

/* Reads per stream per wake-up: a flood cannot starve the clock check. */
#define READS_PER_WAKE 16

void supervisor_init(struct supervisor *sv, struct outcome *o, double start_ms, double wall_sec)
{
	memset(sv, 0, sizeof *sv);
	sv->o = o;
	sv->start_ms = start_ms;
	sv->deadline_ms = start_ms + wall_sec * 1000.0;
	sv->wall_ms_limit = wall_sec * 1000.0;
	sv->cancel_fd = -1;
	sv->in_fd = -1;
	sv->stream.out_room_fd = -1;
	for (int i = 0; i < 2; i++) {
		sv->out_fd[i] = -1;
		sv->stream_open[i] = true;
	}
	for (int i = 0; i < SUPERVISOR_SOURCES; i++)
		sv->src[i].fd = -1;
}

void supervisor_await_start(struct supervisor *sv, double setup_sec)
{
	sv->awaiting_start = true;
	sv->deadline_ms = sv->start_ms + setup_sec * 1000.0;
}

void supervisor_started(struct supervisor *sv)
{
	if (!sv->awaiting_start)
		return;
	sv->awaiting_start = false;
	sv->start_ms = now_ms();
	sv->deadline_ms = sv->start_ms + sv->wall_ms_limit;
}

void supervisor_stop(struct supervisor *sv)
{
	if (sv->stopping || sv->finished)
		return;
	sv->stopping = true;
	sv->stop_ms = now_ms();
	sv->kill_at = sv->stop_ms + sv->grace_ms;
	if (sv->stop)
		sv->stop(sv);
}

/* The one place the program's output bytes pass on the host. */
void supervisor_output(struct supervisor *sv, int stream, const char *p, size_t n)
{
	const struct capture *c = sv->cap[stream];
	size_t room = c->limit - c->len;
	bool over = capture_append(sv->cap[stream], p, n);
	/* The consumer sees what the result keeps, never a byte past the
	 * cap. */
	if (sv->stream.out_tap && room > 0 && n > 0)
		sv->stream.out_tap(sv->stream.tap_arg, stream, p, n < room ? n : room);
	if (!over)
		return;
	if (sv->finished) {
		/* What the pipes held at the end passed the cap. */
		sv->o->output_overflow = true;
	} else if (!sv->stopping) {
		/* Stop a flood at once instead of reading (and discarding) it
		 * until the wall clock runs out. Once stopping, output no
		 * longer decides anything. */
		sv->o->output_overflow = true;
		supervisor_stop(sv);
	}
}

bool supervisor_output_paused(struct supervisor *sv)
{
	return sv->stream.out_paused && sv->stream.out_paused(sv->stream.tap_arg);
}

/* Reads what fd has now, a bounded number of reads (a flood cannot
 * starve the clock check), handing each piece to take, which says whether
 * to read on (a paused stream takes one read at a time); false at EOF or
 * on an error. */
static bool read_now(int fd, bool (*take)(void *ctx, const char *p, size_t n), void *ctx)
{
	char buf[65536];
	for (int k = 0; k < READS_PER_WAKE; k++) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n > 0) {
			if (!take(ctx, buf, (size_t)n))
				return true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN;
	}
	return true;
}

struct stream_ref {
	struct supervisor *sv;
	int stream;
};

/* Once the run is over (the drain), a paused consumer is waited for
 * here: the pipes' last bytes are still the program's output, and the
 * queue must not grow past its bound for them. */
static void wait_for_room(struct supervisor *sv)
{
	while (supervisor_output_paused(sv)) {
		struct pollfd p = {.fd = sv->stream.out_room_fd, .events = POLLIN};
		if (sv->stream.out_room_fd < 0 || (poll(&p, 1, -1) < 0 && errno != EINTR))
			return; /* nothing to wait on: never hang */
	}
}

static bool take_output(void *ctx, const char *p, size_t n)
{
	struct stream_ref *r = ctx;
	supervisor_output(r->sv, r->stream, p, n);
	if (r->sv->finished)
		wait_for_room(r->sv);
	return !supervisor_output_paused(r->sv);
}

static bool read_capped(struct supervisor *sv, int i)
{
	struct stream_ref r = {sv, i};
	return read_now(sv->out_fd[i], take_output, &r);
}

void supervisor_drain(struct supervisor *sv)
{
	sv->finished = true;
	for (int i = 0; i < 2; i++)
		if (sv->out_fd[i] >= 0)
			read_capped(sv, i);
}

struct capture_ref {
	struct capture *c;
	bool *overflow;
};

static bool take_capture(void *ctx, const char *p, size_t n)
{
	struct capture_ref *r = ctx;
	if (capture_append(r->c, p, n))
		*r->overflow = true;
	return true;
}

bool supervise_drain(int fd, struct capture *c, bool *overflow)
{
	struct capture_ref r = {c, overflow};
	return read_now(fd, take_capture, &r);
}

static bool input_pending(struct supervisor *sv)
{
	if (sv->wants_write)
		return sv->wants_write(sv);
	return sv->input && sv->input_sent < sv->input_len && !sv->done && !sv->stopping;
}

static int write_input(struct supervisor *sv)
{
	if (sv->write)
		return sv->write(sv);
	const char *p = sv->input + sv->input_sent;
	size_t n = sv->input_len - sv->input_sent;
	ssize_t w = sv->input_is_socket ? send(sv->in_fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT)
					: write(sv->in_fd, p, n);
	if (w > 0)
		sv->input_sent += (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR)
		sv->input_sent = sv->input_len; /* the reader is gone: its end says how */
	if (sv->input_sent == sv->input_len && sv->input_end)
		sv->input_end(sv);
	return 0;
}

/* Whether the loop goes on: a run or call not over, or over with a frame
 * of the input still half sent (the stream's framing must survive). */
static bool going(struct supervisor *sv)
{
	if (sv->broken || (sv->stopping && sv->grace_ms <= 0))
		return false;
	return !sv->done || input_pending(sv);
}

/* The stop was not confirmed: the tier's harder way, again at
 * force_every_ms if the tier asks for it. */
static void force_end(struct supervisor *sv)
{
	sv->forced = true;
	sv->o->forced_kill = true;
	sv->force(sv);
	if (sv->force_every_ms > 0)
		sv->kill_at = now_ms() + sv->force_every_ms;
}

/* Whether a force is due: the first once the grace is over, then each
 * force_every_ms (when asked for). */
static bool force_due(const struct supervisor *sv, double now)
{
	if (!sv->stopping || now < sv->kill_at)
		return false;
	return !sv->forced || sv->force_every_ms > 0;
}

void supervisor_run(struct supervisor *sv)
{
	struct outcome *o = sv->o;
	double next_check = sv->check ? now_ms() + sv->check_every_ms : INFINITY;

	while (going(sv)) {
		double now = now_ms();
		if (!sv->stopping && !sv->done && now >= sv->deadline_ms) {
			if (sv->awaiting_start)
				o->setup_stalled = true; /* the program never had its time */
			else
				o->timed_out = true;
			supervisor_stop(sv);
			if (!going(sv))
				break;
		}
		if (!sv->stopping && !sv->done && now >= next_check) {
			next_check = now + sv->check_every_ms;
			if (sv->check(sv)) {
				supervisor_stop(sv);
				if (!going(sv))
					break;
			}
		}
		if (sv->stopping && sv->give_up_ms > 0 && now >= sv->stop_ms + sv->give_up_ms) {
			sv->broken = true; /* what was stopped does not end */
			break;
		}
		if (force_due(sv, now)) {
			if (!sv->force) {
				sv->broken = true; /* it would not stop */
				break;
			}
			force_end(sv);
		}
		bool repeating = sv->forced && sv->force_every_ms > 0;
		double until = sv->forced && !repeating ? INFINITY
			       : sv->stopping ? sv->kill_at
			       : sv->deadline_ms < next_check ? sv->deadline_ms
							      : next_check;
		if (sv->stopping && sv->give_up_ms > 0 && sv->stop_ms + sv->give_up_ms < until)
			until = sv->stop_ms + sv->give_up_ms;
		if (sv->done)
			until = now + sv->grace_ms; /* only finishing a frame */
		int timeout = isinf(until) ? -1 : (int)ceil(until - now);
		if (!isinf(until) && timeout < 0)
			timeout = 0;

		bool writing = input_pending(sv);
		/* The consumer is behind: leave the output where it is (the
		 * program blocks in write) until the room fd says so. */
		bool paused = !sv->stopping && supervisor_output_paused(sv);
		struct pollfd p[SUPERVISOR_SOURCES + 5];
		int ns = SUPERVISOR_SOURCES;
		for (int i = 0; i < ns; i++) {
			const struct supervisor_source *s = &sv->src[i];
			bool skip = (sv->stopping && !s->while_stopping) ||
				    (paused && s->carries_output);
			p[i] = (struct pollfd){.fd = skip ? -1 : s->fd, .events = POLLIN};
		}
		for (int i = 0; i < 2; i++)
			/* Once stopping, output no longer matters: leave the
			 * pipes alone so full ones cannot spin this loop. */
			p[ns + i] = (struct pollfd){
				.fd = sv->stream_open[i] && !sv->stopping && !paused ? sv->out_fd[i]
										     : -1,
				.events = POLLIN};
		p[ns + 2] = (struct pollfd){.fd = writing ? sv->in_fd : -1, .events = POLLOUT};
		p[ns + 3] = (struct pollfd){.fd = !sv->stopping ? sv->cancel_fd : -1,
					    .events = POLLIN};
		p[ns + 4] = (struct pollfd){.fd = paused ? sv->stream.out_room_fd : -1,
					    .events = POLLIN};
		int n = poll(p, (nfds_t)(ns + 5), timeout);
		if (n < 0 && errno != EINTR) {
			/* Cannot happen with valid fds; if it does, end the
			 * sandbox rather than run it unwatched. */
			if (!sv->poll_errno)
				sv->poll_errno = errno;
			if (sv->force && !sv->forced)
				force_end(sv);
			else if (!sv->force && sv->grace_ms <= 0)
				supervisor_stop(sv);
			else
				sv->broken = true; /* forced already: never spin on poll */
			continue;
		}
		if (n == 0 && sv->done) {
			sv->broken = true; /* a frame that could not be finished */
			break;
		}
		if (n <= 0)
			continue;
		for (int late = 0; late < 2; late++) {
			for (int i = 0; i < ns; i++)
				if (p[i].revents && sv->src[i].fd >= 0 &&
				    /* paused by this wake-up's reads */
				    !(sv->src[i].carries_output && !sv->stopping &&
				      supervisor_output_paused(sv)) &&
				    sv->src[i].after_streams == (bool)late &&
				    (!sv->stopping || sv->src[i].while_stopping))
					sv->src[i].ready(sv, &sv->src[i], p[i].revents);
			for (int i = 0; i < 2 && !late; i++)
				if (p[ns + i].revents)
					sv->stream_open[i] = read_capped(sv, i);
		}
		if (p[ns + 2].revents && write_input(sv) < 0) {
			sv->broken = true;
			break;
		}
		if ((p[ns + 3].revents & POLLIN) && !sv->stopping) {
			/* The caller withdrew the request: stop as for a
			 * timeout. */
			o->cancelled = true;
			supervisor_stop(sv);
		} else if (p[ns + 3].revents & ~POLLIN) {
			/* A cancel fd that can never be readable must not make
			 * poll spin: stop watching it. */
			sv->cancel_fd = -1;
		}
	}
	o->wall_ms = now_ms() - sv->start_ms;
}
