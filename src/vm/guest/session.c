/* The guest's side of a session: one interpreter kept alive across calls.
 *
 * Theory of operation
 * -------------------
 * A session's VM gets VM_SESSION_START instead of VM_RUN. The agent (PID 1)
 * then, once: refreshes the clock and the entropy of this restored copy,
 * mounts the session's one /tmp (the disk limit; files live as long as the
 * session), sets the run cgroup's limits (memory and pids bound the session
 * as a whole), and starts the session interpreter. The zygote is not used:
 * it can become one program, not a long-lived interpreter with two more
 * pipes, and agent.c has already ended it (zygote.c zygote_end).
 *
 * The interpreter is `python3 -I -u -c <repl.py>` (the source comes from
 * the host in VM_SESSION_START), forked by the agent and so its child: its
 * wait status comes from the kernel. Before execve the child takes exactly
 * the steps zygote.py takes for a run, in the same order: joins the run
 * cgroup, applies the rlimits (the hard CPU limit is the session's total;
 * repl.py moves the soft one to each call's share), drops to uid/gid 1000
 * with no groups, sets the umask, enters the workspace, and loads the same
 * seccomp policy. Its fds: 0 /dev/null, 1 and 2 the output pipes, 3 the
 * requests, 4 the replies; the agent holds the other ends. A step that fails
 * is written on a close-on-exec pipe, so the agent knows before any request
 * that the interpreter never ran, and the call says which protection and why.
 *
 * Each VM_CALL: start an interpreter if none is running (the call is then
 * flagged restarted, past the first), write the request line without ever
 * blocking, read and cap both output streams, take the reply line that
 * starts with this call's sequence number, and keep the call's wall clock.
 * A timeout, a flood, a reply past its cap or a VM_CALL_STOP from the host
 * (a cancel) kills every process in the VM but the agent (kill(-1) from
 * PID 1: a setsid() double fork escapes nothing), and so the interpreter.
 * When the interpreter ends, for that reason or its own (a crash, os._exit,
 * the OOM killer, SIGXCPU), whatever it left is killed too, everything is
 * reaped, and the call's VM_CALL_RESULT carries the wait status and usage;
 * the host reads them with the same rules as the jail tiers. Processes the
 * interpreter leaves running after a reply live on, as they would in the
 * jail tiers' sessions, inside the same cgroup and limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../../include/agentjail.h"
#include "../../core/contract.h"
#include "../../core/session_call.h"
#include "agent.h"

/* How long the processes may take to die after SIGKILL before the agent
 * gives up on the session (the host then destroys the VM). */
#define STOP_GIVE_UP_MS 2000

struct session {
	struct vm_session_start lim;
	char *repl;
	char *env;              /* the deployer's variables, lines (frame.c) */
	int sigfd;
	pid_t pid;              /* the interpreter; 0 when none runs */
	int req_w, rep_r, out_r, err_r;
	bool started_before;
	uint64_t cpu_reported_us;
	uint64_t oom_reported;
};

/* ---- the interpreter's start: the child's steps, in order ---- */

/* In the child: says which step failed on the error pipe, and ends. */
__attribute__((noreturn)) static void child_fail(int errp, const char *step, int err)
{
	dprintf(errp, "%s: %s", step, errname(err));
	_exit(127);
}

static int child_limit(const struct contract_rlimit *row, uint64_t soft, uint64_t hard,
		       void *errp)
{
	struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
	if (setrlimit(row->resource, &rl) < 0) {
		int err = errno;
		char step[48];
		snprintf(step, sizeof step, "rlimit %s", row->word);
		child_fail(*(int *)errp, step, err);
	}
	return 0;
}

/* The rlimit table every tier reads (rule E2). No address space row: the
 * run cgroup bounds the session's memory; uid 1000 is the session's own
 * (nothing else in the VM runs as it). CPU: the hard limit is the
 * session's total, set here from outside; repl.py moves the soft one
 * (SIGXCPU) to each call's share and cannot raise the hard one. */
static void child_limits(int errp, const struct vm_session_start *s)
{
	const struct aj_limits l = {.cpu_sec = s->cpu_sec, .memory_mb = s->memory_mb,
				    .pids = s->pids, .file_size_mb = s->file_size_mb,
				    .open_files = s->open_files};
	contract_rlimits_each(&l, false, true, child_limit, &errp);
}

__attribute__((noreturn)) static void child_main(const struct session *s, int errp,
						 const int fds[5])
{
	const struct vm_session_start *l = &s->lim;
	/* Clear of 0..4, which the dup2s below take. */
	int moved = fcntl(errp, F_DUPFD_CLOEXEC, 32);
	if (moved >= 0)
		errp = moved;
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* exec keeps the mask */
	signal(SIGPIPE, SIG_DFL);
	/* Into the run cgroup first, as root (cgroup.procs is root's): from
	 * here every process of the session counts against memory and pids. */
	int rc = run_cgroup_join();
	if (rc)
		child_fail(errp, "cgroup join", -rc);
	child_limits(errp, l);
	/* Groups, gid, uid, all three ids each: leaving uid 0 clears every
	 * capability, and nothing on the image's disk (mounted nosuid, its
	 * setuid bits cleared at build) regains one. */
	if (setgroups(0, NULL) < 0)
		child_fail(errp, "setgroups", errno);
	if (setresgid(VM_GUEST_UID, VM_GUEST_UID, VM_GUEST_UID) < 0)
		child_fail(errp, "setresgid", errno);
	if (setresuid(VM_GUEST_UID, VM_GUEST_UID, VM_GUEST_UID) < 0)
		child_fail(errp, "setresuid", errno);
	umask(022);
	if (chdir(WORKSPACE) < 0)
		child_fail(errp, "chdir " WORKSPACE, errno);
	/* fds 0..4 as repl.py expects them. Every other fd of the agent's
	 * (the port above all) is close-on-exec. */
	int keep[5];
	for (int i = 0; i < 5; i++)
		if ((keep[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 16)) < 0)
			child_fail(errp, "fds", errno);
	for (int i = 0; i < 5; i++)
		if (dup2(keep[i], i) < 0)
			child_fail(errp, "fds", errno);
	/* The same seccomp policy as every run, last, so the steps above are
	 * not limited by it. */
	if (apply_policy() < 0)
		child_fail(errp, "seccomp", errno);
	char *const argv[] = {PYTHON, "-I", "-u", "-c", s->repl, NULL};
	/* From nothing: what the other tiers' interpreters get (rule E1),
	 * with the proxy's rows when the session carries egress. */
	char *env[CONTRACT_ENVIRONMENT_MAX + 1];
	egress_environment(l->egress != 0, s->env, env);
	execve(argv[0], argv, env);
	child_fail(errp, "exec " PYTHON, errno);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int start_interpreter(struct session *s, struct failure *f)
{
	int req[2] = {-1, -1}, rep[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1},
	    errp[2] = {-1, -1};
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int rc = 0;
	if (null < 0 || pipe2(req, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = fail(f, errno, "session interpreter: pipes");
		goto out;
	}
	pid_t pid = fork();
	if (pid < 0) {
		rc = fail(f, errno, "session interpreter: fork");
		goto out;
	}
	if (pid == 0) {
		const int fds[5] = {null, out[1], err[1], req[0], rep[1]};
		child_main(s, errp[1], fds);
	}
	close_fd(&errp[1]);
	/* EOF once execve succeeded (the pipe is close-on-exec); the reason
	 * otherwise. A short wait: the child only takes local steps. */
	char why[200];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof why - 1 &&
	       ((n = read(errp[0], why + got, sizeof why - 1 - got)) > 0 || (n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	why[got] = '\0';
	if (got > 0) {
		waitpid(pid, NULL, 0);
		rc = fail(f, 0, "session interpreter: %s", why);
		goto out;
	}
	s->pid = pid;
	s->req_w = req[1];
	s->rep_r = rep[0];
	s->out_r = out[0];
	s->err_r = err[0];
	req[1] = rep[0] = out[0] = err[0] = -1;
	fcntl(s->req_w, F_SETFL, O_NONBLOCK);
	fcntl(s->rep_r, F_SETFL, O_NONBLOCK);
	fcntl(s->out_r, F_SETFL, O_NONBLOCK);
	fcntl(s->err_r, F_SETFL, O_NONBLOCK);
out:
	for (int i = 0; i < 2; i++) {
		close_fd(&req[i]);
		close_fd(&rep[i]);
		close_fd(&out[i]);
		close_fd(&err[i]);
		close_fd(&errp[i]);
	}
	if (null >= 0)
		close(null);
	return rc;
}

/* ---- one call ---- */

struct call {
	struct session *s;
	struct vm_call req;
	char *request;
	struct capture out, err, rep;
	struct watch w;         /* its clock, its caps, its input, its stop */
	bool replied, ended, broken;
	bool cancelled, bad_reply, setup_failed, restarted;
	bool acked;             /* the interpreter took the request: it may have run */
	bool clock_started;     /* from the ack, the call's own wall clock */
	int wstatus;
	struct session_answer ans;      /* the reply line, once taken */
	struct failure why;
};

/* Reaps what has ended; notes the interpreter's status. */
static void reap_call(struct watch *w)
{
	struct call *c = w->owner;
	int st;
	pid_t p;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == c->s->pid) {
			c->ended = true;
			c->wstatus = st;
			c->s->pid = 0;
		}
	}
}

/* The reply stream's whole lines, read as every host tier reads them. */
static void take_reply(struct call *c)
{
	if (session_take_reply(&c->rep, c->req.seq, &c->ans, &c->acked))
		c->replied = true;
}

/* A frame from the host during a call: a stop, whatever its type (the host
 * sends nothing else while it waits). */
static void host_ready(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	struct watch *w = sv->ctx;
	struct call *c = w->owner;
	if (!(revents & POLLIN)) {
		src->fd = -1; /* no host connected: nothing to hear */
		return;
	}
	struct vm_frame_header h;
	if (port_read(&h, sizeof h) || skip_frame(port_read, &h)) {
		src->fd = -1;
		return;
	}
	c->cancelled = true;
	watch_stop(w);
}

/* Until the interpreter takes the request, its start has its own
 * allowance; from the ack, the call has its wall clock. */
static void start_clock(struct call *c)
{
	if (c->acked && !c->clock_started) {
		c->clock_started = true;
		c->w.held = false;
		c->w.sv.deadline_ms = now_ms() + (double)c->req.wall_ms;
	}
}

static void reply_ready(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	struct watch *w = sv->ctx;
	struct call *c = w->owner;
	(void)revents;
	bool too_long = false;
	if (!supervise_drain(src->fd, &c->rep, &too_long))
		src->fd = -1; /* at EOF: polled no more */
	take_reply(c);
	start_clock(c);
	if (!c->replied && too_long) {
		c->bad_reply = true;
		watch_stop(w);
	}
	watch_settle(w);
}

static bool call_over(struct watch *w)
{
	const struct call *c = w->owner;
	return c->replied || c->ended;
}

static const struct watch_hooks call_hooks = {
	.reap = reap_call,
	.over = call_over,
};

/* The loop over one call: the interpreter's output streams, the request
 * written as it takes it, the host's port (a stop) and the reply pipe,
 * neither heard once stopping. The reply comes after the output streams:
 * what the interpreter printed before its reply is read first. */
static void watch_call(struct session *s, struct call *c)
{
	struct watch *w = &c->w;
	watch_init(w, &call_hooks, c, s->sigfd, now_ms(),
		   (double)c->req.wall_ms + VM_SESSION_START_MS, STOP_GIVE_UP_MS);
	c->clock_started = false;
	w->seq = c->req.seq; /* in each VM_OUTPUT: a late one is refused */
	/* Until the interpreter takes the request, what it prints may be a
	 * dying one's, whose call is retried with a fresh one and its output
	 * dropped: none of it is sent before the ack. */
	w->held = true;
	w->sv.out_fd[0] = s->out_r;
	w->sv.out_fd[1] = s->err_r;
	w->sv.cap[0] = &c->out;
	w->sv.cap[1] = &c->err;
	w->sv.in_fd = s->req_w;
	w->sv.input = c->request;
	w->sv.input_len = c->req.request_len;
	w->sv.src[0] = (struct supervisor_source){.fd = port_fd, .ready = host_ready};
	w->sv.src[1] = (struct supervisor_source){.fd = s->rep_r, .after_streams = true,
						  .ready = reply_ready};
	watch_program(w);
	if (w->sv.broken) {
		c->broken = true;
		fail(&c->why, 0, "the session's processes did not end within %d ms of SIGKILL",
		     STOP_GIVE_UP_MS);
	}
}

/* The interpreter has ended: so does all it left, before the report. Once
 * nothing but the agent is left, no write end of the pipes is open and the
 * last reads end. */
static void finish_interpreter(struct session *s, struct call *c)
{
	if (watch_end_all(&c->w, STOP_GIVE_UP_MS)) {
		c->broken = true;
		fail(&c->why, 0, "the session's processes did not end within %d ms of SIGKILL",
		     STOP_GIVE_UP_MS);
		return;
	}
	bool ignored = false;
	bool *overflow = c->w.o.output_overflow ? &ignored : &c->w.o.output_overflow;
	for (int i = 0; i < 64 && supervise_drain(s->out_r, &c->out, overflow); i++)
		;
	for (int i = 0; i < 64 && supervise_drain(s->err_r, &c->err, overflow); i++)
		;
	close_fd(&s->req_w);
	close_fd(&s->rep_r);
	close_fd(&s->out_r);
	close_fd(&s->err_r);
}

static void send_call_result(struct session *s, struct call *c)
{
	/* Every byte of output before the result that counts them. */
	c->w.held = false;
	watch_flush(&c->w);
	struct vm_call_result r;
	memset(&r, 0, sizeof r);
	r.flags = (c->replied ? VM_CALL_REPLIED : 0) | (c->ended ? VM_CALL_ENDED : 0) |
		  (c->restarted ? VM_CALL_RESTARTED : 0) | (c->w.o.timed_out ? VM_CALL_TIMED_OUT : 0) |
		  (c->w.o.output_overflow ? VM_CALL_OVERFLOW : 0) | (c->cancelled ? VM_CALL_CANCELLED : 0) |
		  (c->bad_reply ? VM_CALL_BAD_REPLY : 0) |
		  (c->setup_failed ? VM_CALL_SETUP_FAILED : 0) | (c->broken ? VM_CALL_BROKEN : 0) |
		  (c->out.truncated ? VM_STDOUT_TRUNCATED : 0) |
		  (c->err.truncated ? VM_STDERR_TRUNCATED : 0);
	r.wstatus = c->wstatus;
	if (c->ended) {
		/* The whole cgroup's CPU since the last report: the interpreter,
		 * its children, killed ones included. */
		uint64_t cpu = run_cgroup_value("cpu.stat", "usage_usec");
		r.cpu_us = cpu > s->cpu_reported_us ? cpu - s->cpu_reported_us : 0;
		s->cpu_reported_us = cpu;
		r.memory_kb = run_cgroup_value("memory.peak", NULL) / 1024;
	}
	uint64_t ooms = run_cgroup_value("memory.events", "oom_kill");
	r.oom_kills = ooms > s->oom_reported ? ooms - s->oom_reported : 0;
	s->oom_reported = ooms;
	const char *message = c->setup_failed || c->broken ? c->why.message : "";
	r.stdout_len = (uint32_t)c->out.len;
	r.stderr_len = (uint32_t)c->err.len;
	r.reply_len = c->replied ? (uint32_t)c->ans.reply_len : 0;
	r.message_len = (uint32_t)strlen(message);
	struct iovec parts[3] = {
		{.iov_base = &r, .iov_len = sizeof r},
		{.iov_base = c->ans.reply, .iov_len = r.reply_len},
		{.iov_base = (void *)message, .iov_len = r.message_len},
	};
	int rc = send_frame(VM_CALL_RESULT, parts, 3);
	if (rc)
		fprintf(stderr, "agentjail-guest: send VM_CALL_RESULT: %s\n", errname(-rc));
}

/* One VM_CALL (its header read): returns false when the session cannot go
 * on (the host destroys the VM on the result's VM_CALL_BROKEN). */
static bool serve_call(struct session *s, const struct vm_frame_header *h)
{
	struct call c;
	memset(&c, 0, sizeof c);
	c.s = s;
	const size_t cap = (size_t)s->lim.output_kb * 1024;
	if (receive_call(port_read, h, &c.req, &c.request, &c.why)) {
		/* Unrecoverable (frame.c), and nothing of the call has run. */
		c.broken = true;
		send_call_result(s, &c);
		free(c.request);
		return false;
	}
	bool retried = false;
again:
	if (s->pid == 0) {
		/* The last one ended: a fresh interpreter, the files kept. */
		if (start_interpreter(s, &c.why)) {
			c.setup_failed = c.ended = true;
			send_call_result(s, &c);
			free(c.request);
			return true;
		}
		c.restarted = s->started_before;
		s->started_before = true;
	}
	c.out = (struct capture){.limit = cap};
	c.err = (struct capture){.limit = cap};
	c.rep = (struct capture){.limit = (size_t)c.req.reply_max + 1};
	watch_call(s, &c);
	if (!c.replied && c.ended && !c.acked && !c.w.sv.stopping && !c.broken && !retried) {
		/* It ended by itself before it took the request (it died
		 * between calls: a cell closed its pipes, a thread crashed it):
		 * the code never ran, so a fresh interpreter gets it, once. */
		take_reply(&c);
		if (!c.acked) {
			finish_interpreter(s, &c);
			capture_free(&c.out);
			capture_free(&c.err);
			capture_free(&c.rep);
			c.ended = false;
			c.wstatus = 0;
			retried = true;
			goto again;
		}
	}
	if (c.replied) {
		/* All it printed before the reply is in the pipes now. */
		bool ignored = false;
		supervise_drain(s->out_r, &c.out, &ignored);
		supervise_drain(s->err_r, &c.err, &ignored);
		if (c.ended) /* and then it ended: nothing of it may stay */
			finish_interpreter(s, &c);
	} else if (!c.broken) {
		if (!c.ended) /* stopped, not yet reaped: finish_interpreter waits */
			watch_stop(&c.w);
		finish_interpreter(s, &c);
		c.ended = true;
	}
	send_call_result(s, &c);
	capture_free(&c.out);
	capture_free(&c.err);
	capture_free(&c.rep);
	free(c.ans.reply);
	free(c.request);
	return !c.broken;
}

/* ---- the session ---- */

void serve_session(const struct vm_frame_header *h, int sigfd)
{
	struct session s;
	struct failure f;
	memset(&s, 0, sizeof s);
	s.sigfd = sigfd;
	s.req_w = s.rep_r = s.out_r = s.err_r = -1;
	int rc = receive_session_start(port_read, h, &s.lim, &s.repl, &s.env, &f);
	if (rc == 0) {
		refresh_clock();
		rc = refresh_entropy(&s.lim, sizeof s.lim, &f);
	}
	if (rc == 0)
		rc = make_workspace(s.lim.disk_mb, NULL, 0, &f);
	if (rc == 0)
		rc = run_cgroup_limit(s.lim.memory_mb, s.lim.pids, &f);
	/* For the session's life: the forwarder is no process, so the kill
	 * that ends a call leaves it serving the next. */
	if (rc == 0 && s.lim.egress)
		rc = egress_start(&f);
	/* Started now, so the first call does not wait for Python's start. */
	if (rc == 0 && (rc = start_interpreter(&s, &f)) == 0)
		s.started_before = true;
	struct vm_session_ready ready = {.ok = rc == 0,
					 .message_len = rc ? (uint32_t)strlen(f.message) : 0};
	struct iovec parts[2] = {{.iov_base = &ready, .iov_len = sizeof ready},
				 {.iov_base = f.message, .iov_len = ready.message_len}};
	if (send_frame(VM_SESSION_READY, parts, 2) || rc) {
		kill(-1, SIGKILL);
		return;
	}
	for (;;) {
		struct vm_frame_header next;
		if (port_read(&next, sizeof next))
			break;
		if (next.type == VM_CALL) {
			if (!serve_call(&s, &next))
				break;
			continue;
		}
		/* A stop for a call that had already ended: nothing to do. */
		if (next.type != VM_CALL_STOP || next.length != 0)
			break;
	}
	kill(-1, SIGKILL);
}
