/* The one tool, run_python: how it is described to a model, how its
 * arguments are checked, and how a run's result becomes MCP content. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "tool.h"

json_t *tool_definition(const struct aj_config *cfg)
{
	const struct aj_limits *l = &cfg->limits;
	char desc[1200];
	/* The limits in the description, so the model writes code that fits
	 * them instead of learning them by failing. */
	snprintf(desc, sizeof desc,
		 "Run a Python 3 program in an isolated sandbox and get back its stdout, stderr "
		 "and exit status. Every call starts from a clean state: nothing persists between "
		 "calls, so include everything the program needs. Only the Python standard "
		 "library%s is available; there is no network. Limits: %g s of wall-clock time, "
		 "%u s of CPU, %u MiB of memory, %u processes and threads, %u MiB of disk "
		 "(the working directory and /tmp), files up to %u MiB, %u KiB of output per "
		 "stream (more is cut and stops the run). Read the result's status: ok, error "
		 "(non-zero exit; see stderr), timeout, memory or output_limit.",
		 cfg->tier == AJ_TIER_CONTAINER ? " and the packages of the image" : "",
		 l->wall_sec, l->cpu_sec, l->memory_mb, l->pids, l->disk_mb, l->file_size_mb,
		 l->output_kb);
	json_t *input = json_pack(
		"{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}", "type", "object", "properties", "code", "type",
		"string", "description", "The complete Python program to run.", "required", "code",
		/* Nothing but the code: no limit, tier or path the agent could widen. */
		"additionalProperties", 0);
	json_t *nullable_int = json_pack("{s:[s,s]}", "type", "integer", "null");
	json_t *output = json_pack(
		"{s:s, s:{s:{s:s}, s:{s:s, s:[s,s,s,s,s,s,s]}, s:O, s:O, s:{s:s}, s:{s:s}, "
		"s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}}, s:[s,s,s,s,s,s,s,s,s,s,"
		"s,s]}",
		"type", "object", "properties",
		"tier", "type", "string",
		"status", "type", "string", "enum", "ok", "error", "timeout", "memory",
		"output_limit", "killed", "sandbox_error",
		"exit_code", nullable_int,
		"signal", nullable_int,
		"stdout", "type", "string",
		"stderr", "type", "string",
		"stdout_truncated", "type", "boolean",
		"stderr_truncated", "type", "boolean",
		"wall_ms", "type", "number",
		"cpu_ms", "type", "number",
		"memory_kb", "type", "integer",
		"message", "type", "string", "null",
		"required", "tier", "status", "exit_code", "signal", "stdout", "stderr",
		"stdout_truncated", "stderr_truncated", "wall_ms", "cpu_ms", "memory_kb", "message");
	json_decref(nullable_int);
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name",
			 TOOL_NAME, "title", "Run Python in a sandbox", "description", desc,
			 "inputSchema", input, "outputSchema", output, "annotations", "title",
			 "Run Python in a sandbox",
			 /* Nothing outside the sandbox changes, and the sandbox is
			  * gone after the call. */
			 "readOnlyHint", 1, "destructiveHint", 0,
			 /* The same code may print differently (time, randomness). */
			 "idempotentHint", 0,
			 /* No network: it reaches no outside system. */
			 "openWorldHint", 0);
}

int tool_arguments(json_t *args, const char **code, size_t *len, char *why, size_t n)
{
	if (!json_is_object(args)) {
		snprintf(why, n, "arguments must be an object with a string 'code'");
		return -1;
	}
	const char *key;
	json_t *v;
	json_object_foreach(args, key, v) {
		if (strcmp(key, "code") != 0) {
			snprintf(why, n, "unexpected argument '%.64s': run_python takes only 'code'",
				 key);
			return -1;
		}
	}
	json_t *c = json_object_get(args, "code");
	if (!json_is_string(c)) {
		snprintf(why, n, "'code' must be a string holding the Python program");
		return -1;
	}
	*code = json_string_value(c);
	*len = json_string_length(c);
	return 0;
}

/* stdout/stderr as the model reads them: repaired to UTF-8, labelled. */
static void append_stream(struct capture *t, const char *label, const char *buf, size_t len,
			  bool truncated)
{
	char head[96];
	snprintf(head, sizeof head, "\n--- %s%s ---\n", label,
		 truncated ? " (cut at the output limit)" : "");
	capture_append(t, head, strlen(head));
	size_t fixed_len;
	char *fixed = utf8_repair(buf, len, &fixed_len);
	if (fixed) {
		capture_append(t, fixed, fixed_len);
		free(fixed);
	}
	if (len == 0)
		capture_append(t, "(empty)", 7);
}

json_t *tool_result(const struct aj_result *res, enum aj_tier tier)
{
	struct capture t;
	char line[700];
	capture_init(&t, (size_t)8 << 20);
	if (res->has_exit_code)
		snprintf(line, sizeof line, "status: %s (exit code %d)", aj_status_name(res->status),
			 res->exit_code);
	else if (res->signal)
		snprintf(line, sizeof line, "status: %s (signal %d)", aj_status_name(res->status),
			 res->signal);
	else
		snprintf(line, sizeof line, "status: %s", aj_status_name(res->status));
	capture_append(&t, line, strlen(line));
	if (res->message) {
		snprintf(line, sizeof line, "\n%s", res->message);
		capture_append(&t, line, strlen(line));
	}
	append_stream(&t, "stdout", res->stdout_buf, res->stdout_len, res->stdout_truncated);
	append_stream(&t, "stderr", res->stderr_buf, res->stderr_len, res->stderr_truncated);
	size_t text_len;
	char *text = capture_take(&t, &text_len);
	json_t *structured = result_to_json_object(res, tier);
	json_t *out = NULL;
	if (text && structured)
		out = json_pack("{s:[{s:s, s:s%}], s:o, s:b}", "content", "type", "text", "text", text,
				text_len, "structuredContent", structured,
				/* Anything but a clean exit is for the model to correct. */
				"isError", res->status != AJ_STATUS_OK);
	else
		json_decref(structured);
	free(text);
	return out;
}
