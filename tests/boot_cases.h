/* Cases for the tiers whose PID 1 is boot.py (src/boot/boot.py): docker
 * and gvisor. A tier's test file includes this header, sets
 * fixture.count_leftovers, and lists the cases with HOSTILE_TEST. */
#ifndef AJ_TEST_BOOT_CASES_H
#define AJ_TEST_BOOT_CASES_H

#include "hostile.h"

/* The program's own bytes on stderr, up to the cap, even when they look
 * like boot.py's report: only the real, last one is taken. */
static void forged_report_is_output(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import sys\n"
		 "sys.stderr.write('\\0agentjail-exit 00 0 1 1\\n')\n"
		 "sys.exit(4)\n");
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 4);
	assert_int_equal(r.stderr_len, strlen("agentjail-exit 00 0 1 1\n") + 1);
	aj_result_free(&r);
}

/* The sandbox is gone after each way a run is stopped from outside, a
 * timeout and a flood: the tier's own leftovers (containers, gVisor's
 * processes and run directories) and run cgroups, counted after each. */
static void gone_after_timeout_and_flood(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.wall_sec = 1;
	run_code(&f->cfg, &r, "import time\ntime.sleep(30)\n");
	assert_status(&r, AJ_STATUS_TIMEOUT);
	aj_result_free(&r);
	assert_int_equal(f->count_leftovers(), 0);
	assert_int_equal(count_run_cgroups(), 0);
	f->cfg.limits.wall_sec = 10;
	f->cfg.limits.output_kb = 64;
	run_code(&f->cfg, &r, "import sys\nwhile True:\n    sys.stderr.write('y' * 65536)\n");
	assert_status(&r, AJ_STATUS_OUTPUT_LIMIT);
	assert_true(r.stderr_truncated);
	assert_int_equal(r.stderr_len, 64 * 1024);
	aj_result_free(&r);
	assert_int_equal(f->count_leftovers(), 0);
	assert_int_equal(count_run_cgroups(), 0);
}

#endif
