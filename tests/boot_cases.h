/* Cases for the tiers whose PID 1 is boot.py (src/boot/boot.py): docker
 * and gvisor. A tier's test file includes this header, sets
 * fixture.count_leftovers, and lists the cases with HOSTILE_TEST. */
#ifndef AJ_TEST_BOOT_CASES_H
#define AJ_TEST_BOOT_CASES_H

#include "src/boot/egress.h"
#include "egress_cases.h"
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

/* ---- egress (docs/egress.md): what is particular to boot.py's way ---- */

/* Each run directory is gone (docker: the proxy socket's own; gvisor: the
 * sandbox's, the socket's inside): nothing of the proxy is left on the
 * host. */
static void assert_no_run_dirs(const struct aj_config *cfg)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s-docker", cfg->state_dir);
	assert_int_equal(count_dir_entries(dir, "run-"), 0);
	snprintf(dir, sizeof dir, "%s-gvisor", cfg->state_dir);
	assert_int_equal(count_dir_entries(dir, "run-"), 0);
}

/* What egress_boot_forwards_only runs, given the server's port, the case's
 * token, the port again, the socket's directory. */
#define EGRESS_BOOT_PROGRAM \
	"import os, socket, urllib.request\n" \
	"print(urllib.request.urlopen('http://127.0.0.1:%d/boot-%s', timeout=20)" \
	".read().decode().strip())\n" \
	"try:\n" \
	"    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n" \
	"    print('UNIX-SOCKET-MADE')\n" \
	"except OSError as e:\n" \
	"    print('unix socket', e.errno)\n" \
	"s = socket.socket()\n" \
	"s.settimeout(10)\n" \
	"try:\n" \
	"    s.connect(('127.0.0.1', %d))\n" \
	"    print('DIRECT-CONNECTED')\n" \
	"except OSError as e:\n" \
	"    print('direct', e.errno)\n" \
	"try:\n" \
	"    open('%s/file', 'w')\n" \
	"    print('HOST-DIR-WRITTEN')\n" \
	"except OSError as e:\n" \
	"    print('write', e.errno)\n"

/* boot.py forwards the sandbox's 127.0.0.1:3128 to the proxy's unix socket,
 * which is mounted read-only; the program itself makes no unix socket (the
 * policy's refusal, which boot.py sets again for it), and its loopback is
 * its own (a direct connection to the server's port is refused). Run on its
 * own and as a session's cell (EGRESS_SESSION_TEST). */
static void egress_boot_forwards_only(void **state)
{
	struct fixture *f = *state;
	int port = egress_case.port;
	struct aj_result r;
	run_code(&f->cfg, &r, EGRESS_BOOT_PROGRAM, port, f->token, port, BOOT_EGRESS_DIR);
	assert_status(&r, AJ_STATUS_OK);
	char want[80];
	snprintf(want, sizeof want, "egress-ok /boot-%s", f->token);
	if (!contains(r.stdout_buf, want))
		fail_msg("not reached through the proxy: %s %s", r.stdout_buf, r.stderr_buf);
	assert_true(contains(r.stdout_buf, "unix socket 1\n"));         /* EPERM */
	assert_true(contains(r.stdout_buf, "direct 111\n"));            /* ECONNREFUSED */
	assert_true(contains(r.stdout_buf, "write 30\n"));              /* EROFS */
	assert_int_equal(egress_server_connections(egress_case.server), 1);
	aj_result_free(&r);
	assert_no_run_dirs(&f->cfg);
}

#define BOOT_EGRESS_TABLE                                                                    \
	EGRESS_TABLE, EGRESS_TEST(egress_boot_forwards_only),                                 \
	EGRESS_SESSION_TEST(egress_boot_forwards_only)

#endif
