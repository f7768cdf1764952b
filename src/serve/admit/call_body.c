/* A session call's body (call_body.h). The command's own rules (a
 * directory inside the workspace, the variables' names, stdin within the
 * transfer limit, a timeout within the wall clock) are the library's
 * (session_exec_check, the same that aj_session_exec applies); this file
 * only reads the JSON into a struct aj_exec and words what is not the
 * right shape. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../api/api.h"
#include "../../core/internal.h"
#include "call_body.h"
#include "call_limits.h"
#include "narrow.h"

static const char *const run_fields[] = {"code", "limits", "language", "value", "context",
					 "fresh", NULL};
static const char *const exec_fields[] = {"command", "argv", "cwd", "env", "stdin", "timeout",
					  NULL};

/* A string field (NULL when absent) held as a C string: no NUL inside. */
static int string_field(json_t *o, const char *name, const char **out, struct aj_error *err)
{
	json_t *v = json_object_get(o, name);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return error_set(err, -EINVAL, "%s: expected a string", name);
	const char *nul = memchr(json_string_value(v), '\0', json_string_length(v));
	if (nul)
		return error_set(err, -EINVAL, "%s: holds a NUL byte at offset %zu", name,
				 (size_t)(nul - json_string_value(v)));
	*out = json_string_value(v);
	return 0;
}

static int argv_field(json_t *o, struct call_body *b, struct aj_error *err)
{
	json_t *a = json_object_get(o, "argv");
	if (!a)
		return 0;
	if (!json_is_array(a))
		return error_set(err, -EINVAL, "argv: expected an array of strings");
	size_t n = json_array_size(a);
	if (!(b->argv = calloc(n + 1, sizeof *b->argv)))
		return error_set(err, -ENOMEM, "argv: out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(a, i);
		if (!json_is_string(v))
			return error_set(err, -EINVAL, "argv[%zu]: expected a string", i);
		if (memchr(json_string_value(v), '\0', json_string_length(v)))
			return error_set(err, -EINVAL, "argv[%zu]: holds a NUL byte", i);
		b->argv[i] = json_string_value(v);
	}
	b->x.argv = b->argv;
	return 0;
}

/* "env": {"NAME": "VALUE"} by the rules of a run's (request_env.c): the
 * library's, and never a variable the session already has. */
static int env_field(json_t *o, const struct aj_config *cfg, struct call_body *b,
		     struct aj_error *err)
{
	json_t *e = json_object_get(o, "env");
	if (!e)
		return 0;
	if (!(b->env = malloc(sizeof *b->env)) || !(b->env_list = calloc(AJ_MAX_ENV, sizeof(char *))))
		return error_set(err, -ENOMEM, "env: out of memory");
	int rc = request_env_parse(cfg, e, b->env, err);
	if (rc)
		return rc;
	const char *p = b->env->vars;
	for (uint32_t i = 0; i < b->env->count; i++, p += strlen(p) + 1)
		b->env_list[i] = p;
	b->x.env = b->env_list;
	b->x.env_count = b->env->count;
	return 0;
}

static int exec_parse(json_t *o, const struct aj_config *cfg, struct call_body *b,
		      const char **code, struct aj_error *err)
{
	const char *stdin_b64;
	int rc;
	*code = "bad_request";
	json_t *in = json_object_get(o, "stdin");
	if (b->spawn && json_is_boolean(in))
		b->stdin_open = json_is_true(in), in = NULL;
	if ((rc = string_field(o, "command", &b->x.command, err)) || (rc = argv_field(o, b, err)) ||
	    (rc = string_field(o, "cwd", &b->x.cwd, err)))
		return rc;
	if (in && !json_is_string(in))
		return error_set(err, -EINVAL, b->spawn ? "stdin: expected true (kept open) or "
							  "base64 (the command's first input)"
							: "stdin: expected a string");
	if ((rc = string_field(in ? o : NULL, "stdin", &stdin_b64, err)))
		return rc;
	if (stdin_b64 && base64_decode(stdin_b64, strlen(stdin_b64), &b->stdin_data,
				       &b->x.stdin_len))
		return error_set(err, -EINVAL, "stdin: expected base64 (the bytes of the "
					       "command's standard input)");
	b->x.stdin_data = b->stdin_data;
	json_t *t = json_object_get(o, "timeout");
	if (t && (!json_is_number(t) || !(json_number_value(t) > 0) ||
		  !isfinite(json_number_value(t))))
		return error_set(err, -EINVAL, "timeout: expected a positive number of seconds");
	b->x.timeout_sec = t ? json_number_value(t) : 0;
	if ((rc = env_field(o, cfg, b, err))) {
		*code = "bad_env";
		return rc;
	}
	/* The rest as aj_session_exec will check it, in its words, which
	 * start with the field as serve's own do ("cwd: ..."). */
	rc = b->spawn ? session_spawn_check(cfg, &b->x, err) : session_exec_check(cfg, &b->x, err);
	if (rc == -EFBIG)
		*code = "too_large";
	static const char library[] = "exec: ";
	if (rc && !strncmp(err->message, library, strlen(library)))
		memmove(err->message, err->message + strlen(library),
			strlen(err->message) - strlen(library) + 1);
	return rc;
}

/* A notebook cell's asks (aj_session_run_cell): "value": true (its last
 * value apart) and "context": NAME (a namespace of its own), Python's
 * only; "fresh": true (the context's state forgotten first), any cell
 * language's. The name's rule is the library's, which says it. */
static int cell_fields(json_t *o, struct call_body *b, const char **code, struct aj_error *err)
{
	json_t *v = json_object_get(o, "value"), *f = json_object_get(o, "fresh");
	json_t *c = json_object_get(o, "context");
	*code = "bad_request";
	if (v && !json_is_boolean(v))
		return error_set(err, -EINVAL, "value: expected true or false");
	if (f && !json_is_boolean(f))
		return error_set(err, -EINVAL, "fresh: expected true or false");
	if (c && !json_is_string(c))
		return error_set(err, -EINVAL, "context: expected a name");
	b->value = json_is_true(v);
	b->fresh = json_is_true(f);
	b->context = json_string_value(c);
	if (b->context && cell_context_check(b->context, err))
		return -EINVAL;
	if ((b->value || b->context) && b->lang != AJ_LANG_PYTHON)
		return error_set(err, -EINVAL, "%s: Python's only, not %s's",
				 b->value ? "value" : "context", aj_language_name(b->lang));
	if (b->fresh && b->lang != AJ_LANG_PYTHON && b->lang != AJ_LANG_JAVASCRIPT &&
	    b->lang != AJ_LANG_TYPESCRIPT)
		return error_set(err, -EINVAL, "fresh: a %s line is a command, with no state to "
				 "forget", aj_language_name(b->lang));
	return 0;
}

/* A parse's end: 0, or -1 with *status and b cleared. */
static int parsed(int rc, struct call_body *b, int *status, const char **code)
{
	if (!rc)
		return 0;
	*status = rc == -EFBIG ? 413 : rc == -ENOMEM ? 500 : 400;
	if (rc == -ENOMEM)
		*code = "internal";
	call_body_clear(b);
	return -1;
}

int call_body_parse(json_t *o, bool exec, const struct aj_config *cfg, struct call_body *b,
		    int *status, const char **code, struct aj_error *err)
{
	*b = (struct call_body){.o = json_incref(o), .exec = exec};
	int rc;
	if (exec) {
		rc = exec_parse(o, cfg, b, code, err);
	} else {
		json_t *c = json_object_get(o, "code");
		b->code = json_string_value(c) ? json_string_value(c) : "";
		b->len = json_string_length(c);
		*code = "bad_language";
		if (!(rc = language_field(o, &b->lang, err))) {
			*code = "bad_limits";
			rc = call_limits_parse(json_object_get(o, "limits"), cfg->limits.wall_sec,
					       &b->call_sec, err);
		}
		if (!rc)
			rc = cell_fields(o, b, code, err);
	}
	return parsed(rc, b, status, code);
}

int call_body_parse_spawn(json_t *o, const struct aj_config *cfg, struct call_body *b,
			  int *status, const char **code, struct aj_error *err)
{
	*b = (struct call_body){.o = json_incref(o), .exec = true, .spawn = true};
	int rc = exec_parse(o, cfg, b, code, err);
	return parsed(rc, b, status, code);
}

int call_body_read(const struct http_request *rq, struct http_response *rs, bool exec,
		   const struct aj_config *cfg, struct call_body *b)
{
	json_t *o = request_body(rq, rs, exec ? exec_fields : run_fields);
	const char *code;
	size_t len;
	int status;
	const char *why;
	struct aj_error err = {0};
	*b = (struct call_body){0};
	if (!o || (!exec && request_code(o, &code, &len, rs))) {
		json_decref(o);
		return -1;
	}
	int rc = call_body_parse(o, exec, cfg, b, &status, &why, &err);
	json_decref(o);
	if (rc)
		respond_error(rs, status, why, "%s", err.message);
	return rc;
}

void call_body_clear(struct call_body *b)
{
	json_decref(b->o);
	free(b->argv);
	free(b->env);
	free(b->env_list);
	free(b->stdin_data);
	*b = (struct call_body){0};
}

int call_body_run(struct aj_session *s, const struct call_body *b, struct aj_cancel *cancel,
		  const struct aj_stream *stream, struct aj_result *res)
{
	/* A command keeps its own timeout inside the sandbox: it kills the
	 * command's process group and keeps the interpreter's state. */
	if (b->exec)
		return aj_session_exec(s, &b->x, cancel, stream, res);
	/* Code's shorter timeout is a timer here that cancels the call. */
	struct aj_cancel *own = NULL;
	struct call_deadline dl;
	if (b->call_sec && !cancel && !aj_cancel_new(&own))
		cancel = own;
	if ((b->call_sec && !cancel) || call_deadline_start(&dl, cancel, b->call_sec)) {
		aj_cancel_free(own);
		result_init(res);
		result_sandbox_error(res, "the call's timeout of %g s cannot be kept: out of memory "
					  "or threads",
				     b->call_sec);
		return -EAGAIN;
	}
	const struct aj_cell cell = {.lang = b->lang, .code = b->code, .len = b->len,
				     .value = b->value, .context = b->context, .fresh = b->fresh};
	int rc = b->value || b->context || b->fresh
			 ? aj_session_run_cell(s, &cell, cancel, stream, res)
			 : aj_session_run_lang(s, b->lang, b->code, b->len, cancel, stream, res);
	call_deadline_end(&dl, res);
	aj_cancel_free(own);
	return rc;
}

json_t *call_body_request(const struct call_body *b, const char *session)
{
	json_t *req = json_copy(b->o);
	const char *op = b->exec			 ? "session_exec"
			 : b->lang == AJ_LANG_PYTHON ? "session_run"
						     : "session_run_language";
	if (req && (json_object_set_new(req, "op", json_string(op)) ||
		    json_object_set_new(req, "session", json_string(session)))) {
		json_decref(req);
		return NULL;
	}
	return req;
}

int call_body_op(const char *op, bool *exec)
{
	*exec = op && !strcmp(op, "session_exec");
	return op && (*exec || !strcmp(op, "session_run") || !strcmp(op, "session_run_language"))
		       ? 0
		       : -1;
}
