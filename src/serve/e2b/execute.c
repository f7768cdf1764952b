/* E2B's code interpreter (port 49999 of a sandbox): code run in the
 * session's interpreter of its language, through the v1 API's session runs
 * (POST /v1/sessions/ID/runs, as an event stream), its events written
 * again as E2B's NDJSON lines:
 *
 *   POST /execute {"code", "language"?, "context_id"?, "env_vars"?}
 *     {"type": "stdout" | "stderr", "text", "timestamp"}   as it comes
 *     {"type": "result", "png" | "jpeg" | "svg", "is_main_result": false}
 *                                                        each chart the cell made
 *     {"type": "result", "text", "html"?, "is_main_result": true}
 *                                                        a Python cell's last
 *                                                        value (a notebook cell,
 *                                                        aj_session_run_value)
 *     {"type": "error", "name", "value", "traceback"}    a cell that failed
 *     {"type": "number_of_executions", "execution_count"}
 *   /contexts: contexts.c (a Python context is a namespace of the
 *   session's interpreter; "context_id" names it here).
 *
 * Languages: python, javascript (js), typescript (ts), bash (a command);
 * E2B's r and java are refused, named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/internal.h"
#include "common.h"
#include "contexts.h"
#include "execute.h"
#include "sse_in.h"
#include "v1_client.h"

/* One JSON line more to send (o's reference taken): 0, or -1. */
static int line(struct sse_relay *r, json_t *o)
{
	char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	int rc = t && !sse_relay_append(r, t, strlen(t)) && !sse_relay_append(r, "\n", 1) ? 0 : -1;
	free(t);
	return rc;
}

static json_int_t micros(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (json_int_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The cell's failure as E2B's error: the exception's name and value from
 * the traceback's last line ("ZeroDivisionError: division by zero"), the
 * whole of stderr as the traceback; a limit's end by its status. */
static json_t *error_of(json_t *res)
{
	const char *status = json_string_value(json_object_get(res, "status"));
	const char *err = json_string_value(json_object_get(res, "stderr"));
	const char *msg = json_string_value(json_object_get(res, "message"));
	if (status && strcmp(status, "error")) {
		const char *name = !strcmp(status, "timeout") ? "TimeoutError"
				   : !strcmp(status, "memory") ? "MemoryError"
				   : !strcmp(status, "output_limit") ? "OutputLimitError"
								    : "SandboxError";
		return json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", name, "value",
				 msg ? msg : status, "traceback", err ? err : "");
	}
	char last[600] = "";
	if (err) {
		/* The last non-empty line. */
		const char *end = err + strlen(err);
		while (end > err && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		const char *b = end;
		while (b > err && b[-1] != '\n')
			b--;
		snprintf(last, sizeof last, "%.*s", (int)(end - b), b);
	}
	/* "Name: value" where Name is one word (an exception's class). */
	char *colon = strstr(last, ": ");
	const char *name = "Error", *value = last;
	if (colon) {
		*colon = '\0';
		if (!strchr(last, ' ')) {
			name = last;
			value = colon + 2;
		} else {
			*colon = ':';
		}
	}
	return json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", name, "value", value,
			 "traceback", err ? err : "");
}

static int cell_event(struct sse_in *in, const char *ev, json_t *d, void *arg)
{
	struct sse_relay *x = arg;
	if (!ev)
		return 0; /* the client's own timeout watches an idle cell */
	if (!strcmp(ev, "stdout") || !strcmp(ev, "stderr")) {
		const char *text = json_string_value(json_object_get(d, "text"));
		if (!text)
			return 0; /* bytes that are not UTF-8: E2B carries text only */
		return line(x, json_pack("{s:s, s:s, s:I}", "type", ev, "text", text, "timestamp",
					 micros()));
	}
	if (!strcmp(ev, "image")) {
		const char *mime = json_string_value(json_object_get(d, "mime"));
		const char *data = json_string_value(json_object_get(d, "data"));
		const char *kind = !mime ? NULL
				   : !strcmp(mime, "image/png") ? "png"
				   : !strcmp(mime, "image/jpeg") ? "jpeg"
				   : !strcmp(mime, "image/svg+xml") ? "svg"
								    : NULL;
		if (!kind || !data)
			return 0;
		return line(x, json_pack("{s:s, s:s, s:b}", "type", "result", kind, data,
					 "is_main_result", 0));
	}
	if (!strcmp(ev, "result")) {
		in->stop = true;
		x->done = true;
		const char *status = json_string_value(json_object_get(d, "status"));
		json_t *value = json_object_get(d, "value");
		json_t *text = json_object_get(value, "text"), *html = json_object_get(value, "html");
		int rc = 0;
		/* The cell's last value, as the main result (execution.text). */
		if (json_is_string(text))
			rc = line(x, json_is_string(html)
					     ? json_pack("{s:s, s:O, s:O, s:b}", "type", "result",
							 "text", text, "html", html,
							 "is_main_result", 1)
					     : json_pack("{s:s, s:O, s:b}", "type", "result", "text",
							 text, "is_main_result", 1));
		if (!rc && status && strcmp(status, "ok"))
			rc = line(x, error_of(d));
		return rc;
	}
	return 0;
}

/* The session ended before the cell: an error line says so. */
static int cell_cut(struct sse_relay *r)
{
	return line(r, json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", "SandboxError",
				 "value", "the sandbox's session ended before the cell did",
				 "traceback", ""));
}

static void execute(struct e2b_call *c)
{
	json_t *o = c->rq->body_len ? json_loadb(c->rq->body, c->rq->body_len, 0, NULL) : NULL;
	const char *code = json_string_value(json_object_get(o, "code"));
	const char *lang = json_string_value(json_object_get(o, "language"));
	const char *ctx = json_string_value(json_object_get(o, "context_id"));
	json_t *envs = json_object_get(o, "env_vars");
	const char *aj = NULL, *named = NULL;
	if (!code) {
		e2b_error(c->rs, 400, "code: expected a string");
	} else if (e2b_context_of(c, ctx, lang, &aj, &named)) {
		/* answered */
	} else if (json_is_object(envs) && json_object_size(envs)) {
		e2b_error(c->rs, 400, "env_vars for one execution are not supported by agentjail: "
			  "give envs when the sandbox is created");
	} else {
		struct sse_relay *x = calloc(1, sizeof *x);
		if (!x) {
			e2b_error(c->rs, 500, "out of memory");
			goto out;
		}
		x->in.on_event = cell_event;
		x->in.arg = x;
		x->on_cut = cell_cut;
		char path[128];
		snprintf(path, sizeof path, "/v1/sessions/%s/runs", c->sb.id);
		json_t *body = json_pack("{s:s, s:s}", "code", code, "language", aj);
		/* Python as a notebook cell: its last value is the main result,
		 * not a line on stdout; in its context's namespace. */
		if (!strcmp(aj, "python"))
			json_object_set_new(body, "value", json_true());
		if (named)
			json_object_set_new(body, "context", json_string(named));
		v1_call(c->svc, c->rq->key, "POST", path, body, "text/event-stream", &x->inner);
		if (!x->inner.stream_read) {
			char m[400];
			v1_error_message(&x->inner, m, sizeof m);
			int status = x->inner.code;
			sse_relay_done(x);
			e2b_error(c->rs, status, "%s", m[0] ? m : "the cell could not run");
			goto out;
		}
		struct http_response *rs = c->rs;
		rs->code = 200;
		rs->content_type = "application/x-ndjson";
		rs->stream_read = sse_relay_read;
		rs->stream_done = sse_relay_done;
		rs->stream_arg = x;
	}
out:
	json_decref(o);
}

void e2b_code(struct e2b_call *c)
{
	if (!strcmp(c->rq->path, "/execute")) {
		if (strcmp(c->rq->method, "POST"))
			return respond_method(c->rs, c->rq->method, "POST");
		return execute(c);
	}
	e2b_contexts(c);
}
