#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/status.h"
#include "cgroup.h"
#include "supervise.h"

/* How long init gets to stop the sandbox and report before it is SIGKILLed
 * (which still kills the whole pid namespace, only without usage figures). */
#define STOP_GRACE_MS 1000.0
/* How long the sandbox's build may take before its program starts (a
 * clock_at_start run). Not the program's time: the kernel's, which on a
 * loaded machine can wait seconds for a lock another sandbox's namespaces
 * or mounts hold; a bound only so that a hung setup ends, named. */
#define SETUP_DEADLINE_SEC 120.0

/* sv: the supervisor still running (NULL after its loop), whose wall
 * clock a REPORT_STARTED starts. */
static void read_report(int fd, struct outcome *o, struct supervisor *sv)
{
	struct sandbox_report r;
	for (;;) {
		ssize_t n = read(fd, &r, sizeof r);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof r)
			return;
		if (r.kind == REPORT_SETUP_FAILED && !o->setup_failed) {
			o->setup_failed = true;
			r.message[sizeof r.message - 1] = '\0';
			memcpy(o->setup_message, r.message, sizeof o->setup_message);
		} else if (r.kind == REPORT_EXITED) {
			o->exited_report = true;
			o->report = r;
		} else if (r.kind == REPORT_STARTED && sv) {
			supervisor_started(sv);
		}
	}
}

/* The run's sources: init's reports, and init's end. */
static void on_init_report(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	if (revents & POLLIN)
		read_report(src->fd, sv->o, sv);
	else
		/* At EOF the report pipe would poll ready forever while the
		 * kernel tears init's namespaces down. */
		src->fd = -1;
}

static void on_init_end(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)src, (void)revents;
	sv->done = true;
}

/* Stopping the run: init's stop signal kills everything else in its
 * namespace, then init reports and exits. */
static void stop_init(struct supervisor *sv)
{
	const struct supervised *s = sv->ctx;
	if (sv->o->setup_stalled) {
		/* Where init waits, while it still does: the kernel's name for
		 * the lock or step a stalled setup is stuck in (a warm run's
		 * init is the zygote's child, its pid not known here). */
		char path[40], wchan[64] = "";
		snprintf(path, sizeof path, "/proc/%d/wchan", (int)s->pid);
		int fd = s->pid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		ssize_t n = fd >= 0 ? read(fd, wchan, sizeof wchan - 1) : -1;
		if (fd >= 0)
			close(fd);
		wchan[n > 0 ? n : 0] = '\0';
		snprintf(sv->o->setup_message, sizeof sv->o->setup_message,
			 "the sandbox was not ready within %g s: its setup stalled (in the "
			 "kernel's %s), and the program never started; the machine may be "
			 "overloaded",
			 SETUP_DEADLINE_SEC, wchan[0] && strcmp(wchan, "0") ? wchan : "(unknown)");
	}
	pidfd_send_signal(s->pidfd, STOP_SIGNAL, NULL, 0);
}

/* init did not stop within the grace: SIGKILL still kills the whole pid
 * namespace, only without usage figures. */
static void kill_init(struct supervisor *sv)
{
	const struct supervised *s = sv->ctx;
	pidfd_send_signal(s->pidfd, SIGKILL, NULL, 0);
}

void supervise(const struct supervised *s, const struct aj_limits *l, struct capture *out,
	       struct capture *err, struct outcome *o)
{
	memset(o, 0, sizeof *o);
	struct supervisor sv;
	supervisor_init(&sv, o, s->start_ms, l->wall_sec);
	if (s->clock_at_start)
		supervisor_await_start(&sv, SETUP_DEADLINE_SEC);
	sv.grace_ms = STOP_GRACE_MS;
	sv.cancel_fd = s->cancel_fd;
	sv.out_fd[0] = s->out_fd;
	sv.out_fd[1] = s->err_fd;
	sv.cap[0] = out;
	sv.cap[1] = err;
	if (s->stream.out_tap)
		sv.stream = s->stream;
	sv.src[0] = (struct supervisor_source){
		.fd = s->report_fd, .while_stopping = true, .ready = on_init_report};
	sv.src[1] = (struct supervisor_source){
		.fd = s->pidfd, .while_stopping = true, .ready = on_init_end};
	sv.stop = stop_init;
	sv.force = kill_init;
	sv.ctx = (void *)s;
	supervisor_run(&sv);

	/* init has ended, and with it (the kernel saw to it) every process of
	 * the namespace: what they wrote is all in the pipes now. */
	supervisor_drain(&sv);
	read_report(s->report_fd, o, NULL);
	/* Reap through the pidfd, never by pid: if the application reaped it
	 * first (a SIGCHLD handler of its own), a recycled pid could name an
	 * unrelated child. The raw call, because only it returns the usage. */
	/* (A warm run's init is the zygote's child, which reaps it: ECHILD
	 * here, and no status or usage but what init reported.) */
	siginfo_t si;
	memset(&si, 0, sizeof si);
	long wrc;
	while ((wrc = syscall(SYS_waitid, P_PIDFD, s->pidfd, &si, WEXITED, &o->init_rusage)) < 0 &&
	       errno == EINTR)
		;
	o->init_reaped = wrc == 0;
	o->init_wstatus = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status;
}

int supervise_run(const struct supervised *s, const struct aj_limits *l, struct aj_result *res)
{
	struct capture cout, cerr;
	size_t cap = (size_t)l->output_kb * 1024;
	capture_init(&cout, cap);
	capture_init(&cerr, cap);
	struct outcome o;
	supervise(s, l, &cout, &cerr, &o);
	if (s->cgroup) {
		/* The memory cgroup's word on the run, before its status. */
		uint64_t peak_kb = 0;
		cgroup_usage(s->cgroup, &o.oom_kills, &peak_kb);
	}
	outcome_to_result(&o, l, &cout, &cerr, res);
	capture_free(&cout);
	capture_free(&cerr);
	return res->status == AJ_STATUS_SANDBOX_ERROR ? -EPERM : 0;
}

static double rusage_cpu_ms(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec * 1000.0 + (double)ru->ru_utime.tv_usec / 1000.0 +
	       (double)ru->ru_stime.tv_sec * 1000.0 + (double)ru->ru_stime.tv_usec / 1000.0;
}

void outcome_to_result(const struct outcome *o, const struct aj_limits *l, struct capture *out,
		       struct capture *err, struct aj_result *res)
{
	const struct sandbox_report *r = &o->report;

	replied_to_result(o->wall_ms, out, err, res);
	if (o->exited_report) {
		res->cpu_ms = (double)r->cpu_us / 1000.0;
		res->memory_kb = (uint64_t)r->maxrss_kb;
	} else {
		res->cpu_ms = rusage_cpu_ms(&o->init_rusage);
	}

	char unknown[96];
	if (o->init_reaped)
		snprintf(unknown, sizeof unknown,
			 "sandbox init ended without reporting (wait status 0x%x)", o->init_wstatus);
	else
		snprintf(unknown, sizeof unknown, "sandbox init ended without reporting");
	struct end_facts f = {
		.setup_failed = o->setup_failed || o->setup_stalled,
		.setup_message = o->setup_message,
		.output_overflow = o->output_overflow,
		.cancelled = o->cancelled,
		.timed_out = o->timed_out,
		.cpu_stopped = o->cpu_stopped,
		.ended = o->exited_report,
		.wstatus = r->wstatus,
		.unknown_end = o->unknown_end ? o->unknown_end : unknown,
		.cpu_ms = res->cpu_ms,
		.oom_kills = o->oom_kills,
		.memory_error = o->exited_report && (r->flags & REPORT_MEMORY_ERROR),
	};
	status_decide(&f, l, res);
}

void replied_to_result(double wall_ms, struct capture *out, struct capture *err,
		       struct aj_result *res)
{
	res->wall_ms = wall_ms;
	res->stdout_truncated = out->truncated;
	res->stderr_truncated = err->truncated;
	res->stdout_buf = capture_take(out, &res->stdout_len);
	res->stderr_buf = capture_take(err, &res->stderr_len);
}

void outcome_reply_too_long(struct outcome *o, size_t reply_max)
{
	o->setup_failed = true;
	snprintf(o->setup_message, sizeof o->setup_message,
		 "session: the interpreter's reply passed %zu bytes; the call was stopped",
		 reply_max);
}

/* ---- init side ---- */

static void on_stop(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)ctx;
	/* Only kill() from outside the namespace (the supervisor) arrives as
	 * SI_USER with pid 0: a program inside that shares init's uid cannot
	 * stop its sandbox this way, nor forge it with rt_sigqueueinfo, which
	 * may not claim SI_USER. The kill happens here, not after a flag test,
	 * so a request landing just before waitpid() cannot be missed. */
	if (si->si_code == SI_USER && si->si_pid == 0) {
		kill(-1, SIGKILL);
	}
}

int init_install_stop_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_stop;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(STOP_SIGNAL, &sa, NULL) < 0 ? -errno : 0;
}

void init_wait_and_report(pid_t main_pid, int report_fd, int verdict_r)
{
	int main_status = 0;
	bool main_done = false;

	for (;;) {
		int ws;
		pid_t p = waitpid(-1, &ws, 0);
		if (p == main_pid) {
			main_status = ws;
			main_done = true;
			/* The program has ended: the sandbox ends with it. Its
			 * leftovers (daemons) die when init exits. */
			break;
		}
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0)
			break;
	}
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	if (main_done)
		report_exited(report_fd, main_status, &ru, report_read_verdict(verdict_r));
	_exit(0);
}
