/* E2B's process service (envd's process.Process, process.proto) over a
 * sandbox's session, through the v1 API's background commands
 * (/v1/sessions/ID/processes):
 *
 *   Start       a spawn ("argv", "env", "cwd", "timeout" from the
 *               Connect-Timeout-Ms header, "stdin", "pty"), then its event
 *               stream as Connect envelopes: start {pid} first, data
 *               {stdout|stderr|pty: base64} as it comes, keepalive, end
 *               {exitCode, exited, status, error}, the end of the stream
 *   Connect     the same stream for a running pid (from its first byte:
 *               agentjail keeps a command's output, so nothing is missed)
 *   List        the running ones
 *   SendInput   stdin or a terminal's keys; CloseStdin; SendSignal
 *               (SIGKILL, SIGTERM and the others by name); Update (a
 *               terminal's size)
 *   StreamInput unimplemented, named (the SDKs send input by SendInput)
 *
 * A process is chosen by pid; E2B's tags are not kept (a tag's selector is
 * refused naming it). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "connect_rpc.h"
#include "common.h"
#include "process.h"
#include "process_stream.h"
#include "v1_client.h"

/* The pid a request's {"process": {"pid": N}} names, or 0 with the error
 * answered. */
static uint32_t selected_pid(const struct http_request *rq, struct http_response *rs,
			     json_t *msg)
{
	json_t *sel = json_object_get(msg, "process");
	json_t *pid = json_object_get(sel, "pid");
	if (json_object_get(sel, "tag") && !pid) {
		connect_error(rq, rs, "invalid_argument",
			      "a process chosen by tag: agentjail keeps no tags; choose it by pid");
		return 0;
	}
	json_int_t v = json_integer_value(pid);
	if (!json_is_integer(pid) || v < 1 || v > INT32_MAX) {
		connect_error(rq, rs, "invalid_argument", "process.pid: expected a pid");
		return 0;
	}
	return (uint32_t)v;
}

/* A v1 answer that failed, as the Connect error of the call. */
static void v1_failed(const struct http_request *rq, struct http_response *rs,
		      struct http_response *v1)
{
	char m[400];
	v1_error_message(v1, m, sizeof m);
	int code = v1->code;
	v1_free(v1);
	connect_error(rq, rs, connect_code_of_http(code), "%s",
		      m[0] ? m : "the sandbox's session refused the call");
}

/* POST .../processes/PID/ACTION with body under key: its answer in rs,
 * {} when it succeeded. */
static void proc_post(struct e2b_call *c, uint32_t pid, const char *action, json_t *body)
{
	char path[160];
	snprintf(path, sizeof path, "/v1/sessions/%s/processes/%u/%s", c->sb.id, pid, action);
	struct http_response v1;
	v1_call(c->svc, c->rq->key, "POST", path, body, NULL, &v1);
	if (v1.code >= 300)
		return v1_failed(c->rq, c->rs, &v1);
	v1_free(&v1);
	connect_unary(c->rs, json_object());
}

static void send_input(struct e2b_call *c, json_t *msg)
{
	uint32_t pid = selected_pid(c->rq, c->rs, msg);
	if (!pid)
		return;
	json_t *in = json_object_get(msg, "input");
	json_t *data = json_object_get(in, "stdin");
	if (!data)
		data = json_object_get(in, "pty");
	if (!json_is_string(data))
		return connect_error(c->rq, c->rs, "invalid_argument",
				     "input: expected {\"stdin\": base64} or {\"pty\": base64}");
	proc_post(c, pid, "stdin", json_pack("{s:O}", "data", data));
}

static void close_stdin(struct e2b_call *c, json_t *msg)
{
	uint32_t pid = selected_pid(c->rq, c->rs, msg);
	if (pid)
		proc_post(c, pid, "stdin", json_pack("{s:b}", "close", 1));
}

static void signal_process(struct e2b_call *c, json_t *msg)
{
	uint32_t pid = selected_pid(c->rq, c->rs, msg);
	if (!pid)
		return;
	/* "SIGNAL_SIGKILL" (the enum's name), or its number. */
	json_t *s = json_object_get(msg, "signal");
	const char *name = json_string_value(s);
	json_t *sig;
	if (name && !strncmp(name, "SIGNAL_", 7))
		sig = json_string(name + 7);
	else if (json_is_integer(s))
		sig = json_integer(json_integer_value(s));
	else
		return connect_error(c->rq, c->rs, "invalid_argument",
				     "signal: expected SIGNAL_SIGKILL, SIGNAL_SIGTERM or a number");
	proc_post(c, pid, "signal", json_pack("{s:o}", "signal", sig));
}

static void update(struct e2b_call *c, json_t *msg)
{
	uint32_t pid = selected_pid(c->rq, c->rs, msg);
	if (!pid)
		return;
	json_t *size = json_object_get(json_object_get(msg, "pty"), "size");
	if (!size)
		return connect_unary(c->rs, json_object()); /* nothing to change */
	proc_post(c, pid, "resize",
		  json_pack("{s:O?, s:O?}", "cols", json_object_get(size, "cols"), "rows",
			    json_object_get(size, "rows")));
}

/* method on the session's /processes (body's reference taken): the v1
 * answer's JSON body, or NULL with its failure answered. */
static json_t *processes_call(struct e2b_call *c, const char *method, json_t *body)
{
	char path[128];
	snprintf(path, sizeof path, "/v1/sessions/%s/processes", c->sb.id);
	struct http_response v1;
	v1_call(c->svc, c->rq->key, method, path, body, NULL, &v1);
	if (v1.code >= 300) {
		v1_failed(c->rq, c->rs, &v1);
		return NULL;
	}
	json_t *b = v1_body(&v1);
	v1_free(&v1);
	return b ? b : json_object();
}

static void list_processes(struct e2b_call *c)
{
	json_t *b = processes_call(c, "GET", NULL);
	if (!b)
		return;
	json_t *out = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(b, "processes"), i, p) {
		if (!json_is_true(json_object_get(p, "running")))
			continue;
		/* The command as one string: its cmd, no args (agentjail keeps
		 * the line it ran, not how it was split). */
		json_array_append_new(
			out, json_pack("{s:{s:O, s:[], s:{}}, s:O}", "config", "cmd",
				       json_object_get(p, "command"), "args", "envs", "pid",
				       json_object_get(p, "pid")));
	}
	json_decref(b);
	connect_unary(c->rs, json_pack("{s:o}", "processes", out));
}

/* A Start's body as a v1 spawn's, or NULL with the error answered. */
static json_t *spawn_body(struct e2b_call *c, json_t *msg)
{
	json_t *p = json_object_get(msg, "process");
	const char *cmd = json_string_value(json_object_get(p, "cmd"));
	if (!cmd || !*cmd) {
		connect_error(c->rq, c->rs, "invalid_argument", "process.cmd: expected a program");
		return NULL;
	}
	json_t *argv = json_pack("[s]", cmd);
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(p, "args"), i, a) {
		if (!json_is_string(a)) {
			json_decref(argv);
			connect_error(c->rq, c->rs, "invalid_argument", "process.args: strings only");
			return NULL;
		}
		json_array_append(argv, a);
	}
	json_t *body = json_pack("{s:o}", "argv", argv);
	json_t *envs = json_deep_copy(json_object_get(p, "envs"));
	if (json_object_get(msg, "pty")) {
		/* What the SDKs' pty.create always sends: a terminal here has
		 * TERM=xterm-256color, and the UTF-8 locale is C's. Not the
		 * caller's own variables, which the deployer's allow-list
		 * (exec_env_allow) would otherwise refuse. */
		static const char *const sdk[][2] = {
			{"TERM", "xterm-256color"}, {"LANG", "C.UTF-8"}, {"LC_ALL", "C.UTF-8"}};
		for (size_t k = 0; k < 3; k++) {
			const char *v = json_string_value(json_object_get(envs, sdk[k][0]));
			if (v && !strcmp(v, sdk[k][1]))
				json_object_del(envs, sdk[k][0]);
		}
	}
	if (json_is_object(envs) && json_object_size(envs))
		json_object_set(body, "env", envs);
	json_decref(envs);
	char cwd[E2B_PATH_MAX + 64];
	const char *wd = json_string_value(json_object_get(p, "cwd"));
	if (wd && *wd && !e2b_path(wd, cwd, sizeof cwd)) {
		json_decref(body);
		connect_error(c->rq, c->rs, "invalid_argument", "process.cwd: longer than %d bytes",
			      E2B_PATH_MAX);
		return NULL;
	}
	if (wd && *wd)
		json_object_set_new(body, "cwd", json_string(cwd));
	/* E2B's deadline for the process is the call's (the SDKs send their
	 * timeoutMs, 60 s unless told; none when 0). */
	const char *t = http_header(c->rq, "Connect-Timeout-Ms");
	long ms = t ? strtol(t, NULL, 10) : 0;
	if (ms > 0)
		json_object_set_new(body, "timeout", json_real((double)ms / 1000.0));
	json_t *pty = json_object_get(msg, "pty");
	if (pty) {
		json_t *size = json_object_get(pty, "size");
		json_object_set_new(body, "pty",
				    json_pack("{s:O?, s:O?}", "cols", json_object_get(size, "cols"),
					      "rows", json_object_get(size, "rows")));
	} else {
		/* stdin stays open unless the caller said false (the SDKs'
		 * commands.run does, for /dev/null). */
		json_t *in = json_object_get(msg, "stdin");
		json_object_set_new(body, "stdin", json_boolean(!in || json_is_true(in)));
	}
	return body;
}

static void start_process(struct e2b_call *c, json_t *msg)
{
	json_t *body = spawn_body(c, msg);
	if (!body)
		return;
	bool pty = json_object_get(msg, "pty") != NULL;
	json_t *b = processes_call(c, "POST", body);
	if (!b)
		return;
	json_int_t pid = json_integer_value(json_object_get(b, "pid"));
	json_decref(b);
	if (pid < 1)
		return connect_error(c->rq, c->rs, "internal", "the spawn gave no pid");
	e2b_process_stream(c, (uint32_t)pid, pty);
}

static void connect_to(struct e2b_call *c, json_t *msg)
{
	uint32_t pid = selected_pid(c->rq, c->rs, msg);
	if (!pid)
		return;
	/* Whether it is a terminal's: its output is then "pty" data. */
	char path[128];
	snprintf(path, sizeof path, "/v1/sessions/%s/processes", c->sb.id);
	struct http_response v1;
	v1_call(c->svc, c->rq->key, "GET", path, NULL, NULL, &v1);
	json_t *b = v1.code == 200 ? v1_body(&v1) : NULL;
	v1_free(&v1);
	bool pty = false, known = false;
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(b, "processes"), i, p) {
		if (json_integer_value(json_object_get(p, "pid")) == (json_int_t)pid) {
			known = true;
			pty = json_is_true(json_object_get(p, "pty"));
		}
	}
	json_decref(b);
	if (!known)
		return connect_error(c->rq, c->rs, "not_found", "no process %u in this sandbox",
				     pid);
	e2b_process_stream(c, pid, pty);
}

void e2b_process(struct e2b_call *c, const char *method)
{
	json_t *msg = connect_request(c->rq, c->rs);
	if (!msg)
		return;
	if (!strcmp(method, "Start"))
		start_process(c, msg);
	else if (!strcmp(method, "Connect"))
		connect_to(c, msg);
	else if (!strcmp(method, "List"))
		list_processes(c);
	else if (!strcmp(method, "SendInput"))
		send_input(c, msg);
	else if (!strcmp(method, "CloseStdin"))
		close_stdin(c, msg);
	else if (!strcmp(method, "SendSignal"))
		signal_process(c, msg);
	else if (!strcmp(method, "Update"))
		update(c, msg);
	else if (!strcmp(method, "StreamInput"))
		connect_error(c->rq, c->rs, "unimplemented",
			      "process.Process/StreamInput is not supported by agentjail: send "
			      "input with SendInput");
	else
		connect_error(c->rq, c->rs, "unimplemented", "process.Process/%.60s: no such method",
			      method);
	json_decref(msg);
}
