/* JAIL_SESSION: a session's sandbox (jail_session_start). init stays
 * between calls and starts the session interpreter on each 's' of the life
 * pipe; see jail_plan.c's theory of operation, "Sessions". The per-call
 * supervision is session_io.c. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail_plan.h"
#include "spawn.h"

/* The session interpreter, as a C string (tools/c_string.py). */
#include "session_repl.inc"

/* A session's init, once the sandbox is built: one interpreter after
 * another, each on the supervisor's 's', until the life socket's EOF. */
__attribute__((noreturn)) static void interpreter_loop(const struct plan *p)
{
	struct setup_error e;
	sigset_t during;
	int rc = jail_sigchld_only_in_ppoll(&during);
	if (rc) {
		setup_fail(&e, -rc, "signals: SIGCHLD");
		jail_init_fail(p, &e);
	}
	for (;;) {
		char c;
		ssize_t n;
		while ((n = read(p->life_r, &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			_exit(0); /* the session is over: the kernel ends the rest */
		int fd = -1;
		pid_t pid = spawn_clone(0, &fd);
		if (pid < 0) {
			setup_fail(&e, -pid, "start the session interpreter");
			report_setup_failed(p->report_w, &e);
			continue;
		}
		if (pid == 0) {
			sigprocmask(SIG_SETMASK, &during, NULL);
			signal(SIGCHLD, SIG_DFL);
			jail_inside_exec(p);
		}
		close(fd);
		/* The host gone, or the session closed mid-call, ends init here. */
		int main_status = jail_init_wait(p, pid, &during);
		/* The interpreter's state is gone with it: so is what it left
		 * running. Then every child is reaped before the report: once
		 * the supervisor reads it, nothing in the sandbox reads the
		 * request pipe (init never does). What is left there the
		 * supervisor throws away before it asks for the next
		 * interpreter (session_io.c), not init here: a request written
		 * after init emptied the pipe and before the report was read
		 * would stay for the next interpreter, which the supervisor
		 * gives that request again: one call, run twice. */
		kill(-1, SIGKILL);
		while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
			;
		struct rusage ru;
		getrusage(RUSAGE_CHILDREN, &ru);
		/* A cell's MemoryError rides in its reply (repl.py), not here. */
		report_exited(p->report_w, main_status, &ru, false);
	}
}

__attribute__((noreturn)) static void session_init(const struct plan *p)
{
	struct setup_error e;
	if (jail_init_build(p, &e) || jail_init_cgroup_ns(p->s, &e))
		jail_init_fail(p, &e);
	/* Built: the supervisor's start waits for this. */
	static const struct sandbox_report ready = {.kind = REPORT_READY};
	if (write_full(p->report_w, &ready, sizeof ready))
		_exit(1);
	interpreter_loop(p);
}

/* How long building a session's sandbox may take before it is refused. */
#define SESSION_START_MS 30000

/* Waits for init's first report: ready, or the protection it could not
 * apply. */
static int wait_ready(struct jail_session *js, struct aj_error *err)
{
	double until = now_ms() + SESSION_START_MS;
	for (;;) {
		struct pollfd p[2] = {{.fd = js->report_r, .events = POLLIN},
				      {.fd = js->pidfd, .events = POLLIN}};
		int n = poll(p, 2, (int)(until - now_ms()) > 0 ? (int)(until - now_ms()) : 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return error_set(err, -ETIMEDOUT, "session: the sandbox was not built "
							  "within %d s", SESSION_START_MS / 1000);
		struct sandbox_report r;
		ssize_t got = read(js->report_r, &r, sizeof r);
		if (got == (ssize_t)sizeof r && r.kind == REPORT_READY)
			return 0;
		if (got == (ssize_t)sizeof r && r.kind == REPORT_SETUP_FAILED) {
			r.message[sizeof r.message - 1] = '\0';
			return error_set(err, -EPERM, "%s", r.message);
		}
		if (got < 0 && errno == EAGAIN && !(p[1].revents & POLLIN))
			continue;
		return error_set(err, -EPIPE, "session: the sandbox's init ended while it was "
					      "being built");
	}
}

int jail_session_start(const struct jail_spec *s, struct jail_session *js, struct aj_error *err)
{
	struct plan p;
	jail_plan_init(&p, s, JAIL_SESSION);
	char *const argv[] = {(char *)s->python, "-I", "-u", "-c", (char *)session_repl_py, NULL};
	memcpy(p.argv, argv, sizeof argv);
	/* The interpreter's hard CPU limit is the session's total; it moves
	 * the soft limit to each call's share itself (repl.py). */
	p.limits.cpu_sec = s->cfg->session.cpu_sec;
	struct jail_pipes jp;
	int rc;

	memset(js, 0, sizeof *js);
	js->pidfd = -1;
	js->req_drain = -1;
	if ((rc = jail_pipes_open(&jp, &p))) {
		error_set(err, rc, "session: pipes: %s", errno_name(-rc));
		goto fail;
	}
	/* The host never blocks writing a request: the supervisor's loop
	 * writes what the pipe takes while it keeps the clock. */
	if (fcntl(jp.req[1], F_SETFL, O_NONBLOCK) < 0) {
		rc = error_set(err, -errno, "session: pipes: %s", errno_name(errno));
		goto fail;
	}
	if ((rc = jail_clone_init(&p, session_init, &js->pid, &js->pidfd, err)))
		goto fail;
	js->out_r = jp.out[0];
	js->err_r = jp.err[0];
	js->report_r = jp.report[0];
	js->life_w = jp.life[1];
	js->req_w = jp.req[1];
	js->rep_r = jp.rep[0];
	jp.out[0] = jp.err[0] = jp.report[0] = jp.life[1] = jp.req[1] = jp.rep[0] = -1;
	/* The host's own read side of the request pipe, to empty it between
	 * interpreters. Opened anew through /proc, so that O_NONBLOCK is this
	 * description's alone: set on req[0] it would reach the interpreter's
	 * fd 3, whose reads must block. */
	char self_fd[40];
	snprintf(self_fd, sizeof self_fd, "/proc/self/fd/%d", jp.req[0]);
	js->req_drain = open(self_fd, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (js->req_drain < 0) {
		rc = error_set(err, -errno, "session: pipes: reopen the request pipe: %s",
			       errno_name(errno));
		goto fail;
	}
	if ((rc = wait_ready(js, err)))
		goto fail;
fail:
	/* The child's ends (and, on failure, ours not yet handed over). */
	jail_pipes_close(&jp);
	if (rc)
		jail_session_end(js);
	return rc;
}

void jail_session_end(struct jail_session *js)
{
	/* init's death takes the namespace, every process and mount of the
	 * session with it. */
	if (js->pidfd >= 0)
		jail_kill_reap(js->pidfd);
	jail_close_fd(&js->pidfd);
	jail_close_fd(&js->req_drain);
	if (js->pid) {
		jail_close_fd(&js->out_r);
		jail_close_fd(&js->err_r);
		jail_close_fd(&js->report_r);
		jail_close_fd(&js->life_w);
		jail_close_fd(&js->req_w);
		jail_close_fd(&js->rep_r);
	}
	js->pid = 0;
}

int jail_session_workspace(const struct jail_session *js, struct aj_error *err)
{
	if (js->pid <= 0 || js->pidfd < 0)
		return error_set(err, -ESRCH, "workspace: the session has no sandbox");
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/root", (int)js->pid);
	int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return error_set(err, -errno, "workspace: %s: %s", path, strerror(errno));
	/* The pid is init's only while init lives: asked after the open, so
	 * the root held is this sandbox's, never a later process's. */
	if (pidfd_send_signal(js->pidfd, 0, NULL, 0)) {
		close(root);
		return error_set(err, -ESRCH, "workspace: the session's sandbox has ended");
	}
	/* Resolved inside the sandbox's root, no link followed: the program
	 * may have put a symlink where a directory was, and it must not lead
	 * the host anywhere but into the sandbox's own files. */
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};
	/* The path without its leading '/': relative to the root held. */
	int fd = (int)syscall(SYS_openat2, root, &AJ_SESSION_WORKSPACE[1], &how, sizeof how);
	int e = errno;
	close(root);
	if (fd < 0)
		return error_set(err, -e, "workspace: %s in the sandbox: %s", AJ_SESSION_WORKSPACE,
				 strerror(e));
	return fd;
}
