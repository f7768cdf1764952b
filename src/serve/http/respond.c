/* The answers every route shares, and the reading of a request's JSON
 * body: no route, no backend. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "../../api/api.h"
#include "json_caps.h"
#include "respond.h"
#include "wire.h"

void respond_json(struct http_response *rs, int status, json_t *body)
{
	rs->code = status;
	rs->content_type = "application/json";
	rs->body = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER |
						   JSON_REAL_PRECISION(12))
			: NULL;
	rs->len = rs->body ? strlen(rs->body) : 0;
	json_decref(body);
	if (!rs->body && status != 204) {
		rs->code = 500;
		rs->body = strdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
		rs->len = rs->body ? strlen(rs->body) : 0;
	}
}

void respond_error(struct http_response *rs, int status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	respond_json(rs, status,
		     json_pack("{s:{s:s, s:s%}}", "error", "code", code, "message", msg,
			       strlen(msg)));
}

void respond_method(struct http_response *rs, const char *method, const char *allow)
{
	respond_error(rs, 405, "method_not_allowed", "%s is not allowed here", method);
	rs->allow = allow;
}

/* A file refusal with the library's errno by name ("EACCES"), which
 * HTTP's status folds together: a remote client raises the same errno as
 * the local library (python/agentjail/remote.py). */
static void file_refusal(struct http_response *rs, int status, const char *code, int rc,
			 const char *message)
{
	respond_json(rs, status,
		     json_pack("{s:{s:s, s:s, s:s?}}", "error", "code", code, "message", message,
			       "errno", strerrorname_np(-rc)));
}

/* A file operation's error as HTTP: the path's fault is the caller's. */
void respond_file_error(struct http_response *rs, int rc, const char *message)
{
	switch (rc) {
	case -ENOENT:
		file_refusal(rs, 404, "not_found", rc, message);
		break;
	case -EFBIG:
		file_refusal(rs, 413, "too_large", rc, message);
		break;
	case -EACCES:
	case -EINVAL:
	case -ENAMETOOLONG:
	case -EILSEQ:
	case -EISDIR:
	case -ENOTDIR:
	case -ELOOP:  /* a symlink: never followed */
	case -EPERM:
	case -EEXIST:
		file_refusal(rs, 400, "bad_path", rc, message);
		break;
	case -ENOSPC:
	case -EDQUOT:
		file_refusal(rs, 507, "no_space", rc, message);
		break;
	default:
		file_refusal(rs, 500, "session_error", rc, message);
	}
}

int request_json_caps(const struct http_request *rq, struct http_response *rs)
{
	switch (json_caps_check(rq->body, rq->body_len)) {
	case JSON_CAPS_VALUES:
		respond_error(rs, 413, "json_too_many_values",
			      "the body's JSON holds more than %d values", JSON_CAP_VALUES);
		return -1;
	case JSON_CAPS_DEPTH:
		respond_error(rs, 400, "json_too_deep",
			      "the body's JSON nests deeper than %d levels", JSON_CAP_DEPTH);
		return -1;
	default:
		return 0;
	}
}

/* The body as a JSON object whose keys are all in allowed (NULL-ended). */
json_t *request_body(const struct http_request *rq, struct http_response *rs,
			   const char *const *allowed)
{
	json_error_t je;
	if (request_json_caps(rq, rs))
		return NULL; /* before jansson spends memory on it */
	/* An empty body is an empty object: POST /v1/sessions needs none. */
	json_t *o = rq->body_len ? json_loadb(rq->body, rq->body_len,
					      JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je)
				 : json_object();
	if (!o) {
		/* jansson quotes the text near the fault ("invalid token near
		 * 'ghp_...'"): a body's secrets' values must not come back in
		 * an answer or the access log, so only the place is said. */
		char *near = strstr(je.text, " near ");
		if (near)
			*near = '\0';
		respond_error(rs, 400, "bad_json", "the body is not JSON: %s (at byte %d)", je.text,
			      je.position);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		respond_error(rs, 400, "bad_request", "the body must be a JSON object");
		return NULL;
	}
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		bool known = false;
		for (size_t i = 0; allowed[i]; i++)
			known |= !strcmp(allowed[i], k);
		if (!known) {
			respond_error(rs, 400, "bad_request", "unknown field '%.100s'", k);
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* The code of a run request: a string of source, which Python cannot hold
 * a NUL in. */
int request_code(json_t *o, const char **code, size_t *len, struct http_response *rs)
{
	json_t *c = json_object_get(o, "code");
	if (!json_is_string(c)) {
		respond_error(rs, 400, "bad_request", "code: required, a string of Python source");
		return -1;
	}
	*code = json_string_value(c);
	*len = json_string_length(c);
	if (*len > AJ_MAX_CODE_BYTES) {
		/* The client's error, refused before any sandbox is asked: a
		 * 413 (counted as a refusal), not a sandbox_error. */
		respond_error(rs, 413, "too_large",
			      "code: %zu bytes is more than the %u (4 MiB) a program may be", *len,
			      AJ_MAX_CODE_BYTES);
		return -1;
	}
	const char *nul = memchr(*code, '\0', *len);
	if (nul) {
		respond_error(rs, 400, "bad_request", "code: contains a NUL byte at offset %zu",
			      (size_t)(nul - *code));
		return -1;
	}
	return 0;
}

json_t *run_failure_json(const char *code, const char *id, bool lost, bool may_have_started,
			 const char *message)
{
	json_t *o = json_pack("{s:{s:s, s:s}, s:s}", "error", "code", code, "message", message,
			      "run_id", id);
	if (o && lost) {
		json_object_set_new(o, "lost", json_true());
		json_object_set_new(o, "may_have_started", json_boolean(may_have_started));
		/* Safe only when no worker ever took it: agent code is not
		 * idempotent, and one that may have started may have acted. */
		json_object_set_new(o, "retry_safe", json_boolean(!may_have_started));
	}
	return o;
}

void respond_run_failure(struct http_response *rs, int status, const char *code,
			 const char *id, bool lost, bool may_have_started, const char *message)
{
	snprintf(rs->log_run, sizeof rs->log_run, "%s", id);
	snprintf(rs->log_verdict, sizeof rs->log_verdict, "%s", code);
	respond_json(rs, status, run_failure_json(code, id, lost, may_have_started, message));
}
