/* upload_file, download_file, list_files: the model's way to move files in
 * and out of its session's workspace. They only call aj_session_put, _get
 * and _list, where every check on paths and sizes lives (no "..", no
 * symlinks, nothing outside the workspace, the transfer limit): this file
 * adds none of its own to get wrong, and passes the library's refusals to
 * the model word for word so it can correct the path. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tiers/tier.h"
#include "../core/internal.h"
#include "api.h"
#include "tool_command.h"
#include "tool_files.h"

#define WS AJ_SESSION_WORKSPACE

static json_t *upload_definition(const struct aj_config *cfg)
{
	char desc[600];
	snprintf(desc, sizeof desc,
		 "Write a file into the session's workspace (" WS "), creating its directories "
		 "and replacing a file already there. The path is relative to the workspace. "
		 "Send text as is, or binary data base64-encoded with encoding \"base64\". "
		 "At most %u MiB.",
		 cfg->session.transfer_mb);
	json_t *input = json_pack(
		"{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:[s,s], s:s, s:s}}, s:[s,s], s:b}",
		"type", "object", "properties",
		"path", "type", "string", "description", "Where to write it, relative to the workspace.",
		"content", "type", "string", "description", "The file's content: text, or base64.",
		"encoding", "type", "string", "enum", "utf-8", "base64", "default", "utf-8",
		"description", "How content is encoded.",
		"required", "path", "content", "additionalProperties", 0);
	json_t *output = json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s,s]}", "type", "object",
				   "properties", "path", "type", "string", "bytes", "type",
				   "integer", "required", "path", "bytes");
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}", "name",
			 "upload_file", "title", "Upload a file to the sandbox", "description", desc,
			 "inputSchema", input, "outputSchema", output, "annotations",
			 /* It changes only the session's own files, and may
			  * replace one. */
			 "readOnlyHint", 0, "destructiveHint", 1, "idempotentHint", 1,
			 "openWorldHint", 0);
}

static json_t *download_definition(const struct aj_config *cfg)
{
	char desc[600];
	snprintf(desc, sizeof desc,
		 "Read a file from the session's workspace (" WS "); the path is relative to it. "
		 "Text (valid UTF-8) comes back as is; anything else base64-encoded, and images "
		 "also as images. At most %u MiB.",
		 cfg->session.transfer_mb);
	json_t *input = json_pack("{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}", "type", "object",
				  "properties", "path", "type", "string", "description",
				  "The file to read, relative to the workspace.", "required",
				  "path", "additionalProperties", 0);
	json_t *output = json_pack(
		"{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s, s:[s,s]}, s:{s:s}}, s:[s,s,s,s]}", "type",
		"object", "properties", "path", "type", "string", "bytes", "type", "integer",
		"encoding", "type", "string", "enum", "utf-8", "base64", "content", "type", "string",
		"required", "path", "bytes", "encoding", "content");
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}", "name",
			 "download_file", "title", "Download a file from the sandbox",
			 "description", desc, "inputSchema", input, "outputSchema", output,
			 "annotations", "readOnlyHint", 1, "destructiveHint", 0,
			 "idempotentHint", 1, "openWorldHint", 0);
}

static json_t *list_definition(void)
{
	json_t *input = json_pack("{s:s, s:{s:{s:s, s:s}}, s:b}", "type", "object", "properties",
				  "path", "type", "string", "description",
				  "The directory, relative to the workspace; the workspace itself "
				  "if left out.",
				  "additionalProperties", 0);
	json_t *entry = json_pack("{s:s, s:{s:{s:s}, s:{s:s, s:[s,s,s,s]}, s:{s:s}}}", "type",
				  "object", "properties", "name", "type", "string", "type", "type",
				  "string", "enum", "file", "directory", "symlink", "other", "size",
				  "type", "integer");
	json_t *output = json_pack("{s:s, s:{s:{s:s}, s:{s:s, s:o}}, s:[s,s]}", "type", "object",
				   "properties", "path", "type", "string", "entries", "type",
				   "array", "items", entry, "required", "path", "entries");
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}", "name", "list_files",
			 "title", "List files in the sandbox", "description",
			 "List a directory of the session's workspace (" WS "): each entry's name, "
			 "type (file, directory, symlink, other) and size in bytes.",
			 "inputSchema", input, "outputSchema", output, "annotations",
			 "readOnlyHint", 1, "destructiveHint", 0, "idempotentHint", 1,
			 "openWorldHint", 0);
}

static int file_tools_append(json_t *list, const struct aj_config *cfg)
{
	json_t *tools[] = {upload_definition(cfg), download_definition(cfg), list_definition()};
	int bad = 0;
	for (size_t i = 0; i < 3; i++)
		bad |= !tools[i] || json_array_append_new(list, tools[i]);
	return bad ? -1 : 0;
}

json_t *tool_list(const struct aj_config *cfg, bool sessions, unsigned tools,
		  const struct tool_packages *packages)
{
	json_t *list = json_array();
	int bad = !list;
	if (!bad && (tools & TOOL_BIT(TOOL_RUN_PYTHON)))
		bad = json_array_append_new(list, tool_definition_object(cfg, sessions, packages));
	/* A command runs in the session, beside the code's state and files. */
	if (!bad && sessions && (tools & TOOL_BIT(TOOL_RUN_COMMAND)))
		bad = json_array_append_new(list, command_tool_definition(cfg));
	if (!bad && sessions)
		bad = file_tools_append(list, cfg);
	if (bad) {
		json_decref(list);
		return NULL;
	}
	return list;
}

static const char *const names[] = {
	[TOOL_RUN_PYTHON] = AJ_TOOL_NAME,
	[TOOL_UPLOAD_FILE] = "upload_file",
	[TOOL_DOWNLOAD_FILE] = "download_file",
	[TOOL_LIST_FILES] = "list_files",
	[TOOL_RUN_COMMAND] = COMMAND_TOOL_NAME,
};

const char *tool_name(enum tool_kind kind)
{
	return names[kind];
}

int tool_find(const char *name, bool sessions, unsigned tools, enum tool_kind *out)
{
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(name, names[i]))
			continue;
		bool running = TOOLS_RUNNING & TOOL_BIT(i);
		/* Without sessions the file tools and run_command do not exist:
		 * there is no sandbox that outlives a call to hold the files. A
		 * running tool exists only where the deployer turned it on. */
		if ((running && !(tools & TOOL_BIT(i))) ||
		    (!sessions && i != TOOL_RUN_PYTHON))
			return -1;
		*out = (enum tool_kind)i;
		return 0;
	}
	return -1;
}

unsigned tool_bit_named(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if ((TOOLS_RUNNING & TOOL_BIT(i)) && strlen(names[i]) == len &&
		    !strncmp(name, names[i], len))
			return TOOL_BIT(i);
	return 0;
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

int file_tool_arguments(enum tool_kind kind, json_t *args, char *why, size_t n)
{
	static const char *const allowed[][3] = {
		[TOOL_UPLOAD_FILE] = {"path", "content", "encoding"},
		[TOOL_DOWNLOAD_FILE] = {"path"},
		[TOOL_LIST_FILES] = {"path"},
	};
	const char *name = tool_name(kind);
	if (!json_is_object(args)) {
		snprintf(why, n, "%s: arguments must be an object", name);
		return -1;
	}
	const char *key;
	json_t *v;
	json_object_foreach(args, key, v) {
		bool known = false;
		for (size_t i = 0; i < 3; i++)
			known |= allowed[kind][i] && !strcmp(key, allowed[kind][i]);
		if (!known) {
			snprintf(why, n, "%s: unexpected argument '%.64s'", name, key);
			return -1;
		}
		if (!json_is_string(v)) {
			snprintf(why, n, "%s: '%.64s' must be a string", name, key);
			return -1;
		}
		/* Read as a C string from here: a NUL would cut a path short. */
		if (memchr(json_string_value(v), '\0', json_string_length(v))) {
			snprintf(why, n, "%s: '%.64s' holds a NUL byte (\\u0000)", name, key);
			return -1;
		}
	}
	if (kind != TOOL_LIST_FILES && !json_object_get(args, "path")) {
		snprintf(why, n, "%s: 'path' is required", name);
		return -1;
	}
	if (kind == TOOL_UPLOAD_FILE) {
		const char *enc = json_string_value(json_object_get(args, "encoding"));
		if (!json_object_get(args, "content")) {
			snprintf(why, n, "upload_file: 'content' is required");
			return -1;
		}
		if (enc && strcmp(enc, "utf-8") && strcmp(enc, "base64")) {
			snprintf(why, n, "upload_file: 'encoding' must be \"utf-8\" or \"base64\"");
			return -1;
		}
	}
	return 0;
}

/* A successful result: the note (if any) and text, as one text block. */
static json_t *text_result(const char *note, const char *text, size_t len, json_t *structured)
{
	json_t *block;
	if (!structured)
		return NULL;
	if (note) {
		size_t nl = strlen(note);
		char *both = malloc(nl + 2 + len);
		if (!both) {
			json_decref(structured);
			return NULL;
		}
		memcpy(both, note, nl);
		memcpy(both + nl, "\n\n", 2);
		memcpy(both + nl + 2, text, len);
		block = json_pack("{s:s, s:s%}", "type", "text", "text", both, nl + 2 + len);
		free(both);
	} else {
		block = json_pack("{s:s, s:s%}", "type", "text", "text", text, len);
	}
	return json_pack("{s:[o], s:o, s:b}", "content", block, "structuredContent", structured,
			 "isError", 0);
}

static json_t *failed(const char *note, const char *name, const struct aj_error *err)
{
	return tool_error("%s%s%s: %s", note ? note : "", note ? "\n\n" : "", name, err->message);
}

/* Base64 as models write it: line breaks and spaces are dropped first. */
static int decode_lenient(const char *s, size_t len, unsigned char **out, size_t *out_len)
{
	char *clean = malloc(len + 1);
	if (!clean)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < len; i++)
		if (!strchr(" \t\r\n", s[i]))
			clean[k++] = s[i];
	int rc = base64_decode(clean, k, out, out_len);
	free(clean);
	return rc;
}

static json_t *upload(struct aj_session *s, json_t *args, const char *note)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	json_t *content = json_object_get(args, "content");
	const char *enc = json_string_value(json_object_get(args, "encoding"));
	const void *data = json_string_value(content);
	size_t len = json_string_length(content);
	unsigned char *decoded = NULL;
	if (enc && !strcmp(enc, "base64")) {
		if (decode_lenient(json_string_value(content), len, &decoded, &len))
			return tool_error("%s%supload_file: content is not valid base64",
					  note ? note : "", note ? "\n\n" : "");
		data = decoded;
	}
	struct aj_error err = {0};
	int rc = aj_session_put(s, path, data, len, &err);
	free(decoded);
	if (rc)
		return failed(note, "upload_file", &err);
	char text[600];
	snprintf(text, sizeof text, "wrote %.400s (%zu bytes)", path, len);
	return text_result(note, text, strlen(text),
			   json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)len));
}

/* The image types a model client can show, by their first bytes. */
static const char *image_type(const unsigned char *d, size_t n)
{
	if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8))
		return "image/png";
	if (n >= 3 && !memcmp(d, "\xff\xd8\xff", 3))
		return "image/jpeg";
	if (n >= 6 && (!memcmp(d, "GIF87a", 6) || !memcmp(d, "GIF89a", 6)))
		return "image/gif";
	if (n >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4))
		return "image/webp";
	return NULL;
}

static json_t *download(struct aj_session *s, json_t *args, const char *note)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	void *data;
	size_t len;
	struct aj_error err = {0};
	if (aj_session_get(s, path, &data, &len, &err))
		return failed(note, "download_file", &err);
	json_t *out = NULL;
	if (utf8_valid(data, len)) {
		out = text_result(note, data, len,
				  json_pack("{s:s, s:I, s:s, s:s%}", "path", path, "bytes",
					    (json_int_t)len, "encoding", "utf-8", "content", data,
					    len));
		free(data);
		return out;
	}
	char *b64 = base64_encode(data, len, NULL);
	char head[600];
	snprintf(head, sizeof head, "%.400s is not UTF-8 text (%zu bytes); its content, base64:\n",
		 path, len);
	size_t hl = strlen(head), bl = b64 ? strlen(b64) : 0;
	char *text = b64 ? malloc(hl + bl + 1) : NULL;
	if (text) {
		memcpy(text, head, hl);
		memcpy(text + hl, b64, bl + 1);
		out = text_result(note, text, hl + bl,
				  json_pack("{s:s, s:I, s:s, s:s}", "path", path, "bytes",
					    (json_int_t)len, "encoding", "base64", "content", b64));
	}
	/* An image the model can look at, beside the bytes it can decode. */
	const char *mime = image_type(data, len);
	if (out && mime &&
	    json_array_append_new(json_object_get(out, "content"),
				  json_pack("{s:s, s:s, s:s}", "type", "image", "data", b64,
					    "mimeType", mime))) {
		json_decref(out);
		out = NULL;
	}
	free(text);
	free(b64);
	free(data);
	return out;
}

static const char *type_name(enum aj_file_type t)
{
	return t == AJ_FILE_REGULAR ? "file" :
	       t == AJ_FILE_DIRECTORY ? "directory" :
	       t == AJ_FILE_SYMLINK ? "symlink" : "other";
}

static json_t *list(struct aj_session *s, json_t *args, const char *note)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	if (!path)
		path = "";
	struct aj_file_info *e;
	size_t n;
	struct aj_error err = {0};
	if (aj_session_list(s, path, &e, &n, &err))
		return failed(note, "list_files", &err);
	struct capture t;
	capture_init(&t, (size_t)16 << 20);
	char line[700];
	snprintf(line, sizeof line, "%.400s: %zu %s", path[0] ? path : WS, n,
		 n == 1 ? "entry" : "entries");
	capture_append(&t, line, strlen(line));
	json_t *entries = json_array();
	for (size_t i = 0; i < n; i++) {
		if (e[i].type == AJ_FILE_DIRECTORY)
			snprintf(line, sizeof line, "\n%.600s/", e[i].name);
		else if (e[i].type == AJ_FILE_REGULAR)
			snprintf(line, sizeof line, "\n%.600s  (%llu bytes)", e[i].name,
				 (unsigned long long)e[i].size);
		else
			snprintf(line, sizeof line, "\n%.600s  (%s)", e[i].name, type_name(e[i].type));
		capture_append(&t, line, strlen(line));
		if (entries)
			json_array_append_new(entries,
					      json_pack("{s:s, s:s, s:I}", "name", e[i].name, "type",
							type_name(e[i].type), "size",
							(json_int_t)e[i].size));
	}
	aj_file_list_free(e, n);
	size_t len;
	char *text = capture_take(&t, &len);
	json_t *out = entries ? text_result(note, text, len,
					    json_pack("{s:s, s:o}", "path", path[0] ? path : ".",
						      "entries", entries))
			      : NULL;
	free(text);
	return out;
}

json_t *file_tool_call(enum tool_kind kind, struct aj_session *s, json_t *args,
		       const char *note)
{
	switch (kind) {
	case TOOL_UPLOAD_FILE:
		return upload(s, args, note);
	case TOOL_DOWNLOAD_FILE:
		return download(s, args, note);
	case TOOL_LIST_FILES:
		return list(s, args, note);
	case TOOL_RUN_PYTHON:
	case TOOL_RUN_COMMAND:
		break;
	}
	return tool_error("not a file tool");
}

char *aj_tool_list(struct aj_sandbox *sb, bool session)
{
	if (!sb)
		return NULL;
	json_t *list = tool_list(sandbox_config(sb), session, TOOLS_DEFAULT, tool_packages_of(sb));
	char *out = list ? json_dumps(list, JSON_COMPACT) : NULL;
	json_decref(list);
	return out;
}

char *aj_session_tool_call(struct aj_session *s, const char *name, const char *args_json,
			   size_t len)
{
	enum tool_kind kind;
	json_t *result;
	json_error_t jerr;
	json_t *args = args_json ? json_loadb(args_json, len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	char why[200];
	/* Every refusal is a result the model reads, as on the MCP server. */
	if (!s || !name || tool_find(name, true, TOOLS_DEFAULT, &kind) || kind == TOOL_RUN_PYTHON)
		result = tool_error("Unknown tool: %.120s (the file tools are upload_file, "
				    "download_file and list_files)", name ? name : "(none)");
	else if (!args)
		result = tool_error("Invalid arguments for %s: not a JSON object (%s)", name,
				    args_json ? jerr.text : "missing");
	else if (file_tool_arguments(kind, args, why, sizeof why))
		result = tool_error("Invalid arguments for %s: %s (the tool's inputSchema says "
				    "what it takes)", name, why);
	else
		result = file_tool_call(kind, s, args, NULL);
	json_decref(args);
	char *out = result ? json_dumps(result, JSON_COMPACT) : NULL;
	json_decref(result);
	return out;
}
