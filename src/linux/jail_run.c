/* JAIL_RUN: one run of a program (jail_run). init builds the sandbox,
 * waits for the supervisor's "go", reads the program's source after it
 * into the workspace, forks the program, reaps the namespace until the
 * program ends and reports its end; see jail_plan.c's theory of operation.
 * Built ahead (jail_run_prepare) or on the run's own clock (jail_run), the
 * sandbox is the same: the source arrives after "go" either way. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail_plan.h"
#include "supervise.h"

#include "launch.inc" /* launch_py: src/core/launch.py */

const char *jail_launcher_source(void)
{
	return launch_py;
}

/* The compiled launcher in a memfd of init's own, readable by the program's
 * uid (it reopens it as JAIL_LAUNCH_PATH) and never writable by it. -1 with e. */
static int launcher_memfd(const struct jail_spec *s, struct setup_error *e)
{
	int fd = memfd_create("agentjail-launcher", MFD_CLOEXEC);
	if (fd < 0)
		return setup_fail(e, errno, "launcher: memfd"), -1;
	int rc = write_full(fd, s->launch_pyc, s->launch_pyc_len);
	if (rc || fchmod(fd, 0444) < 0) {
		close(fd);
		return setup_fail(e, rc ? -rc : errno, "launcher: write"), -1;
	}
	return fd;
}

__attribute__((noreturn)) static void run_init(const struct plan *p)
{
	jail_init_until_go(p);
	struct setup_error e;
	jail_init_take_program(p, p->life_r);
	struct plan run;
	int verdict_r = jail_init_verdict_pipe(p, &run);
	if (p->s->launch_pyc && (run.launch_fd = launcher_memfd(p->s, &e)) < 0)
		jail_init_fail(p, &e);
	pid_t pid = jail_init_start_inside(&run, "fork the program");
	if (run.launch_fd >= 0)
		close(run.launch_fd); /* the program's alone now */
	report_started(p->report_w);
	init_wait_and_report(pid, p->report_w, verdict_r);
}

int jail_run_prepare(const struct jail_spec *s, struct jail_ready *r, struct aj_error *err)
{
	struct plan p;
	jail_plan_init(&p, s, JAIL_RUN);
	/* main.py through the launcher, as `python3 -I -u main.py`, which
	 * also writes the verdict pipe on a MemoryError (src/core/launch.py). */
	char *const argv[] = {(char *)s->python, "-I", "-u", "-c", (char *)launch_py, NULL};
	/* Or the launcher compiled ahead, run from its memfd at fd 4. */
	char *const argv_pyc[] = {(char *)s->python, "-I", "-u", JAIL_LAUNCH_PATH, NULL};
	if (s->launch_pyc)
		memcpy(p.argv, argv_pyc, sizeof argv_pyc);
	else
		memcpy(p.argv, argv, sizeof argv);
	struct jail_pipes jp;
	int rc;
	*r = (struct jail_ready){.pidfd = -1, .out_r = -1, .err_r = -1, .report_r = -1, .life_w = -1};
	if ((rc = jail_pipes_open(&jp, &p))) {
		jail_pipes_close(&jp);
		return error_set(err, rc, "pipes: %s", errno_name(-rc));
	}
	if ((rc = jail_clone_init(&p, run_init, &r->pid, &r->pidfd, err))) {
		jail_pipes_close(&jp);
		return rc;
	}
	jail_pipes_close_child_ends(&jp);
	r->out_r = jp.out[0];
	r->err_r = jp.err[0];
	r->report_r = jp.report[0];
	r->life_w = jp.life[1];
	jp.out[0] = jp.err[0] = jp.report[0] = jp.life[1] = -1;
	jail_pipes_close(&jp);
	return 0;
}

void jail_send_program(int fd, const char *code, size_t len)
{
	char head[9] = "g";
	uint64_t n = len;
	memcpy(head + 1, &n, sizeof n);
	if (send_full(fd, head, sizeof head) || send_full(fd, code, len))
		return;
	shutdown(fd, SHUT_WR);
}

int jail_run_ready(struct jail_ready *r, const struct jail_spec *s, struct aj_result *res)
{
	double start = now_ms();
	jail_send_program(r->life_w, s->code, s->code_len);
	struct supervised sv = {.pid = r->pid, .pidfd = r->pidfd, .out_fd = r->out_r,
				.err_fd = r->err_r, .report_fd = r->report_r,
				.cancel_fd = s->cancel_fd, .start_ms = start, .cgroup = s->cgroup,
				.stream = s->stream, .clock_at_start = true};
	int rc = supervise_run(&sv, &s->cfg->limits, res);
	jail_close_fd(&r->pidfd); /* reaped by supervise */
	jail_ready_discard(r);
	return rc;
}

void jail_ready_discard(struct jail_ready *r)
{
	if (r->pidfd >= 0)
		jail_kill_reap(r->pidfd);
	jail_close_fd(&r->pidfd);
	jail_close_fd(&r->out_r);
	jail_close_fd(&r->err_r);
	jail_close_fd(&r->report_r);
	jail_close_fd(&r->life_w);
}

int jail_run(const struct jail_spec *s, struct aj_result *res)
{
	struct jail_ready r;
	struct aj_error err = {0};
	int rc = jail_run_prepare(s, &r, &err);
	if (rc) {
		result_sandbox_error(res, "%s", err.message);
		return rc;
	}
	return jail_run_ready(&r, s, res);
}
