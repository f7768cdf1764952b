/* agentjail run: one program, as docs/design.md's command-line contract says. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/internal.h"
#include "../api/api.h"
#include "cli.h"

static const char usage[] =
	"usage: agentjail run [options] FILE|- [options]\n"
	"\n"
	"Runs the Python program in FILE (or read from stdin with -) in a sandbox.\n"
	"Options may come before or after FILE; -- ends them (agentjail run -- -x.py).\n"
	"Without --json its stdout and stderr pass through and agentjail exits with\n"
	"its exit code: 121 when an uncaught MemoryError ended it, 124 on timeout,\n"
	"128+N when signal N ended it (output limit: 137), 125 when the sandbox\n"
	"itself failed, 2 on a usage error.\n"
	"\n"
	"options:\n" LIMIT_OPTIONS_HELP ONE_TIER_OPTIONS_HELP EGRESS_OPTIONS_HELP
	"  --json            print one JSON object with the result instead (a usage\n"
	"                    error too: {\"status\": \"usage_error\", \"message\": ...})\n"
	"  -h, --help        this help\n";

enum { OPT_JSON = 2000 };

/* Reads all of fd, up to one byte past the largest program accepted (so a
 * larger one is recognised as such). */
static int read_all(int fd, char **out, size_t *len)
{
	size_t alloc = 65536, n = 0;
	char *buf = malloc(alloc);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == alloc) {
			if (alloc > AJ_MAX_CODE_BYTES)
				break;
			alloc *= 2;
			char *p = realloc(buf, alloc);
			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
		}
		ssize_t r = read(fd, buf + n, alloc - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static int load_program(const char *path, char **code, size_t *len)
{
	bool from_stdin = strcmp(path, "-") == 0;
	const char *name = from_stdin ? "stdin" : path;
	int fd = from_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_error("%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	int rc = read_all(fd, code, len);
	if (!from_stdin)
		close(fd);
	if (rc) {
		cli_error("%s: cannot read: %s", name, strerror(-rc));
		return -1;
	}
	const char *why = NULL;
	if (*len == 0)
		why = "is empty: there is no program to run";
	else if (*len > AJ_MAX_CODE_BYTES)
		why = "is larger than the 4 MiB a program may be";
	else if (memchr(*code, '\0', *len))
		why = "contains a NUL byte, which Python source cannot hold (is it a binary file?)";
	if (why) {
		cli_error("%s %s", name, why);
		free(*code);
		return -1;
	}
	return 0;
}

static int exit_code_for(const struct aj_result *r)
{
	switch (r->status) {
	case AJ_STATUS_OK:
		return 0;
	case AJ_STATUS_TIMEOUT:
		return EXIT_TIMEOUT;
	case AJ_STATUS_SANDBOX_ERROR:
		return EXIT_SANDBOX;
	default:
		if (r->has_exit_code)
			return r->exit_code;
		return 128 + (r->signal ? r->signal : SIGKILL);
	}
}

/* What run's arguments give beyond the config. */
struct run_args {
	bool *json;
	const char **program;
};

static void run_opt(int opt, const char *arg, void *ctx)
{
	(void)arg;
	struct run_args *a = ctx;
	if (opt == OPT_JSON)
		*a->json = true;
}

/* Options before or after FILE (getopt permutes; -- ends them), so that
 * `run job.py --timeout 1` means what it says. */
static int run_operands(int argc, char **argv, struct aj_config *cfg, void *ctx)
{
	struct run_args *a = ctx;
	if (optind != argc - 1) {
		if (optind == argc)
			cli_error("run: which program? give a FILE, or - for stdin");
		else
			cli_error("run: one program at a time ('%s', then '%s')", argv[optind],
				  argv[optind + 1]);
		cli_try_help("run");
		return EXIT_USAGE;
	}
	struct aj_error err = {0};
	if (aj_config_validate(cfg, &err)) {
		cli_error("%s", err.message);
		return EXIT_USAGE;
	}
	*a->program = argv[optind];
	return -1;
}

int run_arguments(int argc, char **argv, struct aj_config *cfg, bool *json, const char **program)
{
	static const struct option own[] = {{"json", no_argument, NULL, OPT_JSON},
					    {NULL, 0, NULL, 0}};
	struct run_args a = {json, program};
	const struct command_parse cp = {"run", usage, own, one_tier_options, run_opt,
					 run_operands, &a};
	*json = false;
	return parse_command(argc, argv, &cp, cfg);
}

int cmd_run(int argc, char **argv)
{
	struct aj_config cfg;
	bool json;
	const char *program;
	int done = run_arguments(argc, argv, &cfg, &json, &program);
	if (done >= 0)
		return done;
	struct aj_error err = {0};
	char *code = NULL;
	size_t len = 0;
	/* A program that cannot be read is a usage error too, said as one. */
	cli_usage_begin(json);
	if (load_program(program, &code, &len) < 0)
		return cli_usage_end(EXIT_USAGE);
	cli_usage_end(-1);

	struct aj_sandbox *sb;
	struct aj_result res;
	if (aj_open(&cfg, &sb, &err)) {
		free(code);
		memset(&res, 0, sizeof res);
		res.status = AJ_STATUS_SANDBOX_ERROR;
		res.message = err.message;
		if (json) {
			char *s = aj_result_to_json(&res, cfg.tier);
			if (s)
				puts(s);
			free(s);
		} else {
			cli_error("sandbox error: %s", err.message);
		}
		return EXIT_SANDBOX;
	}
	aj_run(sb, code, len, &res);
	free(code);
	aj_close(sb);

	int rc = exit_code_for(&res);
	if (json) {
		char *s = aj_result_to_json(&res, cfg.tier);
		if (!s) {
			cli_error("out of memory encoding the result");
			rc = EXIT_SANDBOX;
		} else {
			puts(s);
			free(s);
		}
	} else {
		(void)write_full(1, res.stdout_buf, res.stdout_len);
		(void)write_full(2, res.stderr_buf, res.stderr_len);
		/* One line of our own, only where the program's output cannot
		 * tell what happened. */
		if (res.status == AJ_STATUS_SANDBOX_ERROR)
			cli_error("sandbox error: %s", res.message ? res.message : "unknown");
		else if (res.status != AJ_STATUS_OK && res.status != AJ_STATUS_ERROR && res.message)
			cli_error("%s: %s", aj_status_name(res.status), res.message);
	}
	aj_result_free(&res);
	return rc;
}
