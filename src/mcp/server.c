/* The MCP stdio server: JSON-RPC 2.0, one message a line, serving both
 * protocol eras of the specification.
 *
 *  2025-11-25  the lifecycle handshake (initialize, notifications/initialized),
 *              ping, tools/list, tools/call.
 *  2026-07-28  no handshake: every request carries its protocol version and
 *              the client's capabilities in _meta; server/discover; every
 *              result has resultType; list results have ttlMs and
 *              cacheScope; an unsupported version is error -32022.
 *
 * A request whose _meta names a protocol version is served by the modern
 * rules, anything else by the legacy ones; the spec lets one process serve
 * both. Protocol problems (a malformed request, an unknown tool) are
 * JSON-RPC errors; arguments that do not fit a tool's schema, and a program
 * that fails, are tool results with isError, so the model can correct itself.
 *
 * Threads: this one reads stdin and answers everything but tools/call; each
 * tools/call runs in a thread of its own, at most `concurrency` running at
 * once (the rest wait their turn), and can be cancelled. Every message is
 * written whole, under one lock, as one line. At EOF every run still going is
 * cancelled and waited for, so none outlives the server.
 *
 * Output as it happens (notify.c): a call whose client gave a progressToken,
 * or asked for log messages, runs streaming; each chunk becomes
 * notifications on the library's streaming thread, through the same lock,
 * and all of them go out before the call's result.
 *
 * Transports: the server reads and writes whole JSON-RPC messages through a
 * link (server.h): stdio is one link for the process's life, each line a
 * message; agentjail serve's /mcp makes a link for each HTTP POST. A call
 * remembers its link, answers through it, and tells it when it is done.
 *
 * Sessions (--sessions): the connection's one session (session.c) serves
 * every call, one at a time, and the file tools (files.c) join run_python.
 * It is closed at EOF, after the calls, so its sandbox does not outlive
 * the server either. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../api/api.h"
#include "server.h"
#include "session.h"
#include "tool.h"
#include "../core/thread.h"

#define MODERN_VERSION "2026-07-28"
#define LATEST_LEGACY_VERSION "2025-11-25"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
/* 2026-07-28 has no logging/setLevel: a request asks for log messages with
 * this, and one without it gets none. */
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
/* The tool list never changes while the server runs: clients may cache it. */
#define LIST_TTL_MS 3600000

/* The largest line read: the largest program, JSON-escaped, and room. */
#define MAX_LINE ((size_t)AJ_MAX_CODE_BYTES * 6 + 65536)

static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
					      "2024-11-05"};

enum { PARSE_ERROR = -32700, INVALID_REQUEST = -32600, METHOD_NOT_FOUND = -32601,
       INVALID_PARAMS = -32602, INTERNAL_ERROR = -32603, UNSUPPORTED_VERSION = -32022 };

struct call;

struct mcp_server {
	const struct mcp_config *cfg;
	struct aj_sandbox *sandbox;
	pthread_mutex_t lock;      /* output, the call list */
	sem_t slots;               /* runs allowed at once */
	struct call *calls;        /* in flight */
	unsigned pending;          /* threads not yet finished */
	pthread_cond_t idle;       /* pending reached 0 */
	json_t *tools;             /* the Tool objects of tools/list */
	struct mcp_session session; /* with cfg->sessions */
	bool initialized;
};

struct call {
	struct mcp_server *srv;
	struct mcp_link *link;
	json_t *id;
	json_t *args;
	enum tool_kind tool;
	bool modern;
	bool cancelled;
	struct aj_cancel *cancel;
	struct mcp_notifier notes;  /* its output as notifications */
	struct call *next;
};

/* ---- output ---- */

static void send_json(struct mcp_server *s, struct mcp_link *link, json_t *msg)
{
	char *line = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12));
	json_decref(msg);
	if (!line)
		return;
	/* JSON_ENSURE_ASCII: no raw newline or invalid byte can break the
	 * one-message-a-line framing. One message at a time: a link's
	 * messages never interleave. */
	pthread_mutex_lock(&s->lock);
	link->emit(link, line);
	pthread_mutex_unlock(&s->lock);
	free(line);
}

static void send_error(struct mcp_server *s, struct mcp_link *link, json_t *id, int code, const char *message, json_t *data)
{
	json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);
	if (data)
		json_object_set_new(err, "data", data);
	/* An id that could not be read (a parse error, an invalid request) is
	 * null: JSON-RPC 2.0, section 5. */
	json_t *msg = json_pack("{s:s, s:o, s:O}", "jsonrpc", "2.0", "error", err, "id",
				id ? id : json_null());
	send_json(s, link, msg);
}

static json_t *server_info(void)
{
	return json_pack("{s:s, s:s, s:s}", "name", "agentjail", "title",
			 "agentjail: Python in a sandbox", "version", AGENTJAIL_VERSION);
}

/* A result, with what the modern era adds to every one. */
static void send_result(struct mcp_server *s, struct mcp_link *link, json_t *id, json_t *result,
			bool modern)
{
	if (modern) {
		json_object_set_new(result, "resultType", json_string("complete"));
		json_object_set_new(result, "_meta",
				    json_pack("{s:o}", META_SERVER_INFO, server_info()));
	}
	send_json(s, link,
		  json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

/* ---- tools/call, in its own thread ---- */

/* The notifier's send: a notification of c's, on the library's streaming
 * thread. Under the lock every message takes, so a notification and
 * another call's result never interleave on stdio; none once the call is
 * cancelled, since the client has stopped listening for it. */
static void send_note(void *arg, json_t *msg)
{
	struct call *c = arg;
	char *line = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(msg);
	if (!line)
		return;
	pthread_mutex_lock(&c->srv->lock);
	if (!c->cancelled)
		c->link->notify(c->link, line);
	pthread_mutex_unlock(&c->srv->lock);
	free(line);
}

/* The stream a call's run reports to, or NULL when the client asked for
 * no notifications (the run is then exactly as before streaming). */
static const struct aj_stream *call_stream(struct call *c, struct aj_stream *st)
{
	if (!mcp_notifier_active(&c->notes))
		return NULL;
	*st = (struct aj_stream){.fn = mcp_notifier_event, .arg = &c->notes};
	return st;
}

static bool is_cancelled(struct mcp_server *s, struct call *c)
{
	pthread_mutex_lock(&s->lock);
	bool cancelled = c->cancelled;
	pthread_mutex_unlock(&s->lock);
	return cancelled;
}

/* A note for the model goes first in the result's message, which the text
 * and structuredContent both carry. */
static void add_note(struct aj_result *res, const char *note)
{
	if (!note)
		return;
	char *old = res->message;
	res->message = NULL;
	if (old)
		result_set_message(res, "%s %s", note, old);
	else
		result_set_message(res, "%s", note);
	free(old);
}

/* run_python's code or run_command's command in the session (the lock
 * held), its output streamed as the call asked: its CallToolResult. */
static json_t *run_in_session(struct mcp_server *s, struct call *c, struct aj_session *ses,
			      const char *note)
{
	const char *code;
	size_t len;
	char why[200];
	struct aj_result res;
	struct aj_stream st;
	int rc = 0;
	if (c->tool == TOOL_RUN_PYTHON) {
		tool_code_argument(c->args, &code, &len, why, sizeof why);
		aj_session_run_streaming(ses, code, len, c->cancel, call_stream(c, &st), &res);
	} else {
		rc = command_tool_exec(ses, c->args, c->cancel, call_stream(c, &st), &res);
	}
	mcp_notifier_finish(&c->notes);
	json_t *result;
	if (rc && rc != -ESHUTDOWN) {
		/* What the library refuses in the arguments (a timeout past the
		 * session's limit) is the model's to correct, as a schema's. */
		result = tool_error("%s%sInvalid arguments for %s: %s", note ? note : "",
				    note ? "\n\n" : "", tool_name(c->tool),
				    res.message ? res.message : "refused");
	} else {
		add_note(&res, note);
		result = tool_result(&res, s->cfg->sandbox.tier);
	}
	fprintf(stderr, "agentjail mcp: %s: %s, %.1f ms, %zu image(s)\n", tool_name(c->tool),
		aj_status_name(res.status), res.wall_ms, res.image_count);
	aj_result_free(&res);
	return result;
}

/* One call in the connection's session; NULL when it was cancelled before
 * it started (it gets no response, and the session is left as it was). */
static json_t *call_in_session(struct mcp_server *s, struct call *c)
{
	struct aj_session *ses;
	char *note;
	struct aj_error err = {0};
	if (mcp_session_enter(&s->session, &ses, &note, &err)) {
		fprintf(stderr, "agentjail mcp: cannot open a session: %s\n", err.message);
		json_t *r = tool_error("%s%sThe sandbox session could not be opened: %s",
				       note ? note : "", note ? "\n\n" : "", err.message);
		free(note);
		return r;
	}
	json_t *result = NULL;
	/* A call cancelled while it waited its turn never starts: cancelling
	 * a running one ends the interpreter, and its state with it. */
	if (is_cancelled(s, c)) {
		mcp_session_leave(&s->session);
		free(note);
		fprintf(stderr, "agentjail mcp: %s: cancelled before it started\n",
			tool_name(c->tool));
		return NULL;
	}
	if (c->tool == TOOL_RUN_PYTHON || c->tool == TOOL_RUN_COMMAND) {
		result = run_in_session(s, c, ses, note);
	} else {
		result = file_tool_call(c->tool, ses, c->args, note);
		fprintf(stderr, "agentjail mcp: %s: %s\n", tool_name(c->tool),
			result && json_is_true(json_object_get(result, "isError")) ? "error" : "ok");
	}
	mcp_session_leave(&s->session);
	free(note);
	return result;
}

static json_t *call_alone(struct mcp_server *s, struct call *c)
{
	const char *code;
	size_t len;
	char why[200];
	struct aj_result res;
	struct aj_stream st;
	const struct aj_stream *stream = call_stream(c, &st);

	tool_code_argument(c->args, &code, &len, why, sizeof why);
	if (c->link->run) {
		c->link->run(c->link, code, len, c->cancel, stream, &res);
	} else {
		sem_wait(&s->slots);
		aj_run_streaming(s->sandbox, code, len, c->cancel, stream, &res);
		sem_post(&s->slots);
	}
	mcp_notifier_finish(&c->notes);
	fprintf(stderr, "agentjail mcp: run_python: %s, %.1f ms\n", aj_status_name(res.status),
		res.wall_ms);
	json_t *result = tool_result(&res, s->cfg->sandbox.tier);
	aj_result_free(&res);
	return result;
}

static void *call_main(void *arg)
{
	struct call *c = arg;
	struct mcp_server *s = c->srv;

	json_t *result = s->cfg->sessions ? call_in_session(s, c) : call_alone(s, c);

	pthread_mutex_lock(&s->lock);
	for (struct call **p = &s->calls; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	bool cancelled = c->cancelled;
	pthread_mutex_unlock(&s->lock);

	/* A cancelled request gets no response. */
	if (cancelled)
		fprintf(stderr, "agentjail mcp: the call was cancelled\n");
	else if (result)
		send_result(s, c->link, c->id, json_incref(result), c->modern);
	else
		send_error(s, c->link, c->id, INTERNAL_ERROR, "out of memory building the result",
			   NULL);
	json_decref(result);
	/* The link may go away once told: nothing of it is touched after. */
	if (c->link->done)
		c->link->done(c->link);
	aj_cancel_free(c->cancel);
	mcp_notifier_free(&c->notes);
	json_decref(c->id);
	json_decref(c->args);
	free(c);

	pthread_mutex_lock(&s->lock);
	if (--s->pending == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

#define LEVELS "debug, info, notice, warning, error, critical, alert or emergency"

/* What the client asked to be told while the call runs: a progressToken
 * (_meta, both eras) and a log level (the request's _meta in 2026-07-28,
 * logging/setLevel on the link before). 0, or -1 with the error sent. */
static int call_notes(struct mcp_server *s, struct mcp_link *link, json_t *id, json_t *params,
		      bool modern, struct mcp_notifier *n)
{
	json_t *meta = json_object_get(params, "_meta");
	json_t *token = json_object_get(meta, "progressToken");
	if (token && !json_is_string(token) && !json_is_number(token)) {
		send_error(s, link, id, INVALID_PARAMS,
			   "_meta.progressToken must be a string or a number", NULL);
		return -1;
	}
	enum mcp_log_level level = link->log_level;
	if (modern) {
		json_t *l = json_object_get(meta, META_LOG_LEVEL);
		level = MCP_LOG_OFF;
		if (l && (!json_is_string(l) || mcp_log_level_parse(json_string_value(l), &level))) {
			send_error(s, link, id, INVALID_PARAMS,
				   "_meta." META_LOG_LEVEL " must be one of " LEVELS, NULL);
			return -1;
		}
	}
	/* A link that cannot carry notifications (a JSON-only HTTP answer)
	 * gets none, and its run is not streamed at all. */
	if (!link->notify)
		return 0;
	n->progress_token = json_incref(token);
	n->level = level;
	return 0;
}

static void start_call(struct mcp_server *s, struct mcp_link *link, json_t *id, json_t *params,
		       bool modern)
{
	json_t *name = json_object_get(params, "name");
	if (!json_is_string(name)) {
		send_error(s, link, id, INVALID_PARAMS, "tools/call needs params.name, a string", NULL);
		return;
	}
	enum tool_kind tool;
	if (tool_find(json_string_value(name), s->cfg->sessions, s->cfg->tools, &tool)) {
		char msg[200];
		snprintf(msg, sizeof msg, "Unknown tool: %.120s", json_string_value(name));
		send_error(s, link, id, INVALID_PARAMS, msg, NULL);
		return;
	}
	json_t *args = json_object_get(params, "arguments");
	if (args && !json_is_object(args)) {
		/* A CallToolRequest that does not fit its own schema is a
		 * malformed request, not something the model wrote wrong. */
		send_error(s, link, id, INVALID_PARAMS, "tools/call: params.arguments must be an object",
			   NULL);
		return;
	}
	/* Arguments may be left out (the schema makes them optional): the
	 * tool's own check then names what is missing. */
	json_t *none = args ? NULL : json_object();
	if (!args)
		args = none;
	const char *code;
	size_t len;
	char why[200];
	int bad = tool == TOOL_RUN_PYTHON    ? tool_code_argument(args, &code, &len, why, sizeof why)
		  : tool == TOOL_RUN_COMMAND ? command_tool_arguments(args, why, sizeof why)
					     : file_tool_arguments(tool, args, why, sizeof why);
	if (bad) {
		/* Arguments that do not fit the tool's inputSchema are a tool
		 * execution error (MCP 2025-11-25, SEP-1303), not a protocol
		 * error: the model reads the words and corrects its call, where
		 * a JSON-RPC error would make the client throw instead. */
		json_t *r = tool_error("Invalid arguments for %s: %s (the tool's inputSchema "
				       "says what it takes)",
				       json_string_value(name), why);
		json_decref(none);
		if (r)
			send_result(s, link, id, r, modern);
		else
			send_error(s, link, id, INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	struct mcp_notifier notes = {.send = send_note};
	if (call_notes(s, link, id, params, modern, &notes)) {
		json_decref(none);
		return;
	}
	struct call *c = calloc(1, sizeof *c);
	if (!c || aj_cancel_new(&c->cancel)) {
		free(c);
		json_decref(none);
		mcp_notifier_free(&notes);
		send_error(s, link, id, INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	c->notes = notes;
	c->notes.arg = c;
	c->srv = s;
	c->link = link;
	c->id = json_incref(id);
	c->args = json_incref(args);
	json_decref(none);
	c->tool = tool;
	c->modern = modern;
	pthread_mutex_lock(&s->lock);
	c->next = s->calls;
	s->calls = c;
	s->pending++;
	link->calls_started++;
	link->notifying |= mcp_notifier_active(&c->notes);
	pthread_mutex_unlock(&s->lock);

	if (thread_start_detached(call_main, c, 0) != 0) {
		pthread_mutex_lock(&s->lock);
		s->calls = c->next;
		s->pending--;
		link->calls_started--;
		pthread_mutex_unlock(&s->lock);
		aj_cancel_free(c->cancel);
		mcp_notifier_free(&c->notes);
		json_decref(c->id);
		json_decref(c->args);
		free(c);
		send_error(s, link, id, INTERNAL_ERROR, "cannot start a thread for the run", NULL);
	}
}

/* notifications/cancelled: stop the run; its thread then sends nothing.
 * Unknown or finished ids are ignored, as the spec says. */
static void cancel_call(struct mcp_server *s, struct mcp_link *link, json_t *params)
{
	json_t *rid = json_object_get(params, "requestId");
	if (!rid)
		return;
	pthread_mutex_lock(&s->lock);
	for (struct call *c = s->calls; c; c = c->next)
		/* Only the same client's: ids are its own, and another's may match. */
		if (c->link->owner == link->owner && json_equal(c->id, rid)) {
			c->cancelled = true;
			aj_cancel_fire(c->cancel);
		}
	pthread_mutex_unlock(&s->lock);
}

/* ---- requests ---- */

static json_t *tools_list_result(struct mcp_server *s, bool modern)
{
	json_t *r = json_pack("{s:O}", "tools", s->tools);
	if (modern) {
		json_object_set_new(r, "ttlMs", json_integer(LIST_TTL_MS));
		json_object_set_new(r, "cacheScope", json_string("public"));
	}
	return r;
}

static const char instructions_alone[] =
	"run_python runs a complete Python program in a fresh sandbox and returns what it "
	"printed and how it ended. Nothing persists between calls.";
static const char instructions_session[] =
	"run_python runs Python in one sandbox session that lives across calls: variables, "
	"imports and files in the workspace (" AJ_SESSION_WORKSPACE ") persist, like a "
	"notebook. upload_file, download_file and list_files move files in and out of the "
	"workspace. Figures and images under outputs/ come back as images.";

static const char instructions_commands[] =
	"run_python runs Python, and run_command a shell command (/bin/sh -c), in one sandbox "
	"session that lives across calls, with the workspace (" AJ_SESSION_WORKSPACE ") as "
	"their working directory: files there persist and both see them, and Python's "
	"variables and imports persist, like a notebook. upload_file, download_file and "
	"list_files move files in and out of the workspace. Figures and images under outputs/ "
	"come back as images.";
static const char instructions_command_only[] =
	"run_command runs a shell command (/bin/sh -c) in one sandbox session that lives "
	"across calls, the workspace (" AJ_SESSION_WORKSPACE ") its working directory: files "
	"there persist. upload_file, download_file and list_files move files in and out of "
	"the workspace.";

static const char *instructions(const struct mcp_server *s)
{
	if (!s->cfg->sessions)
		return instructions_alone;
	if (!(s->cfg->tools & TOOL_BIT(TOOL_RUN_COMMAND)))
		return instructions_session;
	return s->cfg->tools & TOOL_BIT(TOOL_RUN_PYTHON) ? instructions_commands
							 : instructions_command_only;
}

static void handle_legacy(struct mcp_server *s, struct mcp_link *link, json_t *id, const char *method, json_t *params)
{
	if (!strcmp(method, "initialize")) {
		if (!json_is_object(params) ||
		    !json_is_string(json_object_get(params, "protocolVersion"))) {
			send_error(s, link, id, INVALID_PARAMS,
				   "initialize needs params.protocolVersion, a string", NULL);
			return;
		}
		/* The client's version if we speak it, else our latest. */
		const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
		const char *answer = LATEST_LEGACY_VERSION;
		for (size_t i = 0; i < sizeof legacy_versions / sizeof legacy_versions[0]; i++)
			if (!strcmp(asked, legacy_versions[i]))
				answer = legacy_versions[i];
		s->initialized = true;
		send_result(s, link, id,
			    json_pack("{s:s, s:{s:{s:b}, s:{}}, s:o, s:s}", "protocolVersion", answer,
				      "capabilities", "tools", "listChanged", 0, "logging", "serverInfo",
				      server_info(), "instructions", instructions(s)),
			    false);
	} else if (!strcmp(method, "ping")) {
		send_result(s, link, id, json_object(), false);
	} else if (!strcmp(method, "logging/setLevel")) {
		/* For the rest of the link's life (stdio: the connection). */
		enum mcp_log_level level;
		json_t *l = json_object_get(params, "level");
		if (!json_is_string(l) || mcp_log_level_parse(json_string_value(l), &level)) {
			send_error(s, link, id, INVALID_PARAMS,
				   "logging/setLevel needs params.level, one of " LEVELS, NULL);
			return;
		}
		link->log_level = level;
		send_result(s, link, id, json_object(), false);
	} else if (!strcmp(method, "tools/list")) {
		send_result(s, link, id, tools_list_result(s, false), false);
	} else if (!strcmp(method, "tools/call")) {
		if (!json_is_object(params)) {
			send_error(s, link, id, INVALID_PARAMS, "tools/call needs params, an object", NULL);
			return;
		}
		start_call(s, link, id, params, false);
	} else if (!strcmp(method, "server/discover")) {
		/* A 2026-07-28 method without the envelope it requires. */
		send_error(s, link, id, INVALID_PARAMS,
			   "server/discover needs params._meta with " META_VERSION " and "
			   META_CAPABILITIES,
			   NULL);
	} else {
		send_error(s, link, id, METHOD_NOT_FOUND, "Method not found", NULL);
	}
}

static json_t *supported_versions(void)
{
	json_t *a = json_pack("[s]", MODERN_VERSION);
	for (size_t i = 0; i < sizeof legacy_versions / sizeof legacy_versions[0]; i++)
		json_array_append_new(a, json_string(legacy_versions[i]));
	return a;
}

static void handle_modern(struct mcp_server *s, struct mcp_link *link, json_t *id, const char *method, json_t *params,
			  json_t *meta)
{
	json_t *version = json_object_get(meta, META_VERSION);
	if (!json_is_string(version)) {
		send_error(s, link, id, INVALID_PARAMS, "_meta." META_VERSION " must be a string", NULL);
		return;
	}
	if (strcmp(json_string_value(version), MODERN_VERSION) != 0) {
		send_error(s, link, id, UNSUPPORTED_VERSION, "Unsupported protocol version",
			   json_pack("{s:o, s:O}", "supported", supported_versions(), "requested",
				     version));
		return;
	}
	if (!json_is_object(json_object_get(meta, META_CAPABILITIES))) {
		send_error(s, link, id, INVALID_PARAMS,
			   "_meta." META_CAPABILITIES " is required (an object; {} for none)", NULL);
		return;
	}
	if (!strcmp(method, "server/discover")) {
		send_result(s, link, id,
			    json_pack("{s:o, s:{s:{s:b}, s:{}}, s:s, s:i, s:s}", "supportedVersions",
				      supported_versions(), "capabilities", "tools", "listChanged", 0,
				      "logging", "instructions", instructions(s), "ttlMs", LIST_TTL_MS,
				      "cacheScope", "public"),
			    true);
	} else if (!strcmp(method, "tools/list")) {
		send_result(s, link, id, tools_list_result(s, true), true);
	} else if (!strcmp(method, "tools/call")) {
		start_call(s, link, id, params, true);
	} else {
		send_error(s, link, id, METHOD_NOT_FOUND, "Method not found", NULL);
	}
}

/* Whether a string of v, outside skip, holds a NUL byte (a \u0000 that
 * JSON_ALLOW_NUL let through): everything but a tool's arguments is read
 * as C strings, where a NUL would end a method or a name early. */
static bool nul_outside(json_t *v, const json_t *skip)
{
	if (v == skip)
		return false;
	if (json_is_string(v))
		return memchr(json_string_value(v), '\0', json_string_length(v)) != NULL;
	const char *key;
	json_t *item;
	size_t i;
	if (json_is_object(v))
		json_object_foreach(v, key, item)
			if (nul_outside(item, skip))
				return true;
	if (json_is_array(v))
		json_array_foreach(v, i, item)
			if (nul_outside(item, skip))
				return true;
	return false;
}

static void handle_line(struct mcp_server *s, struct mcp_link *link, const char *line, size_t len)
{
	json_error_t je;
	/* JSON_ALLOW_NUL: code holding a \u0000 is valid JSON and a call like
	 * any other; it is answered under its own id, by the run's own check
	 * (rule I2: code with a NUL is refused, at its offset), never with a
	 * Parse error and a null id. */
	json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!msg) {
		char text[200];
		snprintf(text, sizeof text, "Parse error: %s", je.text);
		send_error(s, link, NULL, PARSE_ERROR, text, NULL);
		return;
	}
	if (json_is_array(msg)) {
		send_error(s, link, NULL, INVALID_REQUEST, "Invalid Request: batches are not supported",
			   NULL);
		json_decref(msg);
		return;
	}
	json_t *id = json_is_object(msg) ? json_object_get(msg, "id") : NULL;
	/* An id is a string or a whole number; anything else cannot be echoed. */
	if (id && !json_is_string(id) && !json_is_integer(id))
		id = NULL;
	json_t *method = json_is_object(msg) ? json_object_get(msg, "method") : NULL;
	json_t *params = json_is_object(msg) ? json_object_get(msg, "params") : NULL;
	if (nul_outside(msg, json_is_object(params) ? json_object_get(params, "arguments") : NULL)) {
		send_error(s, link, id && !nul_outside(id, NULL) ? id : NULL, INVALID_REQUEST,
			   "Invalid Request: a NUL byte (\\u0000) in a string outside the tool's "
			   "arguments",
			   NULL);
		goto out;
	}
	if (!json_is_object(msg) ||
	    !json_is_string(json_object_get(msg, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0) {
		send_error(s, link, id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message",
			   NULL);
		goto out;
	}
	if (!method) {
		/* A response (we send no requests) or nothing at all. */
		if (!json_object_get(msg, "result") && !json_object_get(msg, "error"))
			send_error(s, link, id, INVALID_REQUEST, "Invalid Request: no method", NULL);
		goto out;
	}
	if (!json_is_string(method) || (params && !json_is_object(params))) {
		/* Not a valid notification either: it is answered, with a
		 * null id if it has none (the specification's own example). */
		send_error(s, link, id, INVALID_REQUEST,
			   "Invalid Request: method must be a string, params an object", NULL);
		goto out;
	}
	const char *m = json_string_value(method);
	if (!json_object_get(msg, "id")) {
		/* Notifications: never a response. */
		if (!strcmp(m, "notifications/cancelled"))
			cancel_call(s, link, params);
		goto out;
	}
	if (!id) {
		send_error(s, link, NULL, INVALID_REQUEST,
			   "Invalid Request: id must be a string or an integer", NULL);
		goto out;
	}
	json_t *meta = params ? json_object_get(params, "_meta") : NULL;
	if (json_is_object(meta) && json_object_get(meta, META_VERSION) &&
	    strcmp(m, "initialize") != 0)
		handle_modern(s, link, id, m, params, meta);
	else
		handle_legacy(s, link, id, m, params);
out:
	json_decref(msg);
}

/* Reads one line into *buf. Returns its length, or -1 at EOF. A line longer
 * than MAX_LINE is read to its end and dropped (*too_long). */
static ssize_t read_line(FILE *in, char **buf, size_t *cap, bool *too_long)
{
	size_t len = 0;
	*too_long = false;
	for (;;) {
		int ch = getc_unlocked(in);
		if (ch == EOF)
			return len || *too_long ? (ssize_t)len : -1;
		if (ch == '\n')
			break;
		if (*too_long)
			continue;
		if (len >= MAX_LINE) {
			*too_long = true;
			continue;
		}
		if (len + 1 >= *cap) {
			size_t ncap = *cap ? *cap * 2 : 65536;
			if (ncap > MAX_LINE + 1)
				ncap = MAX_LINE + 1;
			char *p = realloc(*buf, ncap);
			if (!p) {
				*too_long = true;
				continue;
			}
			*buf = p;
			*cap = ncap;
		}
		(*buf)[len++] = (char)ch;
	}
	/* A blank first line (or a first one no buffer could be allocated
	 * for) leaves *buf NULL: there is nothing to terminate. */
	if (*buf)
		(*buf)[len] = '\0';
	return (ssize_t)len;
}

struct mcp_server *mcp_server_start(const struct mcp_config *cfg, struct aj_sandbox *sandbox)
{
	/* Static: a run's thread may still be leaving the lock's functions
	 * when the last one wakes mcp_server_stop. One server per process. */
	static struct mcp_server s;
	s = (struct mcp_server){.cfg = cfg, .sandbox = sandbox};
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.idle, NULL);
	sem_init(&s.slots, 0, cfg->concurrency);
	/* What the description names as installed is probed once, through
	 * the sandbox the calls will use (none with a queue: then it is not
	 * known here, and the words promise only the standard library). */
	s.tools = tool_list(&cfg->sandbox, cfg->sessions, cfg->tools, tool_packages_of(sandbox));
	if (!s.tools) {
		fprintf(stderr, "agentjail mcp: cannot build the tool definitions\n");
		return NULL;
	}
	mcp_session_init(&s.session, &cfg->sandbox);
	return &s;
}

void mcp_server_message(struct mcp_server *s, struct mcp_link *link, const char *msg, size_t len)
{
	handle_line(s, link, msg, len);
}

void mcp_server_too_long(struct mcp_server *s, struct mcp_link *link)
{
	send_error(s, link, NULL, PARSE_ERROR, "Parse error: message longer than the server accepts",
		   NULL);
}

void mcp_server_stop(struct mcp_server *s)
{
	/* Stop every run still going and wait for them all, so no sandbox
	 * outlives the server. */
	pthread_mutex_lock(&s->lock);
	for (struct call *c = s->calls; c; c = c->next) {
		c->cancelled = true;
		aj_cancel_fire(c->cancel);
	}
	while (s->pending > 0)
		pthread_cond_wait(&s->idle, &s->lock);
	pthread_mutex_unlock(&s->lock);
	mcp_session_end(&s->session);
	json_decref(s->tools);
	sem_destroy(&s->slots);
}

/* The stdio link: a line on out per message. */
struct stdio_link {
	struct mcp_link link;
	FILE *out;
};

static void stdio_emit(struct mcp_link *link, const char *msg)
{
	struct stdio_link *l = (struct stdio_link *)link;
	fputs(msg, l->out);
	fputc('\n', l->out);
	fflush(l->out);
}

void mcp_server_read(struct mcp_server *s, struct mcp_link *link, FILE *in)
{
	char *line = NULL;
	size_t cap = 0;
	bool too_long;
	ssize_t n;
	while ((n = read_line(in, &line, &cap, &too_long)) >= 0) {
		if (too_long) {
			mcp_server_too_long(s, link);
			continue;
		}
		if (n == 0)
			continue; /* blank lines between messages are harmless */
		handle_line(s, link, line, (size_t)n);
	}
	free(line);
}

int mcp_serve(const struct mcp_config *cfg, struct aj_sandbox *sandbox, FILE *in, FILE *out)
{
	struct mcp_server *s = mcp_server_start(cfg, sandbox);
	if (!s)
		return 1;
	/* Notifications take the same lock and the same writer as every
	 * other message: one line each, never interleaved. */
	struct stdio_link l = {.link = {.emit = stdio_emit, .notify = stdio_emit}, .out = out};
	l.link.owner = &l;
	mcp_server_read(s, &l.link, in);
	/* EOF: the client is gone. */
	mcp_server_stop(s);
	return 0;
}
