/* One run in a gVisor sandbox: see run.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../boot/egress.h"
#include "../boot/run.h"
#include "../gvisor/run.h"
#include "../gvisor/watch.h"
#include "../linux/stream_hooks.h"

/* The program, in a started sandbox, under the wall clock from start_ms;
 * the sandbox is destroyed after. Fills res fully. */
int gvisor_run_in(struct gvisor_started *s, const struct aj_config *cfg,
		  const struct run_request *req, double start_ms, struct aj_result *res)
{
	const struct aj_limits *l = &cfg->limits;
	struct aj_error err = {0};
	struct outcome o;
	memset(&o, 0, sizeof o);
	char nonce[32];
	size_t input_len = 0;
	char *input = boot_run_input(req->code, req->len, l->wall_sec, nonce, sizeof nonce,
				     s->egress ? BOOT_EGRESS_SOCKET : NULL, &input_len);
	if (!input) {
		result_sandbox_error(res, "gvisor: out of memory");
		res->wall_ms = now_ms() - start_ms;
		gvisor_started_destroy(s, &err);
		return -ENOMEM;
	}
	struct watch w = {.pidfd = s->keeper_pidfd, .in_fd = s->in_fd, .out_fd = s->out_fd,
			  .err_fd = s->err_fd, .cancel_fd = req->cancel_fd, .input = input,
			  .input_len = input_len};
	capture_init(&w.out, (size_t)l->output_kb * 1024);
	/* Room past the cap for boot.py's report; the cap is applied to the
	 * program's own bytes once the report is stripped. */
	capture_init(&w.err, (size_t)l->output_kb * 1024 + BOOT_REPORT_MAX);
	struct boot_stream bs;
	w.stream = boot_stream_hooks(&bs, supervisor_stream_of(req->tap), &w.err,
				     (size_t)l->output_kb * 1024);
	watch_run(&w, &s->sb, l, start_ms, &o);
	s->in_fd = w.in_fd; /* closed by the watch once the program was in */

	/* The result waits for the sandbox's end: a result means it is gone. */
	siginfo_t si;
	int ended = gvisor_started_end(s, &si, &err);
	supervisor_drain(&w.sv); /* what it wrote is in the pipes */
	/* runsc exits with the program's code, or 128 + the signal that ended
	 * it; killed here, it has none. */
	int exit_code = si.si_code == CLD_EXITED ? si.si_status : -1;
	o.init_wstatus = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status;
	uint64_t oom_kills = 0, peak_kb = 0;
	cgroup_usage(&s->sb.cg, &oom_kills, &peak_kb);

	/* The program's own stderr is capped like stdout. */
	boot_finish_run(&w.err, nonce, exit_code, (size_t)l->output_kb * 1024, &o);
	boot_stream_finish(&bs);
	char why[200], unknown[400];
	boot_last_line(&w.err, why, sizeof why);
	/* Facts for the status rules (src/core/status.h): the OOM killer's
	 * count, and what runsc said of an end boot.py did not report. */
	o.oom_kills = oom_kills;
	snprintf(unknown, sizeof unknown,
		 "gvisor: the sandbox ended without a report (runsc %s %d)%s%s", exit_code >= 0 ? "exit code" : "killed by signal",
		 exit_code >= 0 ? exit_code : si.si_status, why[0] ? ": " : "", why);
	o.unknown_end = unknown;
	outcome_to_result(&o, l, &w.out, &w.err, res);
	if (!o.exited_report && peak_kb)
		res->memory_kb = peak_kb;
	if (!o.exited_report && w.cpu_used > 0)
		res->cpu_ms = w.cpu_used; /* the sandbox's, as last read */
	free(input);
	int rc = res->status == AJ_STATUS_SANDBOX_ERROR ? -EIO : 0;
	struct aj_error left = {0};
	if (ended)
		left = err;
	if (gvisor_started_destroy(s, &left) || ended) {
		/* Whatever the program's verdict, the host kept something of
		 * its sandbox: the result says so, never returns quietly. */
		if (res->status == AJ_STATUS_SANDBOX_ERROR && res->message)
			result_sandbox_error(res, "%s; and %s", res->message, left.message);
		else
			result_sandbox_error(res, "%s", left.message);
		rc = -EBUSY;
	}
	return rc;
}

int gvisor_run_with(const struct gvisor_host *st, const char *platform,
		    const struct aj_config *cfg, const struct run_request *req,
		    struct aj_result *res)
{
	struct gvisor_started s;
	struct aj_error err = {0};
	double start_ms = now_ms();
	int rc = gvisor_start(st, platform, cfg, req->egress, &s, &err);
	if (rc) {
		result_sandbox_error(res, "%s", err.message);
		res->wall_ms = now_ms() - start_ms;
		return rc;
	}
	return gvisor_run_in(&s, cfg, req, start_ms, res);
}
