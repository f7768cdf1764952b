#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdint.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"

pid_t spawn_clone(unsigned long flags, int *pidfd)
{
	int fd = -1;
	/* x86-64 argument order: flags, stack, parent_tid, child_tid, tls.
	 * CLONE_PIDFD stores the pidfd through parent_tid. A NULL stack makes
	 * the child continue on a copy of ours, as fork() does. */
	long pid = syscall(SYS_clone, flags | CLONE_PIDFD | SIGCHLD, NULL, &fd, NULL, 0);
	if (pid < 0)
		return -errno;
	if (pid > 0)
		*pidfd = fd;
	return (pid_t)pid;
}

/* clone3 with a pidfd, exit_signal, and born in cgroup_fd unless it is -1.
 * stack 0: the child runs on a copy of ours, as with fork(). */
static pid_t clone3_pidfd(unsigned long flags, int cgroup_fd, int exit_signal, int *pidfd)
{
	int fd = -1;
	struct clone_args args = {
		.flags = flags | CLONE_PIDFD | (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0),
		.pidfd = (uint64_t)(uintptr_t)&fd,
		.exit_signal = (uint64_t)exit_signal,
		.cgroup = cgroup_fd >= 0 ? (uint64_t)cgroup_fd : 0,
	};
	long pid = syscall(SYS_clone3, &args, sizeof args);
	if (pid < 0)
		return -errno;
	if (pid > 0)
		*pidfd = fd;
	return (pid_t)pid;
}

pid_t spawn_clone_quiet(int cgroup_fd, int *pidfd)
{
	return clone3_pidfd(0, cgroup_fd, 0, pidfd);
}

pid_t spawn_clone_into_cgroup(unsigned long flags, int cgroup_fd, int *pidfd)
{
	return clone3_pidfd(flags, cgroup_fd, SIGCHLD, pidfd);
}

int spawn_reap(int pidfd, siginfo_t *si)
{
	memset(si, 0, sizeof *si);
	while (waitid(P_PIDFD, (id_t)pidfd, si, WEXITED | __WALL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

void close_fds_except(const int *keep, int n)
{
	int sorted[8];
	int m = 0;

	/* Insertion sort of the few fds to keep, so the gaps between them can
	 * be closed with one close_range each. */
	for (int i = 0; i < n && m < 8; i++) {
		int j = m++;
		while (j > 0 && sorted[j - 1] > keep[i]) {
			sorted[j] = sorted[j - 1];
			j--;
		}
		sorted[j] = keep[i];
	}
	unsigned lo = 0;
	for (int i = 0; i < m; i++) {
		if (sorted[i] < 0)
			continue;
		if ((unsigned)sorted[i] > lo)
			close_range(lo, (unsigned)sorted[i] - 1, 0);
		lo = (unsigned)sorted[i] + 1;
	}
	close_range(lo, UINT_MAX, 0);
}

/* The kernel's struct sigaction (x86_64, arm64): glibc's sigaction()
 * refuses the two signals it keeps for itself (SIGCANCEL 32, SIGSETXID 33),
 * but an ignored one is inherited through exec like any other, and the
 * program would start with it ignored (seen: 32 ignored above a test run). */
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

int child_reset_signals(void)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sigaction(sig, &dfl, NULL) == 0)
			continue;
		if (errno != EINVAL)
			return -errno;
		/* SIGKILL and SIGSTOP cannot be changed. glibc's own two, by
		 * the kernel itself: this child is one thread, which will exec
		 * or never start another, so nothing of glibc's needs their
		 * handlers. */
		struct kernel_sigaction k = {.handler = SIG_DFL};
		if (sig != SIGKILL && sig != SIGSTOP &&
		    syscall(SYS_rt_sigaction, sig, &k, NULL, sizeof k.mask) < 0)
			return -errno;
	}
	sigset_t none;
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		return -errno;
	return 0;
}

void child_scrub_args_and_env(void)
{
	char buf[2048];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* Fields after the command name, which may hold spaces and parens:
	 * count from the last ')'. arg_start is field 48, env_end 51. */
	char *p = strrchr(buf, ')');
	if (!p)
		return;
	unsigned long v[52] = {0};
	/* Field 3 is the state, a letter; numbers start at field 4. */
	p++;
	while (*p == ' ')
		p++;
	if (*p)
		p++;
	int field = 3;
	while (*p && field < 51) {
		while (*p == ' ')
			p++;
		field++;
		char *end;
		v[field] = strtoul(p, &end, 10);
		if (end == p)
			break;
		p = end;
	}
	if (field < 51)
		return;
	if (v[49] > v[48] && v[49] - v[48] < (1ul << 24))
		memset((void *)v[48], 0, v[49] - v[48]);
	if (v[51] > v[50] && v[51] - v[50] < (1ul << 24))
		memset((void *)v[50], 0, v[51] - v[50]);
}

int pipe_cloexec(int fds[2], int nonblocking_read)
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	if (nonblocking_read) {
		int fl = fcntl(fds[0], F_GETFL);
		if (fl < 0 || fcntl(fds[0], F_SETFL, fl | O_NONBLOCK) < 0) {
			int e = errno;
			close(fds[0]);
			close(fds[1]);
			fds[0] = fds[1] = -1;
			return -e;
		}
	}
	return 0;
}
