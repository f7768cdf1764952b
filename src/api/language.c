/* Languages: the code of a run or a session call is Python (the default),
 * JavaScript or TypeScript (docs/javascript.md), or a shell line. This is the one place that turns
 * JavaScript into what every tier already runs, so no tier has a line of
 * its own for it:
 *
 * - a session's JavaScript cell is repl.py's op "js": the session's Python
 *   interpreter starts node (src/core/repl.js) as its own child on the
 *   first call and forwards each cell to it;
 * - a one-shot run is a Python program (src/core/js_run.py after
 *   src/core/node_flags.py, with the JavaScript in base64 after them) that
 *   writes the JavaScript to a file in /tmp and replaces itself with node:
 *   every tier's launcher runs it as any program, and its exit code and
 *   output are node's;
 * - TypeScript is JavaScript once the image's TypeScript compiler has
 *   stripped its types (src/core/ts_strip.js), in the same node: a
 *   session's op "ts", a one-shot run's step before node runs it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "api.h"

#include "js_run.inc" /* js_run_py: src/core/node_flags.py, src/core/js_run.py */

static const struct {
	const char *name;
	enum aj_language lang;
} languages[] = {
	{"python", AJ_LANG_PYTHON},
	{"javascript", AJ_LANG_JAVASCRIPT},
	{"js", AJ_LANG_JAVASCRIPT},
	{"typescript", AJ_LANG_TYPESCRIPT},
	{"ts", AJ_LANG_TYPESCRIPT},
	{"bash", AJ_LANG_BASH},
	{"sh", AJ_LANG_SH},
	{"shell", AJ_LANG_SH},
};

/* The shell a shell language runs. */
static const char *shell_of(enum aj_language lang)
{
	return lang == AJ_LANG_BASH ? "/bin/bash" : "/bin/sh";
}

static bool is_shell(enum aj_language lang)
{
	return lang == AJ_LANG_BASH || lang == AJ_LANG_SH;
}

/* JavaScript, or TypeScript: JavaScript once its types are stripped. */
static bool is_node(enum aj_language lang)
{
	return lang == AJ_LANG_JAVASCRIPT || lang == AJ_LANG_TYPESCRIPT;
}

/* A one-shot shell run's program: Python that replaces itself with the
 * shell (the signals Python ignores back to their defaults, so `yes |
 * head` ends as it would in a terminal), or says the image lacks it. */
static const char shell_run_py[] =
	"import base64, os, signal\n"
	"signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n"
	"signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
	"shell, line = '%s', base64.b64decode('%s')\n"
	"try:\n"
	"    os.execv(shell, [shell, '-c', line])\n"
	"except OSError as e:\n"
	"    os.write(2, ('agentjail: %%s: %%s (this sandbox\\'s image has no such shell)\\n'\n"
	"              %% (shell, e.strerror)).encode())\n"
	"    os._exit(127)\n";

int aj_language_parse(const char *name, enum aj_language *out)
{
	for (size_t i = 0; name && i < sizeof languages / sizeof languages[0]; i++)
		if (!strcmp(name, languages[i].name)) {
			*out = languages[i].lang;
			return 0;
		}
	return -EINVAL;
}

const char *aj_language_name(enum aj_language lang)
{
	for (size_t i = 0; i < sizeof languages / sizeof languages[0]; i++)
		if (languages[i].lang == lang)
			return languages[i].name;
	return "?";
}

/* The words for a language number that is none of them. */
static int bad_language(enum aj_language lang, struct aj_result *res)
{
	result_sandbox_error(res, "language: %d is not a language (" AJ_LANGUAGE_NAMES ")",
			     (int)lang);
	return -EINVAL;
}

/* The Python program a one-shot shell run is: NULL with res saying why. */
static char *shell_program(enum aj_language lang, const char *code, size_t len,
			   struct aj_result *res)
{
	if (code_check(code, len, res))
		return NULL;
	size_t b64_len = 0;
	char *b64 = base64_encode(code, len, &b64_len);
	size_t n = sizeof shell_run_py + b64_len + 16;
	char *program = b64 && n <= AJ_MAX_CODE_BYTES ? malloc(n) : NULL;
	if (program)
		snprintf(program, n, shell_run_py, shell_of(lang), b64);
	else if (b64)
		result_sandbox_error(res, "code: %zu bytes of shell is more than a one-shot run "
					  "takes (a session's exec takes up to %u)",
				     len, AJ_MAX_CODE_BYTES);
	else
		result_sandbox_error(res, "run: out of memory");
	free(b64);
	return program;
}

/* The Python program a one-shot JavaScript or TypeScript run is: NULL
 * with res saying why (code refused, or too large once in base64). */
static char *js_program(const struct aj_config *cfg, enum aj_language lang, const char *code,
			size_t len, struct aj_result *res)
{
	if (code_check(code, len, res))
		return NULL;
	size_t b64_len = 0;
	char *b64 = base64_encode(code, len, &b64_len);
	if (!b64) {
		result_sandbox_error(res, "run: out of memory");
		return NULL;
	}
	size_t n = strlen(js_run_py) + b64_len + 64;
	char *program = NULL;
	if (n > AJ_MAX_CODE_BYTES)
		/* base64 makes 4 bytes of 3: the program must stay a program
		 * the tiers take (AJ_MAX_CODE_BYTES). */
		result_sandbox_error(res, "code: %zu bytes of %s is more than the %u a "
					  "one-shot run takes (a session call takes up to %u)",
				     len, lang == AJ_LANG_TYPESCRIPT ? "TypeScript" : "JavaScript", (unsigned)((AJ_MAX_CODE_BYTES - strlen(js_run_py) - 64) / 4 * 3),
				     AJ_MAX_CODE_BYTES);
	else if (!(program = malloc(n)))
		result_sandbox_error(res, "run: out of memory");
	else
		snprintf(program, n, "%s\nrun_js('%s', %u, %s)\n", js_run_py, b64,
			 cfg->limits.memory_mb, lang == AJ_LANG_TYPESCRIPT ? "True" : "False");
	free(b64);
	return program;
}

int aj_run_lang(struct aj_sandbox *sb, enum aj_language lang, const char *code, size_t len,
		struct aj_cancel *cancel, const struct aj_stream *stream, struct aj_result *res)
{
	if (lang == AJ_LANG_PYTHON)
		return aj_run_streaming(sb, code, len, cancel, stream, res);
	result_init(res);
	if (!is_node(lang) && !is_shell(lang))
		return bad_language(lang, res);
	if (!sb) {
		result_sandbox_error(res, "run: no sandbox");
		return -EINVAL;
	}
	char *program = is_shell(lang) ? shell_program(lang, code, len, res)
				       : js_program(sandbox_config(sb), lang, code, len, res);
	if (!program) {
		result_ensure_streams(res);
		return -EINVAL;
	}
	aj_result_free(res);
	int rc = aj_run_streaming(sb, program, strlen(program), cancel, stream, res);
	free(program);
	return rc;
}

int aj_session_run_lang(struct aj_session *s, enum aj_language lang, const char *code,
			size_t len, struct aj_cancel *cancel, const struct aj_stream *stream,
			struct aj_result *res)
{
	if (lang == AJ_LANG_PYTHON)
		return aj_session_run_streaming(s, code, len, cancel, stream, res);
	if (is_shell(lang)) {
		/* A session's shell line is its command (docs/commands.md). */
		if (code_check(code, len, res)) {
			result_ensure_streams(res);
			return -EINVAL;
		}
		char *line = strndup(code, len);
		const char *argv[] = {shell_of(lang), "-c", line, NULL};
		const struct aj_exec x = {.argv = argv};
		int rc = line ? aj_session_exec(s, &x, cancel, stream, res) : -ENOMEM;
		if (!line)
			result_sandbox_error(res, "run: out of memory");
		free(line);
		return rc;
	}
	if (!is_node(lang)) {
		result_init(res);
		int rc = bad_language(lang, res);
		result_ensure_streams(res);
		return rc;
	}
	/* repl.py's op "ts": the session's node strips the types first. */
	return session_run_op(s, lang == AJ_LANG_TYPESCRIPT ? "ts" : "js", session_js_reply, code,
			      len, cancel, stream, res);
}

int cell_context_check(const char *name, struct aj_error *err)
{
	size_t n = strlen(name);
	/* A key of repl.py's and a word of the E2B API's URLs. */
	if (n >= 1 && n <= 64 &&
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n)
		return 0;
	return error_set(err, -EINVAL, "context: a name is 1 to 64 of A-Z a-z 0-9 _ . -, not "
			 "\"%.64s\"", name);
}

int aj_session_run_cell(struct aj_session *s, const struct aj_cell *cell,
			struct aj_cancel *cancel, const struct aj_stream *stream,
			struct aj_result *res)
{
	const char *why = NULL;
	struct aj_error err = {0};
	if (!cell)
		why = "no cell given";
	else if (cell->lang != AJ_LANG_PYTHON && !is_node(cell->lang))
		why = "a cell is Python, JavaScript or TypeScript (a shell line is a command: "
		      "aj_session_exec)";
	else if (cell->lang != AJ_LANG_PYTHON && (cell->value || cell->context))
		why = "a cell's value apart and named contexts are Python's only";
	else if (cell->context && cell_context_check(cell->context, &err))
		why = err.message;
	if (why) {
		result_init(res);
		result_sandbox_error(res, "run_cell: %s", why);
		result_ensure_streams(res);
		return -EINVAL;
	}
	if (cell->lang == AJ_LANG_PYTHON)
		return session_cell_op(s, "run", cell,
				       cell->value ? session_value_reply : session_run_reply,
				       cell->code, cell->len, cancel, stream, res);
	return session_cell_op(s, cell->lang == AJ_LANG_TYPESCRIPT ? "ts" : "js", cell,
			       session_js_reply, cell->code, cell->len, cancel, stream, res);
}
