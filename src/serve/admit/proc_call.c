/* The background command routes' requests and their one way of being run
 * on a session (proc_call.h). The command's own rules are the library's
 * (call_body.c reads a spawn's body as exec's); this file words what the
 * library answers as HTTP. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../api/api.h"
#include "../../core/internal.h"
#include "call_body.h"
#include "call_limits.h"
#include "proc_call.h"
#include "proc_pty.h"

static const char *const actions[] = {"spawn", "list", "state", "read", "stdin", "signal",
				       "resize"};

/* ?wait=S: seconds, 0 to PROC_WAIT_MAX_SEC. */
static int wait_query(const char *q, double *sec)
{
	char *end;
	*sec = q ? strtod(q, &end) : 0;
	return q && (end == q || *end || !isfinite(*sec) || *sec < 0 || *sec > PROC_WAIT_MAX_SEC)
		       ? -1
		       : 0;
}

json_t *proc_call_request(const struct http_request *rq, struct http_response *rs,
			  const struct session_route *r)
{
	static const char *const spawn_fields[] = {"command", "argv",    "cwd", "env",
						   "stdin",   "timeout", "pty", NULL};
	static const char *const stdin_fields[] = {"data", "close", NULL};
	static const char *const signal_fields[] = {"signal", NULL};
	static const char *const resize_fields[] = {"cols", "rows", NULL};
	const char *const *fields = r->proc == PROC_SPAWN   ? spawn_fields
				    : r->proc == PROC_STDIN  ? stdin_fields
				    : r->proc == PROC_SIGNAL ? signal_fields
				    : r->proc == PROC_RESIZE ? resize_fields
							     : NULL;
	json_t *body = NULL;
	double wait = 0;
	if (fields && !(body = request_body(rq, rs, fields)))
		return NULL;
	if (r->proc == PROC_STATE && wait_query(rq->query_wait, &wait)) {
		respond_error(rs, 400, "bad_request", "wait: expected seconds from 0 to %d, not "
			      "'%.40s'", PROC_WAIT_MAX_SEC, rq->query_wait);
		return NULL;
	}
	json_t *req = json_pack("{s:s, s:s, s:I, s:f}", "op", "proc", "action", actions[r->proc],
				"pid", (json_int_t)r->pid, "wait", wait);
	if (req && body && json_object_set(req, "body", body)) {
		json_decref(req);
		req = NULL;
	}
	json_decref(body);
	if (!req)
		respond_error(rs, 500, "internal", "out of memory");
	return req;
}

json_t *proc_read_request(uint32_t pid, const uint64_t off[2])
{
	return json_pack("{s:s, s:s, s:I, s:I, s:I}", "op", "proc", "action", "read", "pid",
			 (json_int_t)pid, "out", (json_int_t)off[0], "err", (json_int_t)off[1]);
}

bool proc_call_is(const char *op)
{
	return op && !strcmp(op, "proc");
}

static json_t *spawn(struct aj_session *s, json_t *body)
{
	struct call_body b;
	struct aj_error err = {0};
	int status;
	const char *code;
	uint32_t pid = 0;
	uint16_t size[2];
	json_t *as_spawn = NULL;
	bool pty = json_object_get(body, "pty") != NULL;
	json_t *bad = pty ? proc_pty_body(body, size, &as_spawn) : NULL;
	if (bad)
		return bad;
	int rc = call_body_parse_spawn(pty ? as_spawn : body, session_config(s), &b, &status, &code,
				       &err);
	json_decref(as_spawn); /* b holds it */
	if (rc)
		return proc_answer_error(status, code, "%s", err.message);
	rc = pty ? aj_session_pty(s, &b.x, size[0], size[1], &pid, &err)
		 : aj_session_spawn(s, &b.x, b.stdin_open, &pid, &err);
	call_body_clear(&b);
	if (rc && !pid)
		return proc_refused(s, 0, rc, &err);
	/* Started, but its first input failed: it runs, and says so. */
	return proc_answer(201, json_pack("{s:I}", "pid", (json_int_t)pid));
}

static json_t *proc_list(struct aj_session *s)
{
	struct aj_proc_info *v;
	size_t n;
	struct aj_error err = {0};
	int rc = aj_session_procs(s, &v, &n, &err);
	if (rc)
		return proc_refused(s, 0, rc, &err);
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:I, s:s, s:b}", "pid", (json_int_t)v[i].pid,
						   "command", v[i].command, "running",
						   v[i].running));
	aj_proc_list_free(v, n);
	return proc_answer(200, json_pack("{s:o}", "processes", a));
}

/* Its end as exec's result object, with its pid and "running": false:
 * res freed. */
static json_t *ended(struct aj_session *s, uint32_t pid, struct aj_result *res)
{
	json_t *o = result_to_json_object(res, session_config(s)->tier);
	aj_result_free(res);
	if (o && (json_object_set_new(o, "pid", json_integer(pid)) ||
		  json_object_set_new(o, "running", json_false()))) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* Waits up to sec for its end: 0 with res, -ECANCELED still running. */
static int wait_up_to(struct aj_session *s, uint32_t pid, double sec, struct aj_result *res)
{
	struct aj_cancel *c = NULL;
	struct call_deadline dl;
	if (aj_cancel_new(&c) || call_deadline_start(&dl, c, sec)) {
		aj_cancel_free(c);
		result_init(res);
		return -EAGAIN;
	}
	int rc = aj_session_proc_wait(s, pid, c, NULL, res);
	call_deadline_end(&dl, res);
	aj_cancel_free(c);
	return rc;
}

static json_t *state(struct aj_session *s, uint32_t pid, double wait)
{
	struct aj_proc_info *v;
	size_t n, i;
	struct aj_error err = {0};
	struct aj_result res;
	int rc = aj_session_procs(s, &v, &n, &err);
	if (rc)
		return proc_refused(s, pid, rc, &err);
	for (i = 0; i < n && v[i].pid != pid; i++)
		;
	json_t *running = i < n ? json_pack("{s:I, s:s, s:b}", "pid", (json_int_t)pid, "command",
					    v[i].command, "running", 1)
				: NULL;
	bool was_running = i < n && v[i].running;
	aj_proc_list_free(v, n);
	if (i == n)
		return proc_refused(s, pid, -ESRCH, &err);
	if (was_running && !wait)
		return proc_answer(200, running);
	/* Ended (its result comes at once), or waited for up to wait s. */
	rc = was_running ? wait_up_to(s, pid, wait, &res)
			 : aj_session_proc_wait(s, pid, NULL, NULL, &res);
	if (rc == -ECANCELED) {
		aj_result_free(&res);
		return proc_answer(200, running);
	}
	json_decref(running);
	if (rc) {
		error_set(&err, rc, "%s", res.message ? res.message : "wait failed");
		aj_result_free(&res);
		return proc_refused(s, pid, rc, &err);
	}
	return proc_answer(200, ended(s, pid, &res));
}

static json_t *b64_string(const char *p, size_t n)
{
	char *b = base64_encode(p ? p : "", n, NULL);
	json_t *j = b ? json_string(b) : NULL;
	free(b);
	return j;
}

static json_t *read_from(struct aj_session *s, uint32_t pid, json_t *req)
{
	struct aj_proc_output o;
	struct aj_error err = {0};
	struct aj_result res;
	json_int_t out = json_integer_value(json_object_get(req, "out"));
	json_int_t errs = json_integer_value(json_object_get(req, "err"));
	/* A read waits inside the sandbox for a byte at most this long. */
	int rc = out < 0 || errs < 0 ? error_set(&err, -EINVAL, "an offset below 0")
				     : aj_session_proc_read(s, pid, (uint64_t)out, (uint64_t)errs,
							    200, &o, &err);
	if (rc)
		return proc_refused(s, pid, rc, &err);
	/* out_from: where out starts, past the place asked for when a
	 * terminal's window moved on (the bytes between are gone). */
	json_t *body = json_pack("{s:o, s:I, s:o, s:b}", "out", b64_string(o.out, o.out_len),
				 "out_from", (json_int_t)o.out_from, "err",
				 b64_string(o.err, o.err_len), "ended", o.ended);
	bool end = o.ended;
	aj_proc_output_free(&o);
	if (body && end) {
		if ((rc = aj_session_proc_wait(s, pid, NULL, NULL, &res))) {
			error_set(&err, rc, "%s", res.message ? res.message : "wait failed");
			aj_result_free(&res);
			json_decref(body);
			return proc_refused(s, pid, rc, &err);
		}
		json_object_set_new(body, "result", ended(s, pid, &res));
	}
	return proc_answer(200, body);
}

static json_t *input(struct aj_session *s, uint32_t pid, json_t *body)
{
	json_t *d = json_object_get(body, "data"), *c = json_object_get(body, "close");
	unsigned char *data = NULL;
	size_t len = 0;
	struct aj_error err = {0};
	if (c && !json_is_boolean(c))
		return proc_answer_error(400, "bad_request", "close: expected true or false");
	if (d && (!json_is_string(d) ||
		  base64_decode(json_string_value(d), json_string_length(d), &data, &len)))
		return proc_answer_error(400, "bad_request", "data: expected base64 (the bytes for the "
				    "command's stdin)");
	if (!d && !json_is_true(c)) {
		free(data);
		return proc_answer_error(400, "bad_request", "give \"data\" (base64), \"close\": true, "
				    "or both");
	}
	int rc = aj_session_proc_input(s, pid, data, len, json_is_true(c), &err);
	free(data);
	if (rc)
		return proc_refused(s, pid, rc, &err);
	return proc_answer(200, json_pack("{s:I, s:I, s:b}", "pid", (json_int_t)pid, "bytes",
				     (json_int_t)len, "closed", json_is_true(c)));
}

/* "SIGTERM", "TERM" or 15: the number, or 0. */
static int signal_number(json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v) >= 1 && json_integer_value(v) <= 64
			       ? (int)json_integer_value(v)
			       : 0;
	const char *name = json_string_value(v);
	if (!name)
		return 0;
	if (!strncmp(name, "SIG", 3))
		name += 3;
	for (int n = 1; n < 32; n++)
		if (sigabbrev_np(n) && !strcmp(sigabbrev_np(n), name))
			return n;
	return 0;
}

static json_t *send_signal(struct aj_session *s, uint32_t pid, json_t *body)
{
	struct aj_error err = {0};
	int n = signal_number(json_object_get(body, "signal"));
	if (!n)
		return proc_answer_error(400, "bad_request", "signal: expected a name (\"SIGTERM\", "
				    "\"KILL\") or a number from 1 to 64");
	int rc = aj_session_proc_signal(s, pid, n, &err);
	if (rc)
		return proc_refused(s, pid, rc, &err);
	return proc_answer(200, json_pack("{s:I, s:i}", "pid", (json_int_t)pid, "signal", n));
}

json_t *proc_call_run(struct aj_session *s, json_t *req)
{
	const char *a = json_string_value(json_object_get(req, "action"));
	json_int_t pid = json_integer_value(json_object_get(req, "pid"));
	json_t *body = json_object_get(req, "body");
	if (!a)
		return proc_answer_error(400, "bad_request", "no action");
	if (!strcmp(a, "spawn"))
		return spawn(s, body);
	if (!strcmp(a, "list"))
		return proc_list(s);
	if (pid < 1 || pid > INT32_MAX)
		return proc_answer_error(404, "not_found", "no process %lld in this session",
				    (long long)pid);
	if (!strcmp(a, "state"))
		return state(s, (uint32_t)pid, json_number_value(json_object_get(req, "wait")));
	if (!strcmp(a, "read"))
		return read_from(s, (uint32_t)pid, req);
	if (!strcmp(a, "stdin"))
		return input(s, (uint32_t)pid, body);
	if (!strcmp(a, "signal"))
		return send_signal(s, (uint32_t)pid, body);
	if (!strcmp(a, "resize"))
		return proc_pty_resize(s, (uint32_t)pid, body);
	return proc_answer_error(400, "bad_request", "unknown action '%.40s'", a);
}

void proc_call_answer(json_t *ans, struct http_response *rs)
{
	json_int_t status = json_integer_value(json_object_get(ans, "http"));
	json_t *body = json_object_get(ans, "body");
	if (status < 200 || status > 599 || !json_is_object(body))
		return respond_error(rs, 502, "session_error", "the session's answer is garbled");
	json_t *err = json_object_get(body, "error");
	snprintf(rs->log_verdict, sizeof rs->log_verdict, "%s",
		 json_string_value(json_object_get(err, "code")) ?: "ok");
	respond_json(rs, (int)status, json_incref(body));
}
