/* Cases for the tiers whose PID 1 is boot.py (src/boot/boot.py): docker
 * and gvisor. A tier's test file includes this header, sets
 * fixture.count_leftovers, and lists the cases with HOSTILE_TEST. */
#ifndef AJ_TEST_BOOT_CASES_H
#define AJ_TEST_BOOT_CASES_H

#include <jansson.h>

#include "hostile.h"
#include "egress_server.h"

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

/* ---- egress (docs/egress.md): the proxy reached through boot.py ---- */

/* What the egress cases' program does, given the test server's port:
 * fetches the server through the proxy (urllib, HTTP_PROXY from E1's
 * egress rows), asks for a host no rule names, connects to the server
 * directly, and tries to make a unix socket of its own. */
#define EGRESS_PROGRAM                                                                     \
	"import os, socket, urllib.request\n"                                              \
	"port = %d\n"                                                                      \
	"print('proxy-env', os.environ.get('HTTP_PROXY'))\n"                               \
	"print(urllib.request.urlopen('http://127.0.0.1:%%d/x' %% port, timeout=30)"      \
	".read().decode())\n"                                                              \
	"try:\n"                                                                           \
	"    urllib.request.urlopen('http://unlisted.example/', timeout=30)\n"             \
	"    print('UNLISTED-REACHED')\n"                                                  \
	"except Exception as e:\n"                                                         \
	"    print('unlisted-refused', type(e).__name__)\n"                                \
	"s = socket.socket()\n"                                                            \
	"s.settimeout(10)\n"                                                               \
	"try:\n"                                                                           \
	"    s.connect(('127.0.0.1', port))\n"                                             \
	"    print('DIRECT-CONNECTED')\n"                                                  \
	"except OSError as e:\n"                                                           \
	"    print('direct-failed', e.errno)\n"                                            \
	"try:\n"                                                                           \
	"    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"                          \
	"    print('UNIX-SOCKET-MADE')\n"                                                  \
	"except OSError as e:\n"                                                           \
	"    print('unix-refused', e.errno)\n"

/* The egress log's entry for host, or NULL. */
static json_t *egress_entry(json_t *log, const char *host)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(log, "connections"), i, c) {
		const char *h = json_string_value(json_object_get(c, "host"));
		if (h && !strcmp(h, host))
			return c;
	}
	return NULL;
}

/* One result of EGRESS_PROGRAM: the server reached through the proxy
 * (served counted on the server's side too), the unlisted host refused, the
 * direct connection refused (the sandbox's loopback is its own), no unix
 * socket for the program, and a decision log. With whole_log (a run's,
 * taken once the proxy stopped), the log's entries too: the allowed one and
 * the refusal with its reason. A session call's log is taken while the
 * proxy runs, and the proxy logs a connection once it has ended, which may
 * be just after the call (a later call's log has it). */
static void check_egress_result(struct aj_result *r, const struct egress_server *srv,
				const char *body, bool whole_log)
{
	assert_status(r, AJ_STATUS_OK);
	assert_true(contains(r->stdout_buf, "proxy-env http://127.0.0.1:3128"));
	assert_true(contains(r->stdout_buf, body));
	assert_true(contains(r->stdout_buf, "unlisted-refused"));
	assert_false(contains(r->stdout_buf, "UNLISTED-REACHED"));
	assert_true(contains(r->stdout_buf, "direct-failed 111")); /* ECONNREFUSED */
	assert_false(contains(r->stdout_buf, "DIRECT-CONNECTED"));
	assert_true(contains(r->stdout_buf, "unix-refused 1")); /* EPERM */
	assert_int_equal(atomic_load(&srv->served), 1);
	assert_non_null(r->egress_log);
	json_t *log = json_loads(r->egress_log, 0, NULL);
	assert_non_null(log);
	if (!whole_log) {
		json_decref(log);
		return;
	}
	json_t *ok = egress_entry(log, "127.0.0.1");
	assert_non_null(ok);
	assert_true(json_is_true(json_object_get(ok, "allowed")));
	json_t *no = egress_entry(log, "unlisted.example");
	assert_non_null(no);
	assert_false(json_is_true(json_object_get(no, "allowed")));
	const char *why = json_string_value(json_object_get(no, "reason"));
	if (!why || !contains(why, "no allow-host rule names unlisted.example"))
		fail_msg("the refusal's reason: %s", why ? why : "(none)");
	json_decref(log);
}

/* Nothing of the proxy's socket is left on the host: the tiers' run
 * directories (docker: the socket's own; gvisor: the sandbox's, the socket's
 * inside) are all gone. */
static void assert_no_run_dirs(const struct aj_config *cfg)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s-docker", cfg->state_dir);
	assert_int_equal(count_dir_entries(dir, "run-"), 0);
	snprintf(dir, sizeof dir, "%s-gvisor", cfg->state_dir);
	assert_int_equal(count_dir_entries(dir, "run-"), 0);
}

/* An egress case's server (answering a fresh token) and the one rule that
 * reaches it, set in the fixture's config. */
struct egress_case {
	struct egress_server srv;
	char token[32];
	char cidr[64];
	const char *cidrs[1];
};

static void egress_case_start(struct fixture *f, struct egress_case *c)
{
	make_token(c->token, sizeof c->token);
	egress_server_start(&c->srv, c->token);
	snprintf(c->cidr, sizeof c->cidr, "127.0.0.1/32:%d", c->srv.port);
	c->cidrs[0] = c->cidr;
	f->cfg.allow_cidrs = c->cidrs;
	f->cfg.allow_cidr_count = 1;
	f->cfg.limits.wall_sec = 60;
}

/* Nothing of the proxy is left on the host; the server stops. */
static void egress_case_end(struct fixture *f, struct egress_case *c)
{
	assert_no_run_dirs(&f->cfg);
	egress_server_stop(&c->srv);
	f->cfg.allow_cidrs = NULL;
	f->cfg.allow_cidr_count = 0;
}

/* A run with an allow-cidr rule for the test's server: see
 * check_egress_result. */
static void egress_run_reaches_only_the_allowed(void **state)
{
	struct fixture *f = *state;
	struct egress_case c;
	egress_case_start(f, &c);
	struct aj_result r;
	run_code(&f->cfg, &r, EGRESS_PROGRAM, c.srv.port);
	check_egress_result(&r, &c.srv, c.token, true);
	aj_result_free(&r);
	egress_case_end(f, &c);
}

/* A session carries its proxy for its life: a cell reaches the server
 * (each call with a log of its own), and a later cell still does. */
static void egress_session_reaches_only_the_allowed(void **state)
{
	struct fixture *f = *state;
	struct egress_case c;
	egress_case_start(f, &c);
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	if (aj_session_open(&f->cfg, &s, &err))
		fail_msg("aj_session_open: %s", err.message);
	char *code = NULL;
	assert_true(asprintf(&code, EGRESS_PROGRAM, c.srv.port) > 0);
	struct aj_result r;
	assert_int_equal(aj_session_run(s, code, strlen(code), &r), 0);
	check_egress_result(&r, &c.srv, c.token, false);
	aj_result_free(&r);
	static const char again[] = "import urllib.request\n"
				    "print(urllib.request.urlopen('http://127.0.0.1:%d/y', "
				    "timeout=30).read().decode())\n";
	free(code);
	assert_true(asprintf(&code, again, c.srv.port) > 0);
	assert_int_equal(aj_session_run(s, code, strlen(code), &r), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, c.token));
	assert_int_equal(atomic_load(&c.srv.served), 2);
	assert_non_null(r.egress_log);
	aj_result_free(&r);
	free(code);
	aj_session_close(s);
	egress_case_end(f, &c);
}

#endif
