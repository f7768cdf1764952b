/* The jail: one run of a program in a fresh set of namespaces on the host
 * kernel, supervised. The process and container tiers are this engine with a
 * different filesystem view (and, for the container, a cgroup); see jail.c
 * for the theory of operation. */
#ifndef AJ_JAIL_H
#define AJ_JAIL_H

#include <stdbool.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "report.h"

/* Where the program runs and what it runs, as seen inside the sandbox. */
#define JAIL_WORKSPACE "/tmp/work"
#define JAIL_PROGRAM "main.py"

struct jail_spec {
	const struct aj_config *cfg;
	const char *code;
	size_t code_len;
	int cancel_fd;              /* readable: stop the run; -1: none */
	const char *python;         /* the interpreter's path inside the view */
	bool userns;                /* not root: a user namespace provides the privilege */
	bool cgroup_ns;             /* a cgroup namespace rooted at the run's cgroup */
	bool address_space_limit;   /* RLIMIT_AS is the memory limit (no cgroup) */
	bool into_cgroup;           /* init is born in the cgroup v2 dir cgroup_fd */
	int cgroup_fd;
	const char *const *join_cgroups; /* v1 tasks files init joins first */
	uid_t uid, outer_uid;       /* the program's uid; the caller's */
	gid_t gid, outer_gid;
	/* Builds the filesystem view, in init, in its own mount namespace, and
	 * leaves init's root and cwd at it. Runs after no allocation is allowed
	 * any more: stack buffers only. */
	int (*setup_root)(const struct jail_spec *s, struct setup_error *e);
	const void *tier;           /* the tier's own data for setup_root */
};

/* One run. Fills res fully; returns 0 if the program ran, -errno if the
 * sandbox could not be built (res says why). */
int jail_run(const struct jail_spec *s, struct aj_result *res);

/* For setup_root: under `root` ("" for the host's /), mounts the run's own
 * /dev, one size-limited tmpfs for /tmp, /var/tmp, /dev/shm and the
 * workspace (with the program written into it), and a /proc of the run's
 * pid namespace. */
int jail_populate_root(const struct jail_spec *s, const char *root, struct setup_error *e);

#endif
