/* The supervisor of a run whose sandbox is a process tree under an init of
 * ours (process, container, warm): the one loop (supervisor.h) with init's
 * hooks (its stop signal, then SIGKILL; its report pipe; its end), and what
 * init reported turned into an aj_result. */
#ifndef AJ_SUPERVISE_H
#define AJ_SUPERVISE_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "report.h"
#include "supervisor.h"

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
	/* Streaming hooks (supervisor_stream_of); zero: none. */
	struct supervisor_stream stream;
	/* init reports REPORT_STARTED once the sandbox is built and its
	 * program forked: the wall clock starts then, and the setup before it
	 * has a deadline of its own (SETUP_DEADLINE_SEC). Without it, the
	 * wall clock runs from start_ms. */
	bool clock_at_start;
};

/* Runs until the sandbox's init has ended and been reaped. Never fails:
 * whatever happens is in *o. */
void supervise(const struct supervised *s, const struct aj_limits *l, struct capture *out,
	       struct capture *err, struct outcome *o);

/* Fills res from the outcome (status, exit code or signal, usage, message)
 * and moves the captured streams into it. */
void outcome_to_result(const struct outcome *o, const struct aj_limits *l, struct capture *out,
		       struct capture *err, struct aj_result *res);

/* A call its interpreter answered: its wall time and streams into res
 * (the captures' bytes moved). The status is the reply's
 * (session_run_reply). */
void replied_to_result(double wall_ms, struct capture *out, struct capture *err,
		       struct aj_result *res);

/* A session interpreter's reply passed its cap (reply_max bytes): a broken
 * protocol, rule 1's sandbox_error (docs/design.md, "Status: the ladder"),
 * set as a fact for outcome_to_result. */
void outcome_reply_too_long(struct outcome *o, size_t reply_max);

/* A whole run's supervision: captures capped at the limits, supervise,
 * then res filled from the outcome. 0 if the program ran, -EPERM if res is
 * a sandbox_error. */
int supervise_run(const struct supervised *s, const struct aj_limits *l, struct aj_result *res);

/* The signal a supervisor sends init to stop the sandbox and report. */
#define STOP_SIGNAL SIGUSR1

/* The init side: PID 1 of the sandbox. Waits for the program (main_pid),
 * reaps every orphan, and on STOP_SIGNAL from outside the namespace kills
 * everything else in it; then reports to report_fd (with the program's
 * verdict pipe's word, read from verdict_r; -1: none) and exits, which
 * makes the kernel kill whatever is left in the namespace. */
int init_install_stop_handler(void);
__attribute__((noreturn)) void init_wait_and_report(pid_t main_pid, int report_fd,
						     int verdict_r);

#endif
