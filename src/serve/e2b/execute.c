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
 *   POST /contexts {"language"?, "cwd"?}, GET /contexts, DELETE /contexts/ID:
 *     one context per language, each the session's interpreter of it (E2B
 *     makes a kernel per context; here every context of a language shares
 *     its state: docs/e2b.md); POST /contexts/ID/restart: unsupported, named.
 *
 * Languages: python, javascript (js), typescript (ts), bash (a command);
 * E2B's r and java are refused, named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/internal.h"
#include "common.h"
#include "execute.h"
#include "sse_in.h"
#include "v1_client.h"

/* E2B's language names as agentjail's (NULL: not offered). */
static const char *language_of(const char *name)
{
	static const struct {
		const char *e2b, *aj;
	} names[] = {{"python", "python"},   {"py", "python"},         {"python3", "python"},
		     {"js", "javascript"},   {"javascript", "javascript"}, {"ts", "typescript"},
		     {"typescript", "typescript"}, {"bash", "bash"},       {"sh", "sh"}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(names[i].e2b, name))
			return names[i].aj;
	return NULL;
}

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
	const char *aj = language_of(ctx ? ctx : lang ? lang : "python");
	if (!code) {
		e2b_error(c->rs, 400, "code: expected a string");
	} else if (!aj) {
		e2b_error(c->rs, 400, "%s %.40s is not supported by agentjail: python, javascript, "
			  "typescript and bash are", ctx ? "context" : "language", ctx ? ctx : lang);
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
		v1_call(c->svc, c->rq->key, "POST", path,
			/* Python as a notebook cell: its last value is the main
			 * result, not a line on stdout. */
			!strcmp(aj, "python") ? json_pack("{s:s, s:s, s:b}", "code", code, "language",
							  aj, "value", 1)
					      : json_pack("{s:s, s:s}", "code", code, "language", aj),
			"text/event-stream", &x->inner);
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

/* A context's JSON: one per language, its id the language's name. */
static json_t *context_json(const char *lang)
{
	return json_pack("{s:s, s:s, s:s}", "id", lang, "language", lang, "cwd", E2B_HOME);
}

static void contexts(struct e2b_call *c)
{
	const char *p = c->rq->path + strlen("/contexts"), *m = c->rq->method;
	if (!*p) {
		if (!strcmp(m, "GET"))
			return respond_json(c->rs, 200,
					    json_pack("[o, o]", context_json("python"),
						      context_json("javascript")));
		if (strcmp(m, "POST"))
			return respond_method(c->rs, m, "GET, POST");
		json_t *o = c->rq->body_len ? json_loadb(c->rq->body, c->rq->body_len, 0, NULL)
					    : NULL;
		const char *lang = json_string_value(json_object_get(o, "language"));
		const char *cwd = json_string_value(json_object_get(o, "cwd"));
		const char *aj = language_of(lang ? lang : "python");
		if (!aj)
			e2b_error(c->rs, 400, "language %.40s is not supported by agentjail: python, "
				  "javascript, typescript and bash are", lang);
		else if (cwd && strcmp(cwd, E2B_HOME) && strcmp(cwd, AJ_SESSION_WORKSPACE))
			e2b_error(c->rs, 400, "cwd: a context's directory is the sandbox's home, "
				  "%s", E2B_HOME);
		else
			respond_json(c->rs, 200, context_json(aj));
		json_decref(o);
		return;
	}
	const char *id = p + 1;
	const char *slash = strchr(id, '/');
	if (slash && !strcmp(slash, "/restart") && !strcmp(m, "POST"))
		return e2b_error(c->rs, 501, "restarting a context is not supported by agentjail "
				 "yet (docs/e2b.md)");
	if (!slash && !strcmp(m, "DELETE")) {
		/* The language's interpreter stays: the session's. */
		return respond_json(c->rs, 204, NULL);
	}
	e2b_error(c->rs, 404, "no such route: %.200s", c->rq->path);
}

void e2b_code(struct e2b_call *c)
{
	if (!strcmp(c->rq->path, "/execute")) {
		if (strcmp(c->rq->method, "POST"))
			return respond_method(c->rs, c->rq->method, "POST");
		return execute(c);
	}
	contexts(c);
}
