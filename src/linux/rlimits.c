#include <errno.h>
#include <sys/resource.h>

#include "rlimits.h"

/* Sets soft and hard. Without CAP_SYS_RESOURCE a hard limit can only be
 * lowered, so a value above the current hard limit is clamped to it: the
 * result is never looser than asked. */
static int set_limit(int resource, const char *name, rlim_t soft, rlim_t hard,
		     struct setup_error *e)
{
	struct rlimit cur;
	if (getrlimit(resource, &cur) < 0)
		return setup_fail(e, errno, "rlimit %s: get", name);
	if (cur.rlim_max != RLIM_INFINITY && hard > cur.rlim_max)
		hard = cur.rlim_max;
	if (soft > hard)
		soft = hard;
	struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
	if (setrlimit(resource, &rl) < 0)
		return setup_fail(e, errno, "rlimit %s", name);
	return 0;
}

int rlimits_apply(const struct aj_limits *l, bool limit_procs, bool address_space,
		  struct setup_error *e)
{
	const rlim_t mib = 1024 * 1024;
	int rc;

	/* CPU: SIGXCPU at the soft limit, SIGKILL one second later at the hard
	 * one, for a program that catches or ignores SIGXCPU. */
	if ((rc = set_limit(RLIMIT_CPU, "cpu", l->cpu_sec, (rlim_t)l->cpu_sec + 1, e)))
		return rc;
	/* Address space: the process tier's memory limit. malloc fails and
	 * Python raises MemoryError instead of the host swapping or OOMing. (A
	 * memory cgroup, where there is one, bounds the whole run instead.) */
	if (address_space && (rc = set_limit(RLIMIT_AS, "address space", (rlim_t)l->memory_mb * mib,
			    (rlim_t)l->memory_mb * mib, e)))
		return rc;
	/* File size: a write past it fails with EFBIG (Python ignores SIGXFSZ). */
	if ((rc = set_limit(RLIMIT_FSIZE, "file size", (rlim_t)l->file_size_mb * mib,
			    (rlim_t)l->file_size_mb * mib, e)))
		return rc;
	if ((rc = set_limit(RLIMIT_NOFILE, "open files", l->open_files, l->open_files, e)))
		return rc;
	/* No core dumps: they would write the program's memory to disk. */
	if ((rc = set_limit(RLIMIT_CORE, "core", 0, 0, e)))
		return rc;
	/* A fixed stack makes thread stacks (sized from it) and recursion
	 * depth the same on every host. */
	if ((rc = set_limit(RLIMIT_STACK, "stack", 8 * mib, 8 * mib, e)))
		return rc;
	/* No locked memory: mlock could pin pages the host cannot reclaim. */
	if ((rc = set_limit(RLIMIT_MEMLOCK, "memlock", 0, 0, e)))
		return rc;
	/* No POSIX message queues: their memory is charged outside the run. */
	if ((rc = set_limit(RLIMIT_MSGQUEUE, "msgqueue", 0, 0, e)))
		return rc;
	/* Processes and threads, counted per real uid: a fork or thread bomb
	 * stops at the limit. Only meaningful with a uid no one else uses. */
	if (limit_procs && (rc = set_limit(RLIMIT_NPROC, "processes", l->pids, l->pids, e)))
		return rc;
	return 0;
}
