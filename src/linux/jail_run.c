/* JAIL_RUN: one run of a program (jail_run). init waits for the
 * supervisor's "go", forks the program, reaps the namespace until the
 * program ends and reports its end; see jail.c's theory of operation. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "jail_plan.h"
#include "supervise.h"

#include "launch.inc" /* launch_py: src/core/launch.py */

__attribute__((noreturn)) static void run_init(const struct plan *p)
{
	jail_init_until_go(p);
	struct plan run;
	int verdict_r = jail_init_verdict_pipe(p, &run);
	pid_t pid = jail_init_start_inside(&run, "fork the program");
	report_started(p->report_w);
	init_wait_and_report(pid, p->report_w, verdict_r);
}

int jail_run(const struct jail_spec *s, struct aj_result *res)
{
	struct plan p;
	jail_plan_init(&p, s, JAIL_RUN);
	/* main.py through the launcher, as `python3 -I -u main.py`, which
	 * also writes the verdict pipe on a MemoryError (src/core/launch.py). */
	char *const argv[] = {(char *)s->python, "-I", "-u", "-c", (char *)launch_py, NULL};
	memcpy(p.argv, argv, sizeof argv);
	struct aj_error err = {0};
	struct jail_pipes jp;
	int pidfd = -1;
	int rc;

	if ((rc = jail_pipes_open(&jp, &p))) {
		result_sandbox_error(res, "pipes: %s", errno_name(-rc));
		goto done;
	}
	double start = now_ms();
	pid_t pid;
	if ((rc = jail_clone_init(&p, run_init, &pid, &pidfd, &err))) {
		result_sandbox_error(res, "%s", err.message);
		goto done;
	}
	jail_pipes_close_child_ends(&jp);
	if (write_full(jp.life[1], "g", 1) != 0) {
		/* init is gone already; supervise() reports how. */
	}
	struct supervised sv = {.pid = pid, .pidfd = pidfd, .out_fd = jp.out[0],
				.err_fd = jp.err[0], .report_fd = jp.report[0],
				.cancel_fd = s->cancel_fd, .start_ms = start, .cgroup = s->cgroup,
				.stream = s->stream, .clock_at_start = true};
	rc = supervise_run(&sv, &s->cfg->limits, res);
done:
	jail_close_fd(&pidfd);
	jail_pipes_close(&jp);
	return rc;
}
