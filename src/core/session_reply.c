/* What the session interpreter's reply line says (src/core/repl.py's
 * answers), read by the host for every tier. The line is the session's own
 * output: the code in the session can write any line it likes on the reply
 * pipe, so each field is checked for its type and each size against its
 * cap here, and a reply that is not what repl.py sends is at worst a wrong
 * answer about this session's own call, never more. The lines come from
 * the tiers (session_take_reply, a microvm guest's VM_CALL_RESULT) through
 * src/api/session.c, or from fuzz/fuzz_session_reply.c. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "internal.h"
#include "status.h"

json_t *session_reply_json(const char *line, size_t len, struct aj_result *res)
{
	json_error_t je;
	json_t *reply = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!reply || !json_is_object(reply)) {
		json_decref(reply);
		reply = NULL;
		result_sandbox_error(res, "session: the interpreter's reply is not JSON: %s", je.text);
	}
	return reply;
}

/* At most max images of at most limit bytes each: repl.py stops at both,
 * but the reply may not be repl.py's (any cell can write it), so the host
 * holds the session's contract itself. */
static int take_images(json_t *arr, struct aj_result *res, size_t max, size_t limit)
{
	size_t n = json_array_size(arr);
	if (!n)
		return 0;
	res->images = calloc(n, sizeof *res->images);
	if (!res->images)
		return -ENOMEM;
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *mime = json_string_value(json_object_get(e, "mime"));
		json_t *d = json_object_get(e, "data");
		struct aj_image *im = &res->images[res->image_count];
		if (res->image_count >= max || !name || !mime || !json_is_string(d) ||
		    base64_decode(json_string_value(d), json_string_length(d), &im->data,
				  &im->len) ||
		    im->len > limit || strncmp(mime, "image/", 6)) {
			/* Not an image the caps allow: counted, not kept. */
			free(im->data);
			im->data = NULL;
			res->images_dropped++;
			continue;
		}
		im->name = strdup(name);
		im->mime = strdup(mime);
		res->image_count++;
	}
	return 0;
}

void session_run_reply(json_t *reply, const struct aj_config *cfg, struct aj_result *res)
{
	size_t image_bytes = (size_t)cfg->session.image_kb * 1024;
	json_t *exit = json_object_get(reply, "exit");
	json_int_t code = json_integer_value(exit);
	if (!json_is_integer(exit) || code < 0 || code > 255) {
		/* repl.py's exit is a status's code, 0-255 (exit_rule.py). */
		result_sandbox_error(res, "session: the interpreter's reply has no exit code "
					  "from 0 to 255");
	} else {
		res->cpu_ms = (double)json_integer_value(json_object_get(reply, "cpu_us")) / 1000.0;
		if (!res->memory_kb)
			res->memory_kb = (uint64_t)json_integer_value(json_object_get(reply, "rss_kb"));
		/* The cell's end, as facts for the status rules: its exit code,
		 * and the interpreter's word that a MemoryError ended the cell
		 * ("memory_error": true, rule 7). The reply is the session's
		 * own output, so a cell can claim it only for its own call. */
		struct end_facts f = {
			.ended = true,
			.wstatus = W_EXITCODE((int)code, 0),
			.cpu_ms = res->cpu_ms,
			.memory_error = json_is_true(json_object_get(reply, "memory_error")),
		};
		status_decide(&f, &cfg->limits, res);
		if (take_images(json_object_get(reply, "images"), res, cfg->session.images,
				image_bytes))
			result_sandbox_error(res, "session: out of memory");
		/* A count, never negative: a forged -1 would read as 2^64 - 1. */
		json_int_t dropped = json_integer_value(json_object_get(reply, "dropped"));
		if (dropped > 0)
			res->images_dropped += (size_t)dropped;
	}
}

/* A value's text, taken only as a string within the output limit: the
 * reply is the session's own output, so its size is held here too. */
static char *value_field(json_t *v, size_t cap)
{
	if (!json_is_string(v) || json_string_length(v) > cap)
		return NULL;
	return strndup(json_string_value(v), json_string_length(v));
}

void session_value_reply(json_t *reply, const struct aj_config *cfg, struct aj_result *res)
{
	session_run_reply(reply, cfg, res);
	json_t *v = json_object_get(reply, "value");
	if (res->status == AJ_STATUS_SANDBOX_ERROR || !json_is_object(v))
		return;
	size_t cap = (size_t)cfg->limits.output_kb * 1024;
	res->value_text = value_field(json_object_get(v, "text"), cap);
	if (res->value_text)
		res->value_html = value_field(json_object_get(v, "html"), cap);
}

void session_exec_reply(json_t *reply, const struct aj_config *cfg, struct aj_result *res)
{
	json_t *exit = json_object_get(reply, "exit"), *sig = json_object_get(reply, "signal");
	json_int_t code = json_integer_value(exit), signo = json_integer_value(sig);
	const char *why = json_string_value(json_object_get(reply, "error"));
	int ws;
	if (why) {
		/* It never started: its directory was not one (a symlink, a
		 * file, missing). The caller's to fix, in the interpreter's
		 * words. */
		result_sandbox_error(res, "exec: cwd: %.400s", why);
		return;
	}
	/* One of the two, each in its range: the reply is the session's own
	 * output (any cell can write it), so it is checked, never trusted
	 * past this call's own result. */
	if (json_is_integer(exit) && !sig && code >= 0 && code <= 255)
		ws = W_EXITCODE((int)code, 0);
	else if (json_is_integer(sig) && !exit && signo >= 1 && signo <= 64)
		ws = (int)signo; /* a wait status: killed by signo, no core */
	else {
		result_sandbox_error(res, "session: the interpreter's exec reply has no exit code "
					  "from 0 to 255 or signal from 1 to 64");
		return;
	}
	json_int_t cpu_us = json_integer_value(json_object_get(reply, "cpu_us"));
	json_int_t rss_kb = json_integer_value(json_object_get(reply, "rss_kb"));
	res->cpu_ms = cpu_us > 0 ? (double)cpu_us / 1000.0 : 0;
	if (!res->memory_kb && rss_kb > 0)
		res->memory_kb = (uint64_t)rss_kb;
	struct end_facts f = {
		.ended = true,
		.wstatus = ws,
		.cpu_ms = res->cpu_ms,
		/* Its own deadline passed: the interpreter killed its group. */
		.timed_out = json_is_true(json_object_get(reply, "timed_out")),
	};
	status_decide(&f, &cfg->limits, res);
}

void session_js_reply(json_t *reply, const struct aj_config *cfg, struct aj_result *res)
{
	const char *why = json_string_value(json_object_get(reply, "error"));
	if (why) {
		/* The image has no node, or node cannot start under the
		 * memory limit: repl.py's words ("javascript: ..."). */
		result_sandbox_error(res, "%.400s", why);
		return;
	}
	session_exec_reply(reply, cfg, res);
	if (json_is_true(json_object_get(reply, "js_restarted")))
		result_add_note(res, "the session's JavaScript interpreter had ended: variables "
				     "from earlier JavaScript calls are gone (Python's state and the "
				     "workspace files are kept)",
				true);
}

static const struct {
	const char *name;
	int code;
} errnos[] = {{"ENOENT", ENOENT}, {"EISDIR", EISDIR}, {"ENOTDIR", ENOTDIR}, {"ELOOP", ELOOP},
	      {"EFBIG", EFBIG},   {"ENOSPC", ENOSPC}, {"EEXIST", EEXIST},   {"EACCES", EACCES},
	      {"EPERM", EPERM},   {"EDQUOT", EDQUOT}, {"EINVAL", EINVAL},   {"ENAMETOOLONG", ENAMETOOLONG},
	      {"ESRCH", ESRCH},   {"EBADF", EBADF},   {"EPIPE", EPIPE},     {"ENOTTY", ENOTTY},
	      {"ENODEV", ENODEV}, {"EAGAIN", EAGAIN}, {"EPROTO", EPROTO}, {"EMFILE", EMFILE},
	      {"ENOMEM", ENOMEM}};

int session_file_reply_error(const char *what, json_t *reply, struct aj_error *err)
{
	const char *e = json_string_value(json_object_get(reply, "error"));
	if (!e)
		return 0;
	const char *name = json_string_value(json_object_get(reply, "errno"));
	int code = EIO;
	for (size_t i = 0; name && i < sizeof errnos / sizeof errnos[0]; i++)
		if (!strcmp(name, errnos[i].name))
			code = errnos[i].code;
	return error_set(err, -code, "%s: %.400s", what, e);
}

int session_get_reply(json_t *reply, size_t cap, const char *path, void **data, size_t *len,
		      struct aj_error *err)
{
	int rc = 0;
	json_t *d = json_object_get(reply, "data");
	unsigned char *buf = NULL;
	size_t n = 0;
	if (!json_is_string(d) ||
	    base64_decode(json_string_value(d), json_string_length(d), &buf, &n))
		rc = error_set(err, -EPROTO, "get: the interpreter's reply holds no data");
	else if (n > cap) {
		free(buf);
		rc = error_set(err, -EFBIG, "get: %s is more than the %zu MiB allowed", path,
			       cap >> 20);
	} else {
		*data = buf;
		*len = n;
	}
	return rc;
}

static enum aj_file_type file_type(const char *t)
{
	if (t && !strcmp(t, "file"))
		return AJ_FILE_REGULAR;
	if (t && !strcmp(t, "directory"))
		return AJ_FILE_DIRECTORY;
	if (t && !strcmp(t, "symlink"))
		return AJ_FILE_SYMLINK;
	return AJ_FILE_OTHER;
}

int session_list_reply(json_t *reply, struct aj_file_info **entries, size_t *count,
		       struct aj_error *err)
{
	int rc = 0;
	json_t *arr = json_object_get(reply, "entries");
	if (!json_is_array(arr))
		rc = error_set(err, -EPROTO, "list: the interpreter's reply holds no entries");
	if (!rc && json_array_size(arr)) {
		struct aj_file_info *v = calloc(json_array_size(arr), sizeof *v);
		size_t i, n = 0;
		json_t *e;
		if (!v)
			rc = error_set(err, -ENOMEM, "list: out of memory");
		json_array_foreach(arr, i, e) {
			if (!v)
				break;
			const char *name = json_string_value(json_object_get(e, "name"));
			if (!name || !(v[n].name = strdup(name)))
				continue;
			v[n].type = file_type(json_string_value(json_object_get(e, "type")));
			json_int_t size = json_integer_value(json_object_get(e, "size"));
			v[n].size = size > 0 ? (uint64_t)size : 0;
			n++;
		}
		*entries = v;
		*count = n;
	}
	return rc;
}
