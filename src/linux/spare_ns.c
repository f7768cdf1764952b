/* jail_spare_ns_make: a cold run's network, ipc and uts namespaces made
 * ahead, off the run's clock, by a thread of the host (the process tier's
 * pool). A network namespace is the costliest part of a jail's start (its
 * loopback and sysctl tables: 15 % of the jail's CPU, docs/tiers/process.md);
 * made while the host is idle, the run's init only joins it. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "jail_plan.h"

static int open_own(int i)
{
	char path[64];
	/* thread-self: unshare and setns change the calling thread's
	 * namespaces only, and /proc/self/ns would name the main thread's. */
	snprintf(path, sizeof path, "/proc/thread-self/ns/%s", jail_spare_ns_names[i]);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int jail_spare_ns_make(int fds[3])
{
	int own[3] = {-1, -1, -1}, rc = 0;
	for (int i = 0; i < 3; i++)
		fds[i] = -1;
	for (int i = 0; i < 3 && !rc; i++)
		if ((own[i] = open_own(i)) < 0)
			rc = -errno;
	if (!rc && unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		rc = -errno;
	for (int i = 0; i < 3 && !rc; i++)
		if ((fds[i] = open_own(i)) < 0)
			rc = -errno;
	/* Back to its own: the thread itself never stays in a run's (it only
	 * ever makes more, each fresh from an unshare, so one that could not
	 * go back serves no run from there: its fds are dropped). */
	for (int i = 0; i < 3 && own[i] >= 0; i++)
		if (setns(own[i], jail_spare_ns_types[i]) < 0 && !rc)
			rc = -errno;
	for (int i = 0; i < 3; i++) {
		if (own[i] >= 0)
			close(own[i]);
		if (rc && fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	}
	return rc;
}
