/* One call into a jail session (the process and container tiers): the
 * supervisor's side while the interpreter works on a request.
 *
 * The same duties as supervise.c for a run, over a sandbox that outlives
 * the call: write the request without ever blocking, read and cap both
 * output streams as they arrive, take the reply line whose sequence number
 * is this call's, keep the wall clock and honour a cancel. Stopping a call
 * (timeout, flood, cancel, a reply past its cap) is init's stop signal: it
 * kills every process in the sandbox but itself, so the interpreter ends,
 * init reports how, and the next call starts a fresh one in the same
 * sandbox. Only an init that does not report within the grace is killed,
 * and with it the session. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "cgroup.h"
#include "jail.h"
#include "session_io.h"
#include "supervise.h"

#define STOP_GRACE_MS 1000.0

/* What an earlier call's interpreter answered too late: never this call's.
 * A bounded number of reads: a thread the session left writing there must
 * not hold the caller before its clock starts (lines it keeps writing are
 * skipped by sequence number instead). */
static void discard(int fd)
{
	char buf[65536];
	for (int i = 0; i < 16 && read(fd, buf, sizeof buf) > 0; i++)
		;
}

/* Empties the request pipe through the host's non-blocking read side.
 * Bounded by what the pipe holds: no writer but the host is left. */
static void drain(int fd)
{
	char buf[65536];
	while (read(fd, buf, sizeof buf) > 0)
		;
}

int jail_session_call(struct jail_session *js, const struct aj_limits *l,
		      const struct session_call *c, struct aj_result *res,
		      struct session_answer *ans)
{
	struct capture out, err, rb;
	struct outcome o;
	const size_t cap = (size_t)l->output_kb * 1024;
	bool replied = false, ended = false, broken = false, bad_reply = false, acked = false;
	size_t sent = 0;
	double kill_at = 0;

	memset(ans, 0, sizeof *ans);
	memset(&o, 0, sizeof o);
	/* The OOM kills before the call: the call's own are the difference. */
	uint64_t oom_before = 0, peak_kb = 0;
	if (js->cgroup)
		cgroup_usage(js->cgroup, &oom_before, &peak_kb);
	struct pollfd alive = {.fd = js->pidfd, .events = POLLIN};
	if (poll(&alive, 1, 0) == 1) {
		result_sandbox_error(res, "session: the sandbox's init has ended");
		return -EPIPE;
	}
	discard(js->rep_r);
	if (!js->interpreter) {
		/* What the last interpreter left unread (a request it never
		 * took, or the rest of one) goes before the next starts: the
		 * core gives an untaken request to the fresh interpreter again
		 * (session.c, "unread"), and code must never run twice. Exact
		 * here, and only here: the last one's end was reported, so
		 * every process that could read the pipe is gone, and this
		 * call's request is not written yet. */
		drain(js->req_drain);
		if (write_full(js->life_w, "s", 1)) {
			result_sandbox_error(res, "session: the sandbox's init is gone");
			return -EPIPE;
		}
		js->interpreter = true;
		ans->restarted = js->started_before;
		js->started_before = true;
	}
	capture_init(&out, cap);
	capture_init(&err, cap);
	capture_init(&rb, c->reply_max + 1);
	const double start = now_ms();
	const double deadline = start + l->wall_sec * 1000.0;

#define STOP_CALL()                                                           \
	do {                                                                  \
		kill_at = now_ms() + STOP_GRACE_MS;                           \
		pidfd_send_signal(js->pidfd, STOP_SIGNAL, NULL, 0);           \
	} while (0)

	while (!replied && !ended && !broken) {
		double now = now_ms();
		if (!kill_at && now >= deadline) {
			o.timed_out = true;
			STOP_CALL();
		}
		if (kill_at && now >= kill_at) {
			broken = true;
			break;
		}
		double until = kill_at ? kill_at : deadline;
		int timeout = (int)ceil(until - now);
		if (timeout < 0)
			timeout = 0;
		bool writing = sent < c->len && !kill_at;
		struct pollfd p[7] = {
			{.fd = js->pidfd, .events = POLLIN},
			{.fd = js->report_r, .events = POLLIN},
			{.fd = !kill_at ? js->out_r : -1, .events = POLLIN},
			{.fd = !kill_at ? js->err_r : -1, .events = POLLIN},
			{.fd = !kill_at ? js->rep_r : -1, .events = POLLIN},
			{.fd = writing ? js->req_w : -1, .events = POLLOUT},
			{.fd = !kill_at ? c->cancel_fd : -1, .events = POLLIN},
		};
		int n = poll(p, 7, timeout);
		if (n < 0 && errno != EINTR) {
			broken = true;
			break;
		}
		if (n <= 0)
			continue;
		if (p[1].revents & POLLIN) {
			struct sandbox_report r;
			while (read(js->report_r, &r, sizeof r) == (ssize_t)sizeof r) {
				if (r.kind == REPORT_EXITED) {
					o.exited_report = true;
					o.report = r;
					ended = true;
				} else if (r.kind == REPORT_SETUP_FAILED) {
					o.setup_failed = true;
					r.message[sizeof r.message - 1] = '\0';
					memcpy(o.setup_message, r.message, sizeof o.setup_message);
					ended = true;
				}
			}
		}
		for (int i = 0; i < 2; i++) {
			if (!p[2 + i].revents)
				continue;
			bool overflow = false;
			supervise_drain(i ? js->err_r : js->out_r, i ? &err : &out, &overflow);
			if (overflow && !kill_at) {
				o.output_overflow = true;
				STOP_CALL();
			}
		}
		if (p[4].revents && !kill_at) {
			bool too_long = false;
			supervise_drain(js->rep_r, &rb, &too_long);
			if (session_take_reply(&rb, c->seq, ans, &acked))
				replied = true;
			else if (too_long) {
				bad_reply = true;
				STOP_CALL();
			}
		}
		if (p[5].revents & (POLLOUT | POLLERR | POLLHUP)) {
			ssize_t w = write(js->req_w, c->request + sent, c->len - sent);
			if (w > 0)
				sent += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				sent = c->len; /* the interpreter is gone: its report says how */
		}
		if (p[6].revents && !kill_at) {
			o.cancelled = true;
			STOP_CALL();
		}
		if (p[0].revents)
			broken = true;
	}
#undef STOP_CALL
	o.wall_ms = now_ms() - start;
	if (broken) {
		capture_free(&rb);
		capture_free(&out);
		capture_free(&err);
		free(ans->reply);
		ans->reply = NULL;
		result_sandbox_error(res, "session: the sandbox %s; the session is closed",
				     kill_at ? "did not stop the call within 1 s"
					     : "ended (its init is gone)");
		res->wall_ms = o.wall_ms;
		return -EPIPE;
	}
	/* Everything the interpreter wrote before its reply (or its end) is in
	 * the pipes now. */
	bool ignored = false;
	supervise_drain(js->out_r, &out, o.output_overflow ? &ignored : &o.output_overflow);
	supervise_drain(js->err_r, &err, o.output_overflow ? &ignored : &o.output_overflow);
	if (replied) {
		if (ended) {
			/* Its end was read in the same pass as its reply (a cell
			 * closed its request pipe, so it ended right after): the
			 * reply stands, and the next call starts a fresh
			 * interpreter and says so. The report is read once: not
			 * noted here, the next call would wait for an interpreter
			 * that is gone until its wall clock, and the session
			 * would then close as broken. */
			js->interpreter = false;
			ans->ended = true;
			if (o.exited_report)
				js->cpu_us_reported = o.report.cpu_us;
		}
		res->wall_ms = o.wall_ms;
		res->stdout_truncated = out.truncated;
		res->stderr_truncated = err.truncated;
		res->stdout_buf = capture_take(&out, &res->stdout_len);
		res->stderr_buf = capture_take(&err, &res->stderr_len);
		res->status = AJ_STATUS_OK;
		capture_free(&out);
		capture_free(&err);
		capture_free(&rb);
		return 0;
	}
	/* The interpreter ended: how, as a run's program would have. */
	js->interpreter = false;
	ans->ended = true;
	/* A last look for an ack that came with its end. */
	bool ignored_overflow = false;
	supervise_drain(js->rep_r, &rb, &ignored_overflow);
	session_take_reply(&rb, c->seq, ans, &acked);
	free(ans->reply);
	ans->reply = NULL;
	ans->unread = !acked && !kill_at;
	int64_t total = o.report.cpu_us;
	o.report.cpu_us = total - js->cpu_us_reported;
	js->cpu_us_reported = total;
	capture_free(&rb);
	if (js->cgroup) {
		cgroup_usage(js->cgroup, &o.oom_kills, &peak_kb);
		o.oom_kills = o.oom_kills > oom_before ? o.oom_kills - oom_before : 0;
	}
	outcome_to_result(&o, l, &out, &err, res);
	capture_free(&out);
	capture_free(&err);
	if (bad_reply)
		result_sandbox_error(res, "session: the interpreter's reply passed %zu bytes; the "
					  "call was stopped",
				     c->reply_max);
	return 0;
}
