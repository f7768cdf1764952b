/* The run's cgroup: made at boot, limited by a run or a session, joined by
 * the program (through the zygote's fd 5, or session.c's child), read for
 * the result's figures. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/keyed.h"
#include "agent.h"

int run_cgroup = -1;

/* Writes a short text (a knob: name in the directory dir) in one write, as
 * the kernel wants it. */
static int knob_put(int dir, const char *name, const char *text)
{
	int fd = openat(dir, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	int rc = write_full(fd, text, strlen(text));
	close(fd);
	return rc;
}

/* Reads a small text file (name in the directory dir); 0 or -errno. */
static int knob_get(int dir, const char *name, char *buf, size_t size)
{
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ssize_t n;
	while ((n = read(fd, buf, size - 1)) < 0 && errno == EINTR)
		;
	int err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	return 0;
}

/* "key value" lines (memory.events, cpu.stat): the value of key, 0 if none. */
/* The run's cgroup, made at boot: only its limits depend on the request.
 * The cgroup2 hierarchy is mounted nowhere: fsmount gives a mount attached
 * to no directory, reached only through the agent's fds, so no path in the
 * guest leads to it and the program (which could read a mounted one, every
 * process's cgroup and every knob) sees none, as on the other tiers. The
 * agent keeps the run cgroup's directory open, close-on-exec; the zygote gets
 * it as its fd 5 and closes it once its child has joined. Enabling the
 * controllers in the root hands them to children. */
int run_cgroup_make(struct failure *f)
{
	int rc;
	int fs = fsopen("cgroup2", FSOPEN_CLOEXEC);
	if (fs < 0)
		return fail(f, errno, "cgroup: fsopen cgroup2");
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		rc = errno;
		close(fs);
		return fail(f, rc, "cgroup: create the cgroup2 superblock");
	}
	int root = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
						       MOUNT_ATTR_NOEXEC);
	rc = errno;
	close(fs);
	if (root < 0)
		return fail(f, rc, "cgroup: fsmount cgroup2");
	if ((rc = knob_put(root, "cgroup.subtree_control", "+memory +pids"))) {
		close(root);
		return fail(f, -rc, "cgroup: enable +memory +pids");
	}
	if (mkdirat(root, RUN_CGROUP, 0755) < 0 && errno != EEXIST) {
		rc = errno;
		close(root);
		return fail(f, rc, "cgroup: mkdir %s", RUN_CGROUP);
	}
	/* O_PATH: only a place to open the knobs from. Holding it holds the
	 * mount, which the root's close would otherwise take down. */
	run_cgroup = openat(root, RUN_CGROUP, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	rc = errno;
	close(root);
	if (run_cgroup < 0)
		return fail(f, rc, "cgroup: open %s", RUN_CGROUP);
	/* No oom_score_adj for the agent: the OOM killer never picks PID 1,
	 * and a value set here would be inherited by the zygote and so the
	 * program, which the memory cgroup's OOM killer must be able to kill
	 * (with -1000 a run at its limit spins in reclaim instead). */
	return 0;
}

/* The cgroup bounds the whole run, every process the program makes included;
 * rlimits (set by the zygote) only bound each process. */
int run_cgroup_limit(uint32_t memory_mb, uint32_t pids, struct failure *f)
{
	char v[32];
	int rc;
	snprintf(v, sizeof v, "%llu", (unsigned long long)memory_mb << 20);
	if ((rc = knob_put(run_cgroup, "memory.max", v)))
		return fail(f, -rc, "cgroup: memory.max");
	/* No swap: the memory limit is the memory the run gets. The VM has no
	 * swap device, but a kernel that grows one must not loosen this. */
	rc = knob_put(run_cgroup, "memory.swap.max", "0");
	if (rc && rc != -ENOENT)
		return fail(f, -rc, "cgroup: memory.swap.max");
	snprintf(v, sizeof v, "%u", pids);
	if ((rc = knob_put(run_cgroup, "pids.max", v)))
		return fail(f, -rc, "cgroup: pids.max");
	return 0;
}

int run_cgroup_join(void)
{
	return knob_put(run_cgroup, "cgroup.procs", "0");
}

uint64_t run_cgroup_value(const char *file, const char *key)
{
	char buf[1024];
	if (knob_get(run_cgroup, file, buf, sizeof buf))
		return 0;
	return key ? keyed_value(buf, key) : strtoull(buf, NULL, 10);
}
