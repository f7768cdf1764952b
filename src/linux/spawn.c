#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
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
			return -e;
		}
	}
	return 0;
}
