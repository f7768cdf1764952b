/* run_python: its definition, argument checks and result content, and what
 * every tool shares (the list, finding a tool by name, an error result). */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "files.h"
#include "tool.h"

/* In a session the model must know what it can count on keeping, and what
 * can take it away (a crash, a limit, the session's end). */
static void session_description(const struct aj_config *cfg, char *desc, size_t n)
{
	const struct aj_limits *l = &cfg->limits;
	const struct aj_session_limits *sl = &cfg->session;
	snprintf(desc, n,
		 "Run Python 3 code in a persistent sandbox session and get back its stdout, "
		 "stderr and exit status. State persists between calls, like cells of a notebook: "
		 "variables, functions, imports, and files in the workspace " AJ_SESSION_WORKSPACE
		 " (the working directory) are there for the next call, so send only the new "
		 "code. Matplotlib figures left open and images saved under outputs/ in the "
		 "workspace come back as images (at most %u per call). Move files in and out "
		 "with upload_file, download_file and list_files. Only the Python standard "
		 "library%s is available; there is no network. Limits per call: %g s of "
		 "wall-clock time, %u s of CPU, %u KiB of output per stream (more is cut and "
		 "stops the call). For the whole session: %u MiB of memory, %u processes and "
		 "threads, %u MiB of disk, files up to %u MiB. A call that crashes the "
		 "interpreter or hits a limit loses the variables and imports (workspace files "
		 "are kept), and the next result says so. The session closes after %g s without "
		 "a call or %g s in all; everything in it is then gone, and the next call starts "
		 "a new one and says so. Read the result's status: ok, error (non-zero exit or an "
		 "exception; see stderr), timeout, memory or output_limit.",
		 sl->images, cfg->tier == AJ_TIER_CONTAINER ? " and the packages of the image" : "",
		 l->wall_sec, l->cpu_sec, l->output_kb, l->memory_mb, l->pids, l->disk_mb,
		 l->file_size_mb, sl->idle_sec, sl->lifetime_sec);
}

static json_t *run_python_definition(const struct aj_config *cfg, bool sessions)
{
	const struct aj_limits *l = &cfg->limits;
	char desc[2000];
	/* The limits in the description, so the model writes code that fits
	 * them instead of learning them by failing. */
	if (sessions)
		session_description(cfg, desc, sizeof desc);
	else
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
		"string", "description",
		sessions ? "Python code to run in the session; it sees what earlier calls left."
			 : "The complete Python program to run.",
		"required", "code",
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
	if (sessions && output)
		/* What a session's call adds: its images, base64 (also sent as
		 * image content blocks). */
		json_object_update_new(
			json_object_get(output, "properties"),
			json_pack("{s:{s:s, s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}}}, "
				  "s:{s:s}}",
				  "images", "type", "array", "items", "type", "object", "properties",
				  "name", "type", "string", "mime", "type", "string", "data", "type",
				  "string", "bytes", "type", "integer", "images_dropped", "type",
				  "integer"));
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name",
			 TOOL_NAME, "title", "Run Python in a sandbox", "description", desc,
			 "inputSchema", input, "outputSchema", output, "annotations", "title",
			 "Run Python in a sandbox",
			 /* Without sessions nothing outside the sandbox changes, and
			  * the sandbox is gone after the call. In a session the code
			  * may change or delete the session's files. */
			 "readOnlyHint", !sessions, "destructiveHint", sessions,
			 /* The same code may print differently (time, randomness). */
			 "idempotentHint", 0,
			 /* No network: it reaches no outside system. */
			 "openWorldHint", 0);
}

json_t *tool_list(const struct aj_config *cfg, bool sessions)
{
	json_t *list = json_array();
	if (!list || json_array_append_new(list, run_python_definition(cfg, sessions))) {
		json_decref(list);
		return NULL;
	}
	if (sessions && file_tools_append(list, cfg)) {
		json_decref(list);
		return NULL;
	}
	return list;
}

static const char *const names[] = {
	[TOOL_RUN_PYTHON] = TOOL_NAME,
	[TOOL_UPLOAD_FILE] = "upload_file",
	[TOOL_DOWNLOAD_FILE] = "download_file",
	[TOOL_LIST_FILES] = "list_files",
};

const char *tool_name(enum tool_kind kind)
{
	return names[kind];
}

int tool_find(const char *name, bool sessions, enum tool_kind *out)
{
	/* Without sessions the file tools do not exist: there is no sandbox
	 * that outlives a call to hold the files. */
	size_t n = sessions ? sizeof names / sizeof names[0] : 1;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, names[i])) {
			*out = (enum tool_kind)i;
			return 0;
		}
	return -1;
}

json_t *tool_error(const char *fmt, ...)
{
	char text[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	size_t len;
	char *fixed = utf8_repair(text, strlen(text), &len);
	json_t *out = fixed ? json_pack("{s:[{s:s, s:s%}], s:b}", "content", "type", "text", "text",
					fixed, len, "isError", 1)
			    : NULL;
	free(fixed);
	return out;
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

/* The images' names in the text, so a model that cannot see images still
 * knows they were made (and what was left out). */
static void append_image_names(struct capture *t, const struct aj_result *res)
{
	char line[400];
	if (!res->image_count && !res->images_dropped)
		return;
	capture_append(t, "\n--- images ---", 15);
	for (size_t i = 0; i < res->image_count; i++) {
		const struct aj_image *im = &res->images[i];
		snprintf(line, sizeof line, "\n%.200s (%s, %zu bytes)", im->name, im->mime, im->len);
		capture_append(t, line, strlen(line));
	}
	if (res->images_dropped) {
		snprintf(line, sizeof line,
			 "\n%zu more not returned (over the number or size allowed per call)",
			 res->images_dropped);
		capture_append(t, line, strlen(line));
	}
}

/* One MCP image content block for each image, after the text block. */
static int append_images(json_t *content, const struct aj_result *res)
{
	for (size_t i = 0; i < res->image_count; i++) {
		const struct aj_image *im = &res->images[i];
		char *b64 = base64_encode(im->data, im->len, NULL);
		json_t *block = b64 ? json_pack("{s:s, s:s, s:s}", "type", "image", "data", b64,
						"mimeType", im->mime)
				    : NULL;
		free(b64);
		if (!block || json_array_append_new(content, block))
			return -1;
	}
	return 0;
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
	append_image_names(&t, res);
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
	if (out && append_images(json_object_get(out, "content"), res)) {
		json_decref(out);
		out = NULL;
	}
	return out;
}
