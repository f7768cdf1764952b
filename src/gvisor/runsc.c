#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../linux/report.h"
#include "../linux/spawn.h"
#include "runsc.h"

/* How long `runsc --version` may take. */
#define VERSION_MS 10000

int runsc_find(char *out, size_t n, struct aj_error *err)
{
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof dirs, "%s:/usr/bin:/usr/sbin", path ? path : "");
	char *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		/* Only an absolute directory: a relative PATH entry would make
		 * the runtime depend on the caller's cwd. */
		if (d[0] != '/')
			continue;
		if ((size_t)snprintf(out, n, "%s/runsc", d) < n && access(out, X_OK) == 0)
			return 0;
	}
	return error_set(err, -ENOENT,
			 "gvisor: no runsc on PATH or in /usr/bin (apt-get install runsc)");
}

int runsc_version(const char *runsc, char *out, size_t n, struct aj_error *err)
{
	int p[2];
	if (pipe_cloexec(p, 1) < 0)
		return error_set(err, -errno, "gvisor: pipe: %s", errno_name(errno));
	int pidfd = -1;
	pid_t pid = spawn_clone(0, &pidfd);
	if (pid == 0) {
		child_reset_signals();
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
			_exit(127);
		int keep[] = {0, 1, 2};
		close_fds_except(keep, 3);
		char *argv[] = {(char *)runsc, "--version", NULL};
		char *envp[] = {"PATH=/usr/bin:/bin", NULL};
		execve(runsc, argv, envp);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return error_set(err, (int)pid, "gvisor: starting %s: %s", runsc, errno_name(-pid));
	}
	char buf[512];
	size_t len = 0;
	double until = now_ms() + VERSION_MS;
	for (;;) {
		struct pollfd q = {.fd = p[0], .events = POLLIN};
		double left = until - now_ms();
		if (left <= 0 || poll(&q, 1, (int)left + 1) == 0)
			break;
		ssize_t r = read(p[0], buf + len, sizeof buf - 1 - len);
		if (r > 0 && (len += (size_t)r) < sizeof buf - 1)
			continue;
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		break;
	}
	close(p[0]);
	/* It answers at once or it is broken: either way it ends now. */
	pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
	siginfo_t si;
	spawn_reap(pidfd, &si);
	close(pidfd);
	buf[len] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (strncmp(buf, "runsc version ", 14))
		return error_set(err, -ENOEXEC, "gvisor: %s --version did not answer as runsc does%s%s",
				 runsc, buf[0] ? ": " : "", buf);
	snprintf(out, n, "%s", buf);
	return 0;
}

/* runsc, in the keeper's child: its stdio, then exec. */
static void exec_runsc(const struct runsc_launch *l)
{
	char platform[40];
	snprintf(platform, sizeof platform, "--platform=%s", l->platform);
	/* runsc dies with the keeper, and its sandbox (runsc's own
	 * PDEATHSIG) with runsc. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(127);
	if (dup2(l->in_fd, 0) < 0 || dup2(l->out_fd, 1) < 0 || dup2(l->err_fd, 2) < 0)
		_exit(127);
	int keep[] = {0, 1, 2};
	close_fds_except(keep, 3);
	char root[4200], bundle[4200];
	snprintf(root, sizeof root, "--root=%s", l->state);
	snprintf(bundle, sizeof bundle, "--bundle=%s", l->bundle);
	char *argv[] = {
		(char *)l->runsc,
		root,
		/* runsc itself runs as root (it needs namespaces and the
		 * gofer's chroot); the program does not (bundle.c). */
		"--rootless=false",
		/* No network stack of gVisor's with a link: loopback only. */
		"--network=none",
		platform,
		/* The cgroup is ours, made before and removed after, with
		 * runsc, sentry and gofer all inside it (below). */
		"--ignore-cgroups",
		/* The sentry applies the policy's filter to the program. */
		"--oci-seccomp",
		"run",
		bundle,
		(char *)l->id,
		NULL,
	};
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	execve(l->runsc, argv, envp);
	dprintf(2, "agentjail: exec %s: %s\n", l->runsc, errno_name(errno));
	_exit(127);
}

/* The keeper: a copy of the caller that never execs, so it keeps the exit
 * signal 0 it was born with (exec resets it to SIGCHLD) and the kernel
 * never reaps it behind the caller's back, even where the application
 * ignores SIGCHLD. It starts runsc, waits, and ends as runsc ended: the
 * same exit code, or the same signal. Async-signal-safe calls only. */
static void keeper(const struct runsc_launch *l)
{
	struct setup_error e = {{0}};
	if (child_reset_signals() < 0)
		_exit(127);
	/* Gone with the caller's thread, and runsc with it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(127);
	/* v1: into the run's memory, pids and cpu cgroups first, so that
	 * everything runsc starts is born there. */
	if (l->cg->version == 1 && cgroup_join_self(l->cg->tasks_files, &e) < 0) {
		dprintf(l->err_fd, "agentjail: %s\n", e.message);
		_exit(127);
	}
	/* Nothing of the caller's but the sandbox's stdio: the keeper never
	 * execs, so close-on-exec would not close the rest (the write end
	 * of the program's stdin among them, and boot.py reads to EOF). */
	int keep[] = {l->in_fd, l->out_fd, l->err_fd};
	close_fds_except(keep, 3);
	int fd = -1;
	pid_t pid = spawn_clone(0, &fd);
	if (pid == 0)
		exec_runsc(l);
	if (pid < 0)
		_exit(127);
	siginfo_t si;
	if (spawn_reap(fd, &si) < 0)
		_exit(127);
	if (si.si_code == CLD_EXITED)
		_exit(si.si_status);
	signal(si.si_status, SIG_DFL);
	kill(getpid(), si.si_status);
	_exit(128 + si.si_status);
}

pid_t runsc_spawn(const struct runsc_launch *l, int *pidfd, struct aj_error *err)
{
	pid_t pid;
	int cgfd = -1;
	if (l->cg->version == 2) {
		/* v2: born in the cgroup, with nothing to move afterwards. */
		if ((cgfd = cgroup_open_dir(l->cg)) < 0)
			return error_set(err, cgfd, "gvisor: open the run's cgroup: %s",
					 errno_name(-cgfd));
	}
	/* No exit signal, and no exec: runsc's exit code is the program's,
	 * and an application ignoring SIGCHLD must not have the kernel reap
	 * the process that carries it. */
	pid = spawn_clone_quiet(cgfd, pidfd);
	if (pid == 0)
		keeper(l);
	if (cgfd >= 0)
		close(cgfd);
	if (pid < 0)
		return error_set(err, (int)pid, "gvisor: starting runsc: %s", errno_name(-pid));
	return pid;
}
