/* One gVisor sandbox, from its start to its end: the run's uid slot,
 * cgroup, run directory and bundle, and `runsc run` under its keeper with
 * boot.py inside waiting for its program on stdin. */
#ifndef AJ_GVISOR_SANDBOX_H
#define AJ_GVISOR_SANDBOX_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "../linux/cgroup.h"
#include "../linux/creds.h"

struct egress_proxy;

/* What every sandbox of an open tier is started from. */
struct gvisor_host {
	char runsc[PATH_MAX];
	char version[128];
	char platform[16];      /* "ptrace" or "kvm" */
	char why[400];          /* why that platform */
	char root[PATH_MAX];    /* the image's root directory */
	char run_base[PATH_MAX];
	struct cgroup_layout cgroups;
};

struct gvisor_sandbox {
	struct uid_slot slot;
	struct cgroup_run cg;
	bool have_cg;
	char dir[PATH_MAX];     /* run_base/NAME: bundle/ and state/ */
	char id[96];
};

/* A sandbox started: runsc running under its keeper, boot.py inside
 * waiting for its program on stdin. */
struct gvisor_started {
	struct gvisor_sandbox sb;
	bool egress;            /* the proxy's socket is mounted (src/boot/egress.h) */
	pid_t keeper_pid;
	int keeper_pidfd;
	int in_fd;              /* runsc's stdin (a socket): ours, non-blocking */
	int out_fd, err_fd;     /* runsc's stdout and stderr: ours, non-blocking */
};

/* Starts a sandbox on platform ("ptrace" or "kvm"): 0, or -errno with err
 * set and nothing left. egress: the run's or session's proxy, listening on a
 * socket in the sandbox's run directory before the sandbox starts; NULL:
 * none. */
int gvisor_start(const struct gvisor_host *st, const char *platform, const struct aj_config *cfg,
		 struct egress_proxy *egress, struct gvisor_started *s, struct aj_error *err);

/* Ends every process of a started sandbox and reaps its keeper, within
 * END_BOUND_MS. The keeper ends only once nothing of the sandbox is left
 * (gvisor/runsc.c), so its end is the proof that the sandbox is gone.
 * 0 with *si how the keeper ended (as runsc did), or -EBUSY with err
 * naming what was left, the keeper killed (its orphans go to PID 1). */
int gvisor_started_end(struct gvisor_started *s, siginfo_t *si, struct aj_error *err);

/* Ends a started sandbox that never ran (or whose run is over): nothing of
 * it is left, or err says what is. */
int gvisor_started_destroy(struct gvisor_started *s, struct aj_error *err);

#endif
