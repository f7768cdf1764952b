/* libFuzzer target: the command line's option parsing (src/cli/options.c and
 * the argument parsing of run, repl and mcp), as whoever starts agentjail
 * writes it. The input's first byte picks the command (run, repl, mcp, or a
 * table command's parse_matrix_command, as attack and bench call it); the
 * rest, split on NUL bytes, is its argv, the command's name first, as main()
 * hands it over.
 *
 * What must hold: no crash, leak or undefined behaviour (ASan/UBSan), and
 * every outcome one of three: the parser goes on with a config that
 * aj_config_validate accepts; or it refuses with exit status 2 having said
 * why, either on stderr alone or (asked for --json) as one JSON object
 * {"status": "usage_error", "message": ...} on stdout alone (asked for
 * --json-stream, with "event": "result" too: the stream's last line); or it printed
 * the help on stdout and returns 0. And errors said after the parse go to
 * stderr again: keeping them for JSON never outlives the parse.
 *
 * Nothing the commands do after parsing runs. mcp's --config reads a file:
 * its parse runs in a directory of the target's own holding a few configs
 * (good, bad, sessions, warm), and an mcp input with a '/' in any argument is
 * skipped, so no path outside it (a FIFO, /dev/stdin, /proc/kcore) is ever
 * opened. (A crash while there writes its input to a relative
 * -artifact_prefix in that directory: make fuzz gives absolute paths. The
 * directory, /tmp/agentjail-fuzz-cli-*, is removed at exit, but not when
 * libFuzzer dies of a crash or an out-of-memory.) */
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/cli.h"
#include "src/mcp/config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

static char dir[] = "/tmp/agentjail-fuzz-cli-XXXXXX";
static int dir_fd = -1, cwd_fd = -1;

static const struct {
	const char *name, *text;
} configs[] = {
	{"good.json", "{\"tier\": \"process\", \"memory\": 64, \"timeout\": 3}"},
	{"bad.json", "{\"tier\": \"process\", \"memmory\": 64}"},
	{"sessions.json", "{\"sessions\": true, \"session_idle\": 60, \"transfer_mb\": 4}"},
	{"warm.json", "{\"warm\": true, \"preload\": [\"numpy\", \"pandas\"]}"},
};

static void remove_dir(void)
{
	for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
		unlinkat(dir_fd, configs[i].name, 0);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!mkdtemp(dir) || (dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (cwd_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		abort();
	atexit(remove_dir);
	for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
		int fd = openat(dir_fd, configs[i].name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				0600);
		size_t n = strlen(configs[i].text);
		if (fd < 0 || write(fd, configs[i].text, n) != (ssize_t)n)
			abort();
		close(fd);
	}
	return 0;
}

/* A table command's own options, the shape of attack's: flags, and help. */
enum { OPT_JSON = 5000, OPT_QUICK, OPT_HELP };
static int matrix_opt(int opt, const char *arg, void *ctx)
{
	(void)arg;
	*(int *)ctx += opt == OPT_JSON || opt == OPT_QUICK;
	return opt == OPT_HELP;
}

/* getopt keeps state between calls (where it is in a cluster of short
 * options, and whether options may follow operands, read from the first
 * call's optstring): put it back as a fresh process has it. */
static void fresh_getopt(const char *optstring)
{
	static char name[] = "agentjail", *none[] = {name, NULL};
	static const struct option no_options[] = {{NULL, 0, NULL, 0}};
	optind = 0;
	opterr = 0;
	getopt_long(1, none, optstring, no_options, NULL);
	optind = 1;
	opterr = 1;
}

static int parse(unsigned command, int argc, char **argv, bool *validated)
{
	static const char usage[] = "usage: agentjail matrix [options]\n";
	static const struct option own[] = {{"json", no_argument, NULL, OPT_JSON},
					    {"quick", no_argument, NULL, OPT_QUICK},
					    {"help", no_argument, NULL, OPT_HELP},
					    {NULL, 0, NULL, 0}};
	struct aj_config cfg;
	struct aj_error err;
	bool json;
	const char *program = NULL;
	struct repl_files files;
	int rc;
	switch (command) {
	case 0:
		fresh_getopt(":h");
		rc = run_arguments(argc, argv, &cfg, &json, &program);
		if (rc == -1)
			*validated = program && aj_config_validate(&cfg, &err) == 0;
		return rc;
	case 1:
		fresh_getopt(":h");
		rc = repl_arguments(argc, argv, &cfg, &json, &files);
		if (rc == -1)
			*validated = aj_config_validate(&cfg, &err) == 0;
		return rc;
	case 2: {
		for (int i = 0; i < argc; i++)
			if (strchr(argv[i], '/'))
				return -2; /* skipped: see the top */
		struct mcp_config m;
		mcp_config_init(&m);
		fresh_getopt("+h");
		if (fchdir(dir_fd) < 0)
			abort();
		rc = mcp_arguments(argc, argv, &m);
		if (fchdir(cwd_fd) < 0)
			abort();
		if (rc == -1)
			*validated = aj_config_validate(&m.sandbox, &err) == 0 &&
				     m.concurrency >= 1 && m.concurrency <= MCP_MAX_CONCURRENCY;
		mcp_config_free(&m);
		return rc;
	}
	default: {
		struct tier_choice tiers = {0};
		int flags = 0;
		aj_config_init(&cfg);
		fresh_getopt(":h");
		rc = parse_matrix_command(argc, argv, "matrix", usage, own, &cfg, &tiers,
					  matrix_opt, &flags);
		if (rc == -1)
			*validated = aj_config_validate(&cfg, &err) == 0;
		return rc;
	}
	}
}

/* One line: {"status": "usage_error", "message": a non-empty string}, or
 * under --json-stream the same as its last line, {"event": "result", ...}. */
static bool is_usage_error_json(const char *text, size_t len)
{
	if (!len || text[len - 1] != '\n' || memchr(text, '\n', len - 1))
		return false;
	json_t *j = json_loadb(text, len, 0, NULL);
	const char *status = json_string_value(json_object_get(j, "status"));
	const char *message = json_string_value(json_object_get(j, "message"));
	const char *event = json_string_value(json_object_get(j, "event"));
	size_t keys = event && !strcmp(event, "result") ? 3 : 2;
	bool ok = json_object_size(j) == keys && status && !strcmp(status, "usage_error") &&
		  message && message[0];
	json_decref(j);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	unsigned command = data[0] % 4;
	static const char *const names[] = {"run", "repl", "mcp", "matrix"};
	/* The argv strings: the input after its first byte, NUL-terminated. */
	char *buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	char *argv[MAX_ARGS + 2];
	int argc = 0;
	argv[argc++] = (char *)names[command];
	for (char *p = buf; p < buf + size - 1 && argc <= MAX_ARGS; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;

	/* What the parser prints, caught (the fuzzer's own output and the
	 * sanitizers' reports do not go through these FILEs). */
	char *out_text = NULL, *err_text = NULL;
	size_t out_len = 0, err_len = 0;
	FILE *saved_out = stdout, *saved_err = stderr;
	FILE *out = open_memstream(&out_text, &out_len), *err = open_memstream(&err_text, &err_len);
	if (!out || !err)
		abort();
	stdout = out;
	stderr = err;
	bool validated = false;
	int rc = parse(command, argc, argv, &validated);
	fflush(out);
	fflush(err);
	size_t err_parse = err_len;
	cli_error("after");
	fflush(err);
	bool error_after_is_said = err_len > err_parse;
	stdout = saved_out;
	stderr = saved_err;
	fclose(out);
	fclose(err);

	if (rc != -2) {
		/* Going on: the config is one the library accepts (and run
		 * has its program). */
		if (rc == -1 && !validated)
			__builtin_trap();
		/* Refused: and said why, in one format. */
		if (rc == EXIT_USAGE && !(err_parse && !out_len) &&
		    !(!err_parse && is_usage_error_json(out_text, out_len)))
			__builtin_trap();
		if (!error_after_is_said)
			__builtin_trap();
		/* The help: printed. */
		if (rc == 0 && out_len == 0)
			__builtin_trap();
		if (rc != -1 && rc != 0 && rc != EXIT_USAGE)
			__builtin_trap();
	}
	free(out_text);
	free(err_text);
	free(buf);
	return 0;
}
