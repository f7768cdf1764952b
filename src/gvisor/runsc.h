/* Driving Debian's runsc (gVisor): finding it, its version, and starting
 * one `runsc run` inside a run's cgroup with the run's pipes as its stdio. */
#ifndef AJ_GVISOR_RUNSC_H
#define AJ_GVISOR_RUNSC_H

#include <stdbool.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "../linux/cgroup.h"

/* runsc on PATH, else /usr/bin/runsc: its absolute path, or an error
 * naming the package to install. */
int runsc_find(char *out, size_t n, struct aj_error *err);

/* The first line of `runsc --version` ("runsc version 0.0~20221219.0"). */
int runsc_version(const char *runsc, char *out, size_t n, struct aj_error *err);

struct runsc_launch {
	const char *runsc;
	const char *platform;      /* "ptrace" or "kvm" */
	const char *state;         /* runsc --root: this sandbox's own */
	const char *bundle;
	const char *id;            /* machine-unique */
	const struct cgroup_run *cg;
	int in_fd, out_fd, err_fd; /* the sandbox's stdio */
	bool host_uds;             /* egress: the sandbox may connect to host unix sockets */
};

/* Starts `runsc run` under a keeper process, runsc born in (v2) or moved
 * into (v1) the run's cgroup, so that runsc, its sandbox and its gofer are
 * all counted and killed there. The keeper stays outside the cgroup as the
 * sandbox's subreaper: it reaps every process of the sandbox, ends what is
 * left once runsc has ended, and itself ends only when nothing of the
 * sandbox is left, as runsc ended (its exit code or its signal). It is
 * never reaped by the kernel on its own: wait for it with waitid(P_PIDFD,
 * ..., WEXITED | __WALL). Everything dies with the calling thread
 * (PDEATHSIG). Returns the keeper's pid and a pidfd, or -errno with err
 * set. */
pid_t runsc_spawn(const struct runsc_launch *l, int *pidfd, struct aj_error *err);

#endif
