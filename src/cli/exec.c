/* agentjail exec: one command in a fresh sandbox, as run is one program.
 * The sandbox is a session opened for it and closed after it
 * (aj_session_exec), so a command meets the same limits, egress rules and
 * status ladder as a session's commands do, and the exit status follows
 * run's contract. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/internal.h"
#include "cli.h"

static const char usage[] =
	"usage: agentjail exec [options] -- COMMAND [ARG...]\n"
	"       agentjail exec [options] --shell 'LINE'\n"
	"\n"
	"Runs one command in a fresh sandbox: COMMAND looked up on the sandbox's PATH\n"
	"with its ARGs as they are (no shell), or LINE given to /bin/sh -c. It runs in\n"
	"the workspace (/tmp/work) as the sandbox's user, under the limits below;\n"
	"what it leaves running is killed when it ends. Its stdout and stderr pass\n"
	"through as it writes them, and agentjail exits as run does: the command's\n"
	"exit code, 124 on timeout, 128+N when signal N ended it, 125 when the\n"
	"sandbox itself failed, 2 on a usage error. The image's userland is what the\n"
	"command can use (docs/commands.md).\n"
	"\n"
	"options:\n" LIMIT_OPTIONS_HELP ONE_TIER_OPTIONS_HELP EGRESS_OPTIONS_HELP
	"  --shell LINE      run LINE with /bin/sh -c instead of COMMAND\n"
	"  --env NAME=VALUE  add a variable for the command (repeatable; the rules\n"
	"                    of the deployer's own variables apply)\n"
	"  --stdin           give agentjail's stdin to the command (else /dev/null;\n"
	"                    at most the session transfer limit)\n"
	"  --json            print one JSON object with the result instead\n"
	"  --json-stream     print one JSON object per line as the command goes\n"
	"  -h, --help        this help\n";

enum { OPT_JSON = 2100, OPT_JSON_STREAM, OPT_SHELL, OPT_ENV, OPT_STDIN };

struct exec_args {
	bool json, json_stream, stdin_in;
	const char *shell;
	const char *env[AJ_MAX_ENV];
	uint32_t env_count;
	bool env_overflow;
	char **argv; /* the command's, from the operands */
};

static void exec_opt(int opt, const char *arg, void *ctx)
{
	struct exec_args *a = ctx;
	if (opt == OPT_JSON)
		a->json = true;
	else if (opt == OPT_JSON_STREAM)
		a->json_stream = true;
	else if (opt == OPT_SHELL)
		a->shell = arg;
	else if (opt == OPT_STDIN)
		a->stdin_in = true;
	else if (opt == OPT_ENV && a->env_count < AJ_MAX_ENV)
		a->env[a->env_count++] = arg;
	else if (opt == OPT_ENV)
		a->env_overflow = true;
}

static int exec_operands(int argc, char **argv, struct aj_config *cfg, void *ctx)
{
	struct exec_args *a = ctx;
	const char *why = NULL;
	if (a->json && a->json_stream)
		why = "--json and --json-stream are two output formats: give one";
	else if (a->env_overflow)
		why = "more --env variables than the 64 allowed";
	else if (a->shell && optind < argc)
		why = "--shell LINE or -- COMMAND ARG..., not both";
	else if (!a->shell && optind == argc)
		why = "which command? give -- COMMAND [ARG...] or --shell 'LINE'";
	if (why) {
		cli_error("exec: %s", why);
		cli_try_help("exec");
		return EXIT_USAGE;
	}
	struct aj_error err = {0};
	if (aj_config_validate(cfg, &err)) {
		cli_error("%s", err.message);
		return EXIT_USAGE;
	}
	a->argv = a->shell ? NULL : argv + optind;
	return -1;
}

/* agentjail's whole stdin, for --stdin: at most cap bytes. */
static int read_stdin(size_t cap, char **data, size_t *len)
{
	int rc = read_fd_up_to(0, cap, data, len);
	if (rc)
		cli_error("exec: --stdin: cannot read stdin: %s", strerror(-rc));
	else if (*len > cap)
		cli_error("exec: --stdin: more than the session transfer limit (%zu MiB)", cap >> 20);
	if (!rc && *len > cap) {
		free(*data);
		*data = NULL;
		rc = -EFBIG;
	}
	return rc ? -1 : 0;
}

/* The session, the command in it, and its end. */
static int exec_in_fresh_sandbox(const struct aj_config *cfg, const struct aj_exec *x,
				 enum run_output out, struct aj_result *res)
{
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	if (aj_session_open(cfg, &s, &err)) {
		result_init(res);
		result_sandbox_error(res, "%s", err.message);
		return -1;
	}
	const struct aj_stream stream = {out == RUN_JSON_STREAM ? cli_print_event : cli_pass_output,
					 NULL, 0};
	int rc = aj_session_exec(s, x, NULL, out == RUN_JSON ? NULL : &stream, res);
	aj_session_close(s);
	return rc;
}

int cmd_exec(int argc, char **argv)
{
	static const struct option own[] = {{"json", no_argument, NULL, OPT_JSON},
					    {"json-stream", no_argument, NULL, OPT_JSON_STREAM},
					    {"shell", required_argument, NULL, OPT_SHELL},
					    {"env", required_argument, NULL, OPT_ENV},
					    {"stdin", no_argument, NULL, OPT_STDIN},
					    {NULL, 0, NULL, 0}};
	struct aj_config cfg;
	struct exec_args a = {0};
	const struct command_parse cp = {"exec", usage, own, one_tier_options, exec_opt,
					 exec_operands, &a};
	int done = parse_command(argc, argv, &cp, &cfg);
	if (done >= 0)
		return done;
	enum run_output out = a.json_stream ? RUN_JSON_STREAM : a.json ? RUN_JSON : RUN_PLAIN;
	struct aj_exec x = {.command = a.shell, .argv = (const char *const *)a.argv,
			    .env = a.env, .env_count = a.env_count};
	char *in = NULL;
	if (a.stdin_in &&
	    read_stdin((size_t)cfg.session.transfer_mb << 20, &in, &x.stdin_len) < 0)
		return EXIT_USAGE;
	x.stdin_data = in;
	struct aj_result res;
	int rc = exec_in_fresh_sandbox(&cfg, &x, out, &res);
	free(in);
	int code = rc == -EINVAL || rc == -EACCES ? EXIT_USAGE : cli_exit_code_for(&res);
	if (out != RUN_PLAIN) {
		if (cli_print_result(&res, cfg.tier, out) < 0)
			code = EXIT_SANDBOX;
	} else if (code == EXIT_USAGE) {
		cli_error("%s", res.message ? res.message : "exec: refused");
	} else if (res.status == AJ_STATUS_SANDBOX_ERROR) {
		cli_error("sandbox error: %s", res.message ? res.message : "unknown");
	} else if (res.status != AJ_STATUS_OK && res.status != AJ_STATUS_ERROR && res.message) {
		cli_error("%s: %s", aj_status_name(res.status), res.message);
	}
	aj_result_free(&res);
	return code;
}
