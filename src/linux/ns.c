#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns.h"
#include "report.h"
#include "spawn.h"

static const struct {
	unsigned long flag;
	const char *name;
} namespaces[] = {
	/* The user namespace comes first: without root it is what lets the
	 * others be made. */
	{CLONE_NEWUSER, "user namespace"},
	{CLONE_NEWNS, "mount namespace"},
	{CLONE_NEWPID, "pid namespace"},
	{CLONE_NEWNET, "network namespace"},
	{CLONE_NEWIPC, "ipc namespace"},
	{CLONE_NEWUTS, "uts namespace"},
	{CLONE_NEWCGROUP, "cgroup namespace"},
};

const char *ns_name(unsigned long clone_flag)
{
	for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0]; i++)
		if (namespaces[i].flag == clone_flag)
			return namespaces[i].name;
	return "namespace";
}

int ns_probe(unsigned long flags, struct aj_error *err)
{
	int fds[2];
	int rc = pipe_cloexec(fds, 0);
	if (rc)
		return error_set(err, rc, "probe: pipe: %s", errno_name(-rc));

	pid_t pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(fds[0]);
		close(fds[1]);
		return error_set(err, rc, "probe: fork: %s", errno_name(-rc));
	}
	if (pid == 0) {
		struct setup_error e = {{0}};
		for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0]; i++) {
			if (!(flags & namespaces[i].flag))
				continue;
			if (unshare((int)namespaces[i].flag) < 0) {
				setup_fail(&e, errno, "%s: unshare", namespaces[i].name);
				(void)!write(fds[1], e.message, strlen(e.message));
				_exit(1);
			}
		}
		_exit(0);
	}
	close(fds[1]);
	char msg[sizeof(struct setup_error)] = {0};
	ssize_t n = read(fds[0], msg, sizeof msg - 1);
	close(fds[0]);
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (n > 0)
		return error_set(err, -EPERM, "%s", msg);
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		return error_set(err, -EIO, "probe: namespace probe died (wait status %d)", ws);
	return 0;
}
