/* The jail's own pieces, shared by its four modes (jail.h's enum
 * jail_mode) and by no one else: the plan init and the inside process work
 * from, and the steps every mode takes, each written once.
 *
 *   jail_plan.c    the supervisor's shared steps: plan, pipes, clone, end
 *   jail_init.c    init's shared steps: build the sandbox, wait, fail
 *   jail_inside.c  the inside process: stdio, limits, uid, filter, exec
 *   jail_root.c    jail_populate_root, for the tiers' setup_root
 *   jail_run.c, jail_session.c, jail_warm.c: one mode's init body and its
 *                  entry point (jail_warm.c: the zygote and its runs)
 */
#ifndef AJ_JAIL_PLAN_H
#define AJ_JAIL_PLAN_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../core/contract.h"
#include "jail.h"

/* Namespaces every run gets. A user namespace is added when not root. */
extern const unsigned long jail_base_namespaces;

/* The namespaces a zygote makes ahead of a warm run, in jail_spec.spare_ns
 * order, and their names in /proc/self/ns. */
extern const int jail_spare_ns_types[3];
extern const char *const jail_spare_ns_names[3];

/* Everything init and inside need, prepared before clone: after it they may
 * not allocate. */
struct plan {
	/* The caller's spec with the mode of the entry point that made the
	 * plan (jail_plan_init); s points at it. */
	struct jail_spec spec;
	const struct jail_spec *s;
	int out_w, err_w, report_w, life_r;
	int req_r, rep_w;           /* sessions: the interpreter's fds 3 and 4 */
	int verdict_w;              /* one-shot runs: the program's AJ_VERDICT_FD (init's pipe) */
	int launch_fd;              /* one-shot runs: the compiled launcher (a memfd) for the
				     * program's JAIL_LAUNCH_FD; -1: the launcher's source in argv */
	struct aj_limits limits;    /* what the inside process gets */
	/* A warm run's: the zygote's Python's own handlers for these (as a
	 * cold Python sets them), which init's reset must not take from the
	 * program's process. */
	struct sigaction python_sigs[3];
	char *argv[8];
	char *envp[CONTRACT_ENVIRONMENT_MAX + 1];
};

/* ---- the supervisor's side (jail_plan.c) ---- */

/* A plan for s in the given mode: the run's limits and environment, no
 * pipe yet (every fd -1), argv empty. */
void jail_plan_init(struct plan *p, const struct jail_spec *s, enum jail_mode mode);

/* The pipes between the supervisor and a sandbox's init; -1: not made. */
struct jail_pipes {
	int out[2], err[2], report[2], life[2];
	int req[2], rep[2]; /* a session's requests to and replies from the interpreter */
};
/* Makes the pipes the plan's mode uses and gives the plan their child
 * ends: the zygote's stdout and stderr are one pipe (out), only a session
 * has req and rep. 0, or -errno (jail_pipes_close cleans up either way). */
int jail_pipes_open(struct jail_pipes *jp, struct plan *p);
/* Closes the ends init took with it (the supervisor must not hold a write
 * end of what it reads to EOF). */
void jail_pipes_close_child_ends(struct jail_pipes *jp);
/* Closes every end still held (those handed over are -1 by then). */
void jail_pipes_close(struct jail_pipes *jp);

/* Clones a sandbox's init into new namespaces (a user namespace too when
 * not root), born in the run's v2 cgroup where the spec has one; body(p)
 * in the child, the mode's init. 0 with *pid and *pidfd, or -errno (*pid
 * untouched) with err naming the namespace this machine refuses. */
int jail_clone_init(const struct plan *p, void (*body)(const struct plan *p), pid_t *pid,
		    int *pidfd, struct aj_error *err);

/* Kills a sandbox's init (and so everything in it: its namespaces and
 * mounts go with it) and reaps it. */
void jail_kill_reap(int pidfd);

void jail_close_fd(int *fd);

/* ---- init's side (jail_init.c) ---- */

/* init's steps up to a built sandbox, shared by every mode. */
int jail_init_build(const struct plan *p, struct setup_error *e);
/* A run's and a zygote's init up to the supervisor's "go": built, then
 * (after it) in a cgroup namespace of the run's; a step that fails is
 * reported and ends init, and so does the supervisor's end. */
void jail_init_until_go(const struct plan *p);
/* Waits for the supervisor's "go" on fd: false at its EOF (the
 * supervisor is gone, or discarded a sandbox made ahead). */
bool jail_init_wait_go(int fd);
/* After "go" on fd: the program's source (its length, then it; see
 * jail_send_program) into the workspace. A source that does not come
 * whole is reported and ends init. */
void jail_init_take_program(const struct plan *p, int fd);
/* Joined to the run's cgroup by now: root the program's view of cgroups
 * there, so /proc/self/cgroup shows no host path. */
int jail_init_cgroup_ns(const struct jail_spec *s, struct setup_error *e);
/* SIGCHLD is taken only inside ppoll(..., during): a child that ends
 * between a reaping loop and ppoll still wakes it. 0, or -errno. */
int jail_sigchld_only_in_ppoll(sigset_t *during);
/* A one-shot run's verdict pipe (AJ_VERDICT_FD, src/core/status.h): *run
 * becomes a copy of p whose inside process gets the pipe's write end as
 * its fd 3. Returns the read end, which init keeps (non-blocking) to read
 * once the program has ended (init_wait_and_report); init closes the write
 * end once the inside process is started. A pipe that cannot be made is
 * reported and ends init. */
int jail_init_verdict_pipe(const struct plan *p, struct plan *run);
/* Forks the inside process, which execs the plan's argv, and closes
 * init's copies of its output pipes (the supervisor reads them to EOF).
 * Returns its pid; a failed fork is reported as `what` and ends init. */
pid_t jail_init_start_inside(const struct plan *p, const char *what);
/* Reaps init's children until `pid` ends, and returns its wait status.
 * The life socket's EOF (or a byte out of turn: the host is gone, or closed
 * the sandbox mid-call) ends the sandbox instead: init kills all and
 * exits. */
int jail_init_wait(const struct plan *p, pid_t pid, const sigset_t *during);
/* A step failed: report it (the run is refused) and end init. */
__attribute__((noreturn)) void jail_init_fail(const struct plan *p, const struct setup_error *e);

/* ---- the inside process (jail_inside.c) ---- */

/* The inside steps up to the program: 0 with *report the lifted report
 * fd, or -errno with e filled (report it on *report). */
int jail_inside_prepare(const struct plan *p, int *report, struct setup_error *e);
/* The inside steps, then exec the plan's argv. */
__attribute__((noreturn)) void jail_inside_exec(const struct plan *p);

#endif
