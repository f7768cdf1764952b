/* The supervisor: what the host does while a sandbox runs. Shared by every
 * tier whose sandbox is a process tree under an init of ours (process,
 * container): it enforces the wall clock, reads and caps both output streams
 * as they arrive, stops the whole sandbox on a timeout or a flood, and turns
 * what init reported into an aj_result. */
#ifndef AJ_SUPERVISE_H
#define AJ_SUPERVISE_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "report.h"

struct cgroup_run;

struct supervised {
	pid_t pid;       /* the sandbox's init (PID 1 of its pid namespace) */
	int pidfd;
	int out_fd;      /* read ends, non-blocking */
	int err_fd;
	int report_fd;
	int cancel_fd;   /* readable when the caller cancels; -1: none */
	double start_ms;
	/* The run's cgroup, whose OOM kills the status rules read; NULL:
	 * none (the process tier). */
	const struct cgroup_run *cgroup;
};

struct outcome {
	bool timed_out;
	bool cancelled;
	bool output_overflow;
	bool exited_report;         /* init reported the program's end */
	bool setup_failed;          /* init reported a protection it could not apply */
	bool forced_kill;           /* init did not stop in time and was SIGKILLed */
	struct sandbox_report report;
	char setup_message[sizeof(struct sandbox_report){0}.message];
	int init_wstatus;
	bool init_reaped;           /* init was ours to reap (not a warm run's) */
	struct rusage init_rusage;
	double wall_ms;
	uint64_t oom_kills;         /* the kernel's, in the run's memory cgroup */
};

/* Runs until the sandbox's init has ended and been reaped. Never fails:
 * whatever happens is in *o. */
void supervise(const struct supervised *s, const struct aj_limits *l, struct capture *out,
	       struct capture *err, struct outcome *o);

/* Reads what fd has now into c, a bounded number of reads (a flood cannot
 * starve the caller's clock): sets *overflow when c's cap was passed;
 * false at EOF or on an error. */
bool supervise_drain(int fd, struct capture *c, bool *overflow);

/* Fills res from the outcome (status, exit code or signal, usage, message)
 * and moves the captured streams into it. */
void outcome_to_result(const struct outcome *o, const struct aj_limits *l, struct capture *out,
		       struct capture *err, struct aj_result *res);

/* A whole run's supervision: captures capped at the limits, supervise,
 * then res filled from the outcome. 0 if the program ran, -EPERM if res is
 * a sandbox_error. */
int supervise_run(const struct supervised *s, const struct aj_limits *l, struct aj_result *res);

/* The signal a supervisor sends init to stop the sandbox and report. */
#define STOP_SIGNAL SIGUSR1

/* The init side: PID 1 of the sandbox. Waits for the program (main_pid),
 * reaps every orphan, and on STOP_SIGNAL from outside the namespace kills
 * everything else in it; then reports to report_fd and exits, which makes
 * the kernel kill whatever is left in the namespace. */
int init_install_stop_handler(void);
__attribute__((noreturn)) void init_wait_and_report(pid_t main_pid, int report_fd);

#endif
