/* One call into a jail session (the process and container tiers): the
 * supervisor's side while the interpreter works on a request.
 *
 * The one loop (supervisor.c) with this call's hooks, over a sandbox that
 * outlives the call: write the request without ever blocking, read and
 * cap both output streams as they arrive, take the reply line whose
 * sequence number is this call's, keep the wall clock and honour a cancel. Stopping a call
 * (timeout, flood, cancel, a reply past its cap) is init's stop signal: it
 * kills every process in the sandbox but itself, so the interpreter ends,
 * init reports how, and the next call starts a fresh one in the same
 * sandbox. Only an init that does not report within the grace is killed,
 * and with it the session. */
#include <errno.h>
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
#include "stream_hooks.h"
#include "supervise.h"

/* How long init gets to stop a call and report before the session is
 * taken for broken. */
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

/* One call's supervision: the state its hooks share. */
struct jail_call {
	struct jail_session *js;
	const struct session_call *c;
	struct session_answer *ans;
	struct capture rb;
	bool replied, ended, bad_reply, acked;
};

static void on_call_report(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	struct jail_call *k = sv->ctx;
	struct outcome *o = sv->o;
	if (!(revents & POLLIN))
		return;
	struct sandbox_report r;
	while (read(src->fd, &r, sizeof r) == (ssize_t)sizeof r) {
		if (r.kind == REPORT_EXITED) {
			o->exited_report = true;
			o->report = r;
			k->ended = sv->done = true;
		} else if (r.kind == REPORT_SETUP_FAILED) {
			o->setup_failed = true;
			r.message[sizeof r.message - 1] = '\0';
			memcpy(o->setup_message, r.message, sizeof o->setup_message);
			k->ended = sv->done = true;
		}
	}
}

static void on_reply(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)revents;
	struct jail_call *k = sv->ctx;
	bool too_long = false;
	supervise_drain(src->fd, &k->rb, &too_long);
	if (session_take_reply(&k->rb, k->c->seq, k->ans, &k->acked)) {
		k->replied = sv->done = true;
	} else if (too_long) {
		k->bad_reply = true;
		supervisor_stop(sv);
	}
}

/* init itself ended: the session's sandbox is gone. */
static void on_init_gone(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)src, (void)revents;
	sv->broken = true;
}

/* Stopping a call: init's stop signal ends the interpreter and all it
 * started; init stays, and reports. */
static void stop_interpreter(struct supervisor *sv)
{
	const struct jail_call *k = sv->ctx;
	pidfd_send_signal(k->js->pidfd, STOP_SIGNAL, NULL, 0);
}

/* The call under the one supervision loop: the request into the
 * interpreter's pipe, its streams, reply and init's report out, the stop
 * init's stop signal. */
static void supervise_jail_call(struct jail_call *k, const struct aj_limits *l, struct outcome *o,
			   struct capture *out, struct capture *err, struct supervisor *sv)
{
	struct jail_session *js = k->js;
	supervisor_init(sv, o, now_ms(), l->wall_sec);
	sv->grace_ms = STOP_GRACE_MS;
	sv->cancel_fd = k->c->cancel_fd;
	sv->stream = supervisor_stream_of(k->c->tap);
	sv->out_fd[0] = js->out_r;
	sv->out_fd[1] = js->err_r;
	sv->cap[0] = out;
	sv->cap[1] = err;
	sv->src[0] = (struct supervisor_source){
		.fd = js->report_r, .while_stopping = true, .ready = on_call_report};
	/* After the streams: a flood read in the same wake-up stops the
	 * call before its reply is taken. */
	sv->src[1] = (struct supervisor_source){
		.fd = js->rep_r, .after_streams = true, .ready = on_reply};
	sv->src[2] = (struct supervisor_source){
		.fd = js->pidfd, .while_stopping = true, .after_streams = true, .ready = on_init_gone};
	sv->in_fd = js->req_w;
	sv->input = k->c->request;
	sv->input_len = k->c->len;
	sv->stop = stop_interpreter;
	/* No force: an init that does not report within the grace is killed
	 * with the session, by the caller. */
	sv->ctx = k;
	supervisor_run(sv);
}

/* The interpreter ended: how, as a run's program would have. oom_before:
 * the session cgroup's OOM kills before the call. */
static void jail_call_ended(struct jail_call *k, const struct aj_limits *l, struct outcome *o,
		       bool stopping, uint64_t oom_before, struct capture *out,
		       struct capture *err, struct aj_result *res)
{
	struct jail_session *js = k->js;
	struct session_answer *ans = k->ans;
	js->interpreter = false;
	ans->ended = true;
	/* A last look for an ack that came with its end. */
	bool ignored_overflow = false;
	supervise_drain(js->rep_r, &k->rb, &ignored_overflow);
	session_take_reply(&k->rb, k->c->seq, ans, &k->acked);
	free(ans->reply);
	ans->reply = NULL;
	ans->unread = !k->acked && !stopping;
	int64_t total = o->report.cpu_us;
	o->report.cpu_us = total - js->cpu_us_reported;
	js->cpu_us_reported = total;
	if (js->cgroup) {
		uint64_t peak_kb = 0, now = 0;
		cgroup_usage(js->cgroup, &now, &peak_kb);
		o->oom_kills = now > oom_before ? now - oom_before : 0;
		/* Counted by this end: never again for a command's. */
		js->oom_counted = now;
	}
	if (k->bad_reply)
		outcome_reply_too_long(o, k->c->reply_max);
	outcome_to_result(o, l, out, err, res);
}

void jail_session_nudge(struct jail_session *js)
{
	if (js->req_w >= 0 && write(js->req_w, "\n", 1) < 0) {
		/* Full (EAGAIN): the interpreter has requests to read anyway. */
	}
}

uint64_t jail_session_oom_kills(struct jail_session *js)
{
	uint64_t now = 0, peak_kb = 0;
	if (!js->cgroup)
		return 0;
	cgroup_usage(js->cgroup, &now, &peak_kb);
	uint64_t n = now > js->oom_counted ? now - js->oom_counted : 0;
	js->oom_counted = now;
	return n;
}

int jail_session_call(struct jail_session *js, const struct aj_limits *l,
		      const struct session_call *c, struct aj_result *res,
		      struct session_answer *ans)
{
	struct capture out, err;
	struct outcome o;
	const size_t cap = (size_t)l->output_kb * 1024;

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
		if (send_full(js->life_w, "s", 1)) {
			result_sandbox_error(res, "session: the sandbox's init is gone");
			return -EPIPE;
		}
		js->interpreter = true;
		ans->restarted = js->started_before;
		js->started_before = true;
	}
	struct jail_call k = {.js = js, .c = c, .ans = ans};
	capture_init(&out, cap);
	capture_init(&err, cap);
	capture_init(&k.rb, c->reply_max + 1);
	struct supervisor sv;
	supervise_jail_call(&k, l, &o, &out, &err, &sv);
	int rc = 0;
	if (sv.broken) {
		free(ans->reply);
		ans->reply = NULL;
		result_sandbox_error(res, "session: the sandbox %s; the session is closed",
				     sv.stopping ? "did not stop the call within 1 s"
					     : "ended (its init is gone)");
		res->wall_ms = o.wall_ms;
		rc = -EPIPE;
	} else {
		/* Everything the interpreter wrote before its reply (or its
		 * end) is in the pipes now. */
		supervisor_drain(&sv);
	}
	if (!sv.broken && k.replied) {
		if (k.ended) {
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
		replied_to_result(o.wall_ms, &out, &err, res);
	} else if (!sv.broken) {
		jail_call_ended(&k, l, &o, sv.stopping, oom_before, &out, &err, res);
	}
	capture_free(&k.rb);
	capture_free(&out);
	capture_free(&err);
	return rc;
}
