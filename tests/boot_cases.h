/* Cases for the tiers whose PID 1 is boot.py (src/docker/boot.py): docker
 * and gvisor. A tier's test file includes this header and lists the cases
 * with HOSTILE_TEST. */
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

#endif
