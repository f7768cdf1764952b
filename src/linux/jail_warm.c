/* Warm mode's two sandboxes (src/warm/warm.c). JAIL_ZYGOTE: the zygote's
 * own (jail_zygote_start), whose inside process keeps the privilege to
 * make each run's namespaces. JAIL_WARM_RUN: one run, cloned by the zygote
 * (jail_warm_spawn), whose program's process returns to the zygote's
 * Python instead of exec'ing. See jail_plan.c's theory of operation. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/status.h"
#include "jail_plan.h"
#include "mounts.h"
#include "spawn.h"
#include "supervise.h"

/* ---- the zygote's sandbox ---- */

/* The zygote's sandbox's init: the view built, on the supervisor's "go". */
__attribute__((noreturn)) static void zygote_init(const struct plan *p)
{
	struct setup_error e;
	int rc;
	jail_init_until_go(p);
	/* The kernel's knobs stay the host's: the zygote is root in the host's
	 * user namespace, and /proc/sys and sysrq are writable by root. (Each
	 * run mounts a /proc of its own, whose init never writes there.) */
	struct stat st;
	bool sysrq = lstat("/proc/sysrq-trigger", &st) == 0; /* a kernel option */
	if ((rc = mount_bind("/proc/sys", "/proc/sys", &e)) ||
	    (rc = mount_tree_readonly("/proc/sys", &e)) ||
	    (sysrq && ((rc = mount_bind("/proc/sysrq-trigger", "/proc/sysrq-trigger", &e)) ||
		       (rc = mount_tree_readonly("/proc/sysrq-trigger", &e)))))
		jail_init_fail(p, &e);
	/* A throwaway first child, so the zygote is not pid 2: every run's
	 * program is pid 2 of its own namespace, and code that notices a fork
	 * by a change of pid (OpenSSL's random generator, tempfile's names)
	 * must see one between the zygote and a run. */
	int fd = -1;
	pid_t pid = spawn_clone(0, &fd);
	if (pid == 0)
		_exit(0);
	if (pid < 0) {
		setup_fail(&e, -pid, "fork");
		jail_init_fail(p, &e);
	}
	siginfo_t si;
	spawn_reap(fd, &si);
	close(fd);
	pid = jail_init_start_inside(p, "fork the zygote");
	/* Until the zygote ends, or the host does (the life socket's EOF: the
	 * zygote notices a closed socket only when it reads it, and a stopped
	 * or importing zygote does not read). */
	sigset_t during;
	if (jail_sigchld_only_in_ppoll(&during)) {
		kill(-1, SIGKILL);
		_exit(1);
	}
	int ws = jail_init_wait(p, pid, &during);
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	report_exited(p->report_w, ws, &ru, false); /* the zygote's end: no program's */
	_exit(0); /* the kernel ends the rest */
}

int jail_zygote_start(const struct jail_spec *s, const char *zygote_py, struct jail_zygote *z,
		      struct aj_error *err)
{
	struct plan p;
	jail_plan_init(&p, s, JAIL_ZYGOTE);
	p.req_r = s->zygote_fd;
	p.rep_w = s->helper_fd;
	char *const argv[] = {(char *)s->python, "-I", "-u", "-c", (char *)zygote_py,
			      (char *)(s->preload ? s->preload : ""), NULL};
	memcpy(p.argv, argv, sizeof argv);
	struct jail_pipes jp;
	int rc;

	memset(z, 0, sizeof *z);
	z->pidfd = z->log_r = z->report_r = z->life_w = -1;
	if ((rc = jail_pipes_open(&jp, &p))) {
		error_set(err, rc, "warm: pipes: %s", errno_name(-rc));
		goto done;
	}
	if ((rc = jail_clone_init(&p, zygote_init, &z->pid, &z->pidfd, err)))
		goto done;
	/* Its init starts the zygote at once: nothing to wait for. The pipe
	 * stays open: its EOF (the host gone) ends the zygote's sandbox. */
	if ((rc = send_full(jp.life[1], "g", 1))) {
		error_set(err, rc, "warm: the zygote's sandbox ended while it was being built");
		goto done;
	}
	z->log_r = jp.out[0];
	z->report_r = jp.report[0];
	z->life_w = jp.life[1];
	jp.out[0] = jp.report[0] = jp.life[1] = -1;
done:
	jail_pipes_close(&jp);
	if (rc && z->pidfd >= 0) {
		jail_kill_reap(z->pidfd);
		jail_close_fd(&z->pidfd);
	}
	return rc;
}

/* ---- a warm run ---- */

/* The signals whose handling CPython sets up at start: SIGINT raises
 * KeyboardInterrupt, SIGPIPE and SIGXFSZ are ignored (errors instead). */
static const int python_signals[3] = {SIGINT, SIGPIPE, SIGXFSZ};

/* A warm run's init (jail_warm_spawn): as a cold run's (jail_run.c), but the program's
 * process returns (0) to the zygote's Python instead of exec'ing. Never
 * returns in init. */
static int warm_run_init(const struct plan *zp)
{
	struct setup_error e;
	if (jail_init_build(zp, &e))
		jail_init_fail(zp, &e);
	/* Made ahead (warm_prepare): the sandbox is built, on the uid slot
	 * the host took for it, before any program exists; the program comes
	 * only with "go", so nothing of the run it serves is here until that
	 * run takes it. Its EOF first (the host discarded it: too old, or the
	 * sandbox closed) ends init, and with it everything built. */
	if (zp->s->code_after_go) {
		if (!jail_init_wait_go(zp->s->code_fd))
			_exit(1);
		jail_init_take_program(zp, zp->s->code_fd);
	}
	if (jail_init_cgroup_ns(zp->s, &e))
		jail_init_fail(zp, &e);
	close(zp->s->code_fd); /* written to the workspace */
	struct plan run;
	int verdict_r = jail_init_verdict_pipe(zp, &run);
	const struct plan *p = &run;
	/* _Fork, not a raw clone: the program's process goes on running
	 * Python, and glibc's own record of the thread (its tid, which
	 * raise() and abort() use) must be this process's. It runs no atfork
	 * handler and takes no lock: init is single-threaded. */
	pid_t pid = _Fork();
	if (pid < 0) {
		setup_fail(&e, errno, "fork the program");
		jail_init_fail(p, &e);
	}
	if (pid == 0) {
		int report = p->report_w;
		for (int i = 0; i < 3; i++)
			sigaction(python_signals[i], &p->python_sigs[i], NULL);
		if (jail_inside_prepare(p, &report, &e)) {
			report_setup_failed(report, &e);
			_exit(127);
		}
		/* No exec to close them: every fd above stdio and the verdict
		 * pipe goes now (the report pipe too: the program must not
		 * forge its result). */
		if (close_range(AJ_VERDICT_FD + 1, ~0U, 0) < 0)
			_exit(127);
		return 0;
	}
	close(p->out_w);
	close(p->err_w);
	close(p->verdict_w);
	report_started(p->report_w);
	init_wait_and_report(pid, p->report_w, verdict_r);
}

int jail_warm_prepare_ns(int fds[3])
{
	static int own[3] = {-1, -1, -1}; /* the zygote's own, to go back to */
	static const char *const paths[3] = {"/proc/self/ns/net", "/proc/self/ns/ipc",
					     "/proc/self/ns/uts"};
	int rc = 0;
	for (int i = 0; i < 3; i++) {
		fds[i] = -1;
		if (own[i] < 0 && (own[i] = open(paths[i], O_RDONLY | O_CLOEXEC)) < 0)
			return -errno;
	}
	if (unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		return -errno;
	for (int i = 0; i < 3 && !rc; i++)
		if ((fds[i] = open(paths[i], O_RDONLY | O_CLOEXEC)) < 0)
			rc = -errno;
	/* Back to its own: the zygote itself never stays in a run's. */
	for (int i = 0; i < 3; i++)
		if (setns(own[i], jail_spare_ns_types[i]) < 0)
			_exit(125); /* a zygote in the wrong namespace must not go on */
	if (rc)
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0) {
				close(fds[i]);
				fds[i] = -1;
			}
	return rc;
}

pid_t jail_warm_spawn(const struct jail_spec *s, int out_w, int err_w, int report_w, int *pidfd)
{
	struct plan p;
	jail_plan_init(&p, s, JAIL_WARM_RUN);
	p.out_w = out_w;
	p.err_w = err_w;
	p.report_w = report_w;
	for (int i = 0; i < 3; i++)
		sigaction(python_signals[i], NULL, &p.python_sigs[i]);
	unsigned long flags = jail_base_namespaces;
	for (int i = 0; i < 3; i++)
		if (s->spare_ns[i] >= 0)
			flags &= ~(unsigned long)jail_spare_ns_types[i];
	pid_t pid = s->into_cgroup ? spawn_clone_into_cgroup(flags, s->cgroup_fd, pidfd)
				   : spawn_clone(flags, pidfd);
	if (pid == 0)
		return warm_run_init(&p);
	return pid;
}
