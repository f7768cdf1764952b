/* agentjail run: one program, as docs/design.md's command-line contract says. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../core/internal.h"
#include "../api/api.h"
#include "cli.h"

static const char usage[] =
	"usage: agentjail run [options] FILE|- [options]\n"
	"\n"
	"Runs the Python program in FILE (or read from stdin with -) in a sandbox\n"
	"(a JavaScript one, run by node, with --language js).\n"
	"Options may come before or after FILE; -- ends them (agentjail run -- -x.py).\n"
	"Without --json its stdout and stderr pass through as it writes them, and\n"
	"agentjail exits with its exit code (1 when an uncaught MemoryError ended\n"
	"it, as Python's; --json says memory), 124 on timeout, 128+N when signal N\n"
	"ended it (output limit: 137), 125 when the sandbox itself failed, 2 on a\n"
	"usage error.\n"
	"\n"
	"options:\n" LIMIT_OPTIONS_HELP ONE_TIER_OPTIONS_HELP EGRESS_OPTIONS_HELP
	"  --language LANG   python (the default), javascript (js), typescript (ts:\n"
	"                    its types stripped, not checked), bash or sh: the\n"
	"                    language of FILE (docs/javascript.md)\n"
	"  --json            print one JSON object with the result instead (a usage\n"
	"                    error too: {\"status\": \"usage_error\", \"message\": ...})\n"
	"  --json-stream     print one JSON object per line as the run goes:\n"
	"                    {\"event\": \"stdout\"|\"stderr\", \"text\"|\"base64\": ...},\n"
	"                    then {\"event\": \"result\", ...} with --json's object\n"
	"  -h, --help        this help\n";

enum { OPT_JSON = 2000, OPT_JSON_STREAM, OPT_LANGUAGE };

static int load_program(const char *path, char **code, size_t *len)
{
	bool from_stdin = strcmp(path, "-") == 0;
	const char *name = from_stdin ? "stdin" : path;
	int fd = from_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_error("%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	/* Up to one byte past the largest program accepted, so that a larger
	 * one is recognised as such (code_check, rule I2). */
	int rc = read_fd_up_to(fd, AJ_MAX_CODE_BYTES, code, len);
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

int cli_exit_code_for(const struct aj_result *r)
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
	bool json, json_stream;
	const char **program;
	const char *language;   /* as given; NULL: python */
	enum aj_language lang;
};

static void run_opt(int opt, const char *arg, void *ctx)
{
	(void)arg;
	struct run_args *a = ctx;
	if (opt == OPT_JSON)
		a->json = true;
	else if (opt == OPT_JSON_STREAM)
		a->json_stream = true;
	else if (opt == OPT_LANGUAGE)
		a->language = arg;
}

/* Options before or after FILE (getopt permutes; -- ends them), so that
 * `run job.py --timeout 1` means what it says. */
static int run_operands(int argc, char **argv, struct aj_config *cfg, void *ctx)
{
	struct run_args *a = ctx;
	if (a->json && a->json_stream) {
		/* Two formats on one stdout could only be parsed as neither. */
		cli_error("run: --json and --json-stream are two output formats: give one");
		cli_try_help("run");
		return EXIT_USAGE;
	}
	if (a->language && aj_language_parse(a->language, &a->lang)) {
		cli_error("run: --language: '%s' is not a language this sandbox runs "
			  "(" AJ_LANGUAGE_NAMES ")",
			  a->language);
		cli_try_help("run");
		return EXIT_USAGE;
	}
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

static int run_parse(int argc, char **argv, struct aj_config *cfg, enum run_output *out,
		     const char **program, enum aj_language *lang)
{
	static const struct option own[] = {{"json", no_argument, NULL, OPT_JSON},
					    {"json-stream", no_argument, NULL, OPT_JSON_STREAM},
					    {"language", required_argument, NULL, OPT_LANGUAGE},
					    {NULL, 0, NULL, 0}};
	struct run_args a = {false, false, program, NULL, AJ_LANG_PYTHON};
	const struct command_parse cp = {"run", usage, own, one_tier_options, run_opt,
					 run_operands, &a};
	int rc = parse_command(argc, argv, &cp, cfg);
	*out = a.json_stream ? RUN_JSON_STREAM : a.json ? RUN_JSON : RUN_PLAIN;
	*lang = a.lang;
	return rc;
}

int run_arguments(int argc, char **argv, struct aj_config *cfg, bool *json, const char **program)
{
	enum run_output out;
	enum aj_language lang;
	int rc = run_parse(argc, argv, cfg, &out, program, &lang);
	*json = out != RUN_PLAIN;
	return rc;
}

/* One line of --json-stream, written and flushed at once: a reader sees
 * each event when it happens, not when stdio's buffer fills. */
static void print_line(const char *s)
{
	fputs(s, stdout);
	fputc('\n', stdout);
	fflush(stdout);
}

/* --json-stream's line for an event: its text when the chunk is valid
 * UTF-8, else its bytes as base64 (a chunk may end inside a character). */
void cli_print_event(void *arg, const struct aj_event *ev)
{
	(void)arg;
	static const char *const kinds[] = {"stdout", "stderr", "image"};
	json_t *o = json_object();
	if (!o)
		return;
	json_object_set_new(o, "event", json_string(kinds[ev->kind]));
	if (ev->kind == AJ_EVENT_IMAGE) {
		json_object_set_new(o, "name", json_string(ev->name ? ev->name : ""));
		json_object_set_new(o, "mime", json_string(ev->mime ? ev->mime : ""));
	}
	if (ev->kind != AJ_EVENT_IMAGE && utf8_valid(ev->data, ev->len)) {
		json_object_set_new(o, "text", json_stringn_nocheck(ev->data, ev->len));
	} else {
		size_t n;
		char *b = base64_encode(ev->data, ev->len, &n);
		/* An image's bytes are "data", as in a result's "images"; an
		 * output chunk's that are not UTF-8 "base64". */
		json_object_set_new(o, ev->kind == AJ_EVENT_IMAGE ? "data" : "base64",
				    b ? json_stringn_nocheck(b, n) : json_null());
		free(b);
	}
	char *s = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(o);
	if (s)
		print_line(s);
	free(s);
}

void cli_pass_output(void *arg, const struct aj_event *ev)
{
	(void)arg;
	/* A reader that went away (EPIPE) takes nothing more; the run goes on
	 * to its end and its status, as without streaming. */
	if (ev->kind == AJ_EVENT_STDOUT)
		(void)write_full(1, ev->data, ev->len);
	else if (ev->kind == AJ_EVENT_STDERR)
		(void)write_full(2, ev->data, ev->len);
}

/* The result as --json prints it; under --json-stream the same object as
 * the last line, marked {"event": "result", ...}. Returns 0, or -1 when it
 * could not be encoded. */
int cli_print_result(const struct aj_result *res, enum aj_tier tier, enum run_output out)
{
	char *s = aj_result_to_json(res, tier);
	if (!s)
		return -1;
	if (out == RUN_JSON_STREAM) {
		/* The contract object is never empty: splice the key in front. */
		fputs("{\"event\":\"result\",", stdout);
		print_line(s + 1);
	} else {
		puts(s);
	}
	free(s);
	return 0;
}

int cmd_run(int argc, char **argv)
{
	struct aj_config cfg;
	enum run_output out;
	const char *program;
	enum aj_language lang;
	int done = run_parse(argc, argv, &cfg, &out, &program, &lang);
	if (done >= 0)
		return done;
	struct aj_error err = {0};
	char *code = NULL;
	size_t len = 0;
	/* A program that cannot be read is a usage error too, said as one. */
	cli_usage_begin(out == RUN_JSON ? CLI_JSON_ONE
			: out == RUN_JSON_STREAM ? CLI_JSON_STREAM : CLI_JSON_NO);
	if (load_program(program, &code, &len) < 0)
		return cli_usage_end(EXIT_USAGE);
	cli_usage_end(-1);

	struct aj_sandbox *sb;
	struct aj_result res;
	if (aj_open(&cfg, &sb, &err)) {
		free(code);
		result_init(&res); /* a sandbox_error */
		res.message = err.message;
		if (out != RUN_PLAIN)
			(void)cli_print_result(&res, cfg.tier, out);
		else
			cli_error("sandbox error: %s", err.message);
		return EXIT_SANDBOX;
	}
	/* Output goes out as the program makes it (passed through, or a JSON
	 * line per event), printed on the library's delivery thread while this
	 * one waits in the run: stdout is that thread's until the run returns,
	 * after every event was delivered. --json alone prints at the end. */
	const struct aj_stream stream = {out == RUN_JSON_STREAM ? cli_print_event : cli_pass_output,
					 NULL, 0};
	aj_run_lang(sb, lang, code, len, NULL, out == RUN_JSON ? NULL : &stream, &res);
	free(code);
	aj_close(sb);

	int rc = cli_exit_code_for(&res);
	if (out != RUN_PLAIN) {
		if (cli_print_result(&res, cfg.tier, out) < 0) {
			cli_error("out of memory encoding the result");
			rc = EXIT_SANDBOX;
		}
	} else {
		/* The output went out as it came (cli_pass_output). One line of our own, only where the program's output cannot
		 * tell what happened. */
		if (res.status == AJ_STATUS_SANDBOX_ERROR)
			cli_error("sandbox error: %s", res.message ? res.message : "unknown");
		else if (res.status != AJ_STATUS_OK && res.status != AJ_STATUS_ERROR && res.message)
			cli_error("%s: %s", aj_status_name(res.status), res.message);
	}
	aj_result_free(&res);
	return rc;
}
