#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
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
		/* Egress: connect (never create or listen) to host unix
		 * sockets, for boot.py's forwarder to reach the proxy's
		 * (src/boot/egress.h). The program cannot make a unix socket
		 * (boot.py's own filter), so no other host socket in its
		 * mounts is in its reach. Else none at all. */
		l->host_uds ? "--host-uds=open" : "--host-uds=none",
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

/* The paths the keeper ends the sandbox through, made before the clone so
 * that the keeper itself only opens, reads and writes. */
struct cgroup_files {
	char procs[440];           /* every process of the sandbox */
	char kill[440];            /* v2's cgroup.kill; empty on v1 */
};

/* SIGKILLs every process listed in f->procs, once each. Whether any was
 * listed. Async-signal-safe: the keeper is a copy of a threaded caller. */
static bool kill_listed(const struct cgroup_files *f)
{
	int fd = open(f->procs, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[4096];
	ssize_t r;
	long pid = 0;
	bool any = false;
	while ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				pid = pid * 10 + (buf[i] - '0');
				continue;
			}
			if (pid > 0) {
				kill((pid_t)pid, SIGKILL);
				any = true;
			}
			pid = 0;
		}
	if (pid > 0) {
		kill((pid_t)pid, SIGKILL);
		any = true;
	}
	close(fd);
	return any;
}

/* The sandbox is over once runsc is: whatever of it is still running is
 * ended (a fork racing a pass is in the cgroup too, for the next pass). */
static void kill_sandbox(const struct cgroup_files *f)
{
	if (f->kill[0]) {
		/* Linux 5.14+: one write, and no fork can escape it. */
		int fd = open(f->kill, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t w = write(fd, "1", 1);
			(void)w; /* the listing below is the fallback */
			close(fd);
		}
	}
	kill_listed(f);
}

/* The keeper: a copy of the caller that never execs, so it keeps the exit
 * signal 0 it was born with (exec resets it to SIGCHLD) and the kernel
 * never reaps it behind the caller's back, even where the application
 * ignores SIGCHLD. It stays outside the run's cgroup, which a kill of the
 * sandbox empties, and is the sandbox's subreaper: every process of it
 * whose parent dies comes to the keeper (the ptrace platform's stubs are
 * orphans from birth), not to the host's PID 1, which reaps when it likes
 * (seconds on this machine). It starts runsc, reaps everything below it,
 * ends what is left once runsc has ended, and ends only when nothing of
 * the sandbox is left: as runsc ended, the same exit code or signal. So
 * the keeper's end is the sandbox's. Async-signal-safe calls only. */
static void keeper(const struct runsc_launch *l, int cgfd, const struct cgroup_files *files)
{
	struct setup_error e = {{0}};
	if (child_reset_signals() < 0)
		_exit(127);
	/* Gone with the caller's thread, and runsc with it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(127);
	/* Orphans of the sandbox are the keeper's to reap, not PID 1's. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		dprintf(l->err_fd, "agentjail: PR_SET_CHILD_SUBREAPER: %s\n", errno_name(errno));
		_exit(127);
	}
	/* Nothing of the caller's but the sandbox's stdio (and the cgroup to
	 * start runsc in): the keeper never execs, so close-on-exec would not
	 * close the rest (the write end of the program's stdin among them,
	 * and boot.py reads to EOF). */
	int keep[] = {l->in_fd, l->out_fd, l->err_fd, cgfd};
	close_fds_except(keep, cgfd >= 0 ? 4 : 3);
	int fd = -1;
	/* v2: runsc born in the run's cgroup, with nothing to move. */
	pid_t pid = cgfd >= 0 ? spawn_clone_into_cgroup(0, cgfd, &fd) : spawn_clone(0, &fd);
	if (pid == 0) {
		/* v1: into the run's memory, pids and cpu cgroups before the
		 * exec, so that everything runsc starts is born there. */
		if (l->cg->version == 1 && cgroup_join_self(l->cg->tasks_files, &e) < 0) {
			dprintf(l->err_fd, "agentjail: %s\n", e.message);
			_exit(127);
		}
		exec_runsc(l);
	}
	if (pid < 0) {
		dprintf(l->err_fd, "agentjail: starting runsc: %s\n", errno_name(-pid));
		_exit(127);
	}
	if (cgfd >= 0)
		close(cgfd);
	siginfo_t si, runsc = {0};
	bool runsc_ended = false;
	for (;;) {
		memset(&si, 0, sizeof si);
		/* Until runsc ends, wait; after, end the rest and take them as
		 * they go. */
		int flags = WEXITED | __WALL | (runsc_ended ? WNOHANG : 0);
		if (waitid(P_ALL, 0, &si, flags) < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: nothing of the sandbox is left */
		}
		if (si.si_pid == pid) {
			runsc = si;
			runsc_ended = true;
		}
		if (runsc_ended && !si.si_pid) {
			kill_sandbox(files);
			struct timespec ts = {0, 5000000};
			nanosleep(&ts, NULL);
		}
	}
	if (!runsc_ended)
		_exit(127);
	if (runsc.si_code == CLD_EXITED)
		_exit(runsc.si_status);
	signal(runsc.si_status, SIG_DFL);
	kill(getpid(), runsc.si_status);
	_exit(128 + runsc.si_status);
}

pid_t runsc_spawn(const struct runsc_launch *l, int *pidfd, struct aj_error *err)
{
	int cgfd = -1;
	/* The pids hierarchy (v1) or the one directory (v2) lists them all. */
	struct cgroup_files files;
	memset(&files, 0, sizeof files);
	const char *dir = l->cg->dir[l->cg->version == 2 ? 0 : CG_PIDS];
	snprintf(files.procs, sizeof files.procs, "%.400s/cgroup.procs", dir);
	if (l->cg->version == 2) {
		snprintf(files.kill, sizeof files.kill, "%.400s/cgroup.kill", dir);
		if ((cgfd = cgroup_open_dir(l->cg)) < 0)
			return error_set(err, cgfd, "gvisor: open the run's cgroup: %s",
					 errno_name(-cgfd));
	}
	/* No exit signal, and no exec: runsc's exit code is the program's,
	 * and an application ignoring SIGCHLD must not have the kernel reap
	 * the process that carries it. Outside the run's cgroup: a kill of
	 * the sandbox must leave its reaper. */
	pid_t pid = spawn_clone_quiet(-1, pidfd);
	if (pid == 0)
		keeper(l, cgfd, &files);
	if (cgfd >= 0)
		close(cgfd);
	if (pid < 0)
		return error_set(err, (int)pid, "gvisor: starting runsc: %s", errno_name(-pid));
	return pid;
}
