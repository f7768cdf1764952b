/* Cgroups for one run: memory (no swap), pids and CPU quota, on cgroup v2
 * (what users run) or v1 (separate hierarchies per controller, as on this
 * hybrid machine). A run's cgroup is made before the program starts and
 * removed after it ended. */
#ifndef AJ_CGROUP_H
#define AJ_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "report.h"

#define CGROUP_DEFAULT_ROOT "/sys/fs/cgroup"
#define CGROUP_PARENT "agentjail"

enum cgroup_controller { CG_MEMORY, CG_PIDS, CG_CPU, CG_COUNT };
/* v1: the freezer hierarchy's directory, after the controllers', where
 * one is mounted (a session's pause freezes it; nothing is limited there). */
#define CG_FREEZER CG_COUNT
#define CG_DIRS (CG_COUNT + 1)

struct cgroup_layout {
	int version;                   /* 1 or 2 */
	/* v2: one directory (the parent of every run's cgroup); v1: one per
	 * controller, and the freezer's where it is. */
	char parent[CG_DIRS][300];
	bool freezer;                  /* runs' cgroups can be frozen */
};

struct cgroup_run {
	int version;
	int ndirs;
	char dir[CG_DIRS][400];        /* v2 uses dir[0] only */
	char memory_dir[400];
	/* v1: each hierarchy's tasks file, for the run's init to join itself
	 * (cgroup_join_self); NULL-terminated. */
	char tasks_file[CG_DIRS][420];
	const char *tasks_files[CG_DIRS + 1];
	bool can_freeze;               /* cgroup_freeze works on it */
	bool frozen;                   /* by cgroup_freeze, not thawed since */
};

/* Copies a cgroup_run (its tasks_files point into its own storage, so a
 * plain assignment would point into the source's). */
void cgroup_run_copy(struct cgroup_run *dst, const struct cgroup_run *src);

/* Finds the controllers under root (NULL: /sys/fs/cgroup) and makes sure
 * agentjail's parent cgroup exists with them enabled. Fails with the exact
 * reason ("cgroup v2: the memory controller is not enabled in
 * /sys/fs/cgroup/cgroup.subtree_control: ..."). */
int cgroup_prepare(const char *root, struct cgroup_layout *lay, struct aj_error *err);

/* Whether dir/name is what a run named after its cgroup (run-PID-...) left
 * when its maker died: a directory at least ten seconds old (far more than
 * the moment between making it and using it) of a pid no process of this
 * pid namespace has. Fills path (n bytes) with dir/name. */
bool cgroup_run_orphaned(const char *dir, const char *name, char *path, size_t n);

/* A new cgroup for one run with the run's limits: memory and swap, pids, one
 * CPU's worth of quota. */
int cgroup_create(const struct cgroup_layout *lay, const struct aj_limits *l,
		  struct cgroup_run *run, struct aj_error *err);
/* cgroup v1, in the run's single-threaded init, before it leaves the host's
 * view: moves the calling thread into each of files (tasks files). Moving
 * one's own thread skips the kernel's global threadgroup lock, whose write
 * side waits for an RCU grace period: 8-15 ms on a busy kernel, against
 * microseconds. Async-signal-safe. */
int cgroup_join_self(const char *const *files, struct setup_error *e);
/* cgroup v2: the run's directory, open for clone3's CLONE_INTO_CGROUP
 * (a process born there needs no migration); -errno on v1. */
int cgroup_open_dir(const struct cgroup_run *run);
/* After the run: how often the OOM killer struck in it, and its peak memory. */
void cgroup_usage(const struct cgroup_run *run, uint64_t *oom_kills, uint64_t *peak_kb);
/* CPU time used in the run's cgroup so far, in ms: v2's cpu.stat (every
 * task that ever ran there); v1, whose cpu hierarchy keeps no usage, the
 * sum of the user and system time of the processes in it now and of the
 * children they reaped (/proc/PID/stat). -1 if it cannot be read. */
double cgroup_cpu_ms(const struct cgroup_run *run);
/* SIGKILLs every process in the run's cgroup until none is left (or 2 s
 * have passed): for a sandbox whose processes are not under an init of
 * ours (the gvisor tier's runsc, sentry and gofer). 0, or -EBUSY if some
 * process would not go. */
int cgroup_kill_all(const struct cgroup_run *run);
/* Freezes every process of the run (frozen), or thaws them, and waits
 * until the kernel says it is done: 0; -ENOTSUP where the run cannot be
 * frozen (v1 without a freezer hierarchy); -errno with err (a freeze that
 * fails is thawed back: half frozen is no state to leave a run in). A
 * frozen task takes no CPU and keeps its memory; on v1 it cannot even die
 * until thawed, so a frozen run is thawed (cgroup_thaw) before its
 * processes are killed. */
int cgroup_freeze(struct cgroup_run *run, bool frozen, struct aj_error *err);
/* Thaws the run if cgroup_freeze froze it; nothing otherwise. */
void cgroup_thaw(struct cgroup_run *run);
/* Removes the run's cgroup; it must be empty (the run has been reaped). */
int cgroup_destroy(struct cgroup_run *run, struct aj_error *err);

#endif
