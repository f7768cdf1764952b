/* The JSON API of agentjail serve:
 *
 *   GET    /v1/health                       no key: liveness and draining
 *   GET    /v1/tiers                        what `agentjail check` says (cached:
 *                                            tier_probe.h)
 *   GET    /metrics                         Prometheus text
 *   POST   /v1/runs                         {"code", "language"?, "limits"?,
 *                                            "allow_hosts"?, "allow_cidrs"?,
 *                                            "env"?, "background"?,
 *                                            "webhook"?} → a result, an event
 *                                            stream (Accept: text/event-stream)
 *                                            or a background run's id
 *   GET    /v1/runs, /v1/runs/ID[/events]   recorded runs (runs_api.h)
 *   DELETE /v1/runs/ID                      cancel one
 *   POST   /v1/sessions                     {"limits"?, "env"?, "allow_hosts"?,
 *                                            "allow_cidrs"?} → {"id", ...}
 *   GET    /v1/sessions                     the key's open sessions, newest
 *                                            first: each as POST answered,
 *                                            with "created", "last_used",
 *                                            "paused", its rules and its
 *                                            secrets' names (501 with --queue);
 *                                            ?all=true every key's, each with
 *                                            its "key" (an admin key's only)
 *   DELETE /v1/sessions/ID                   the key's own; an admin key's,
 *                                            another key's too
 *   POST   /v1/sessions/ID/runs             {"code", "language"?, "limits"?} →
 *                                            a result (+ images), or
 *                                            an event stream, recorded
 *   POST   /v1/sessions/ID/exec             {"command" | "argv", "cwd"?, "env"?,
 *                                            "stdin"?, "timeout"?}: a command in
 *                                            the session's sandbox, answered as
 *                                            .../runs is (call_body.h)
 *   POST   /v1/sessions/ID/processes        a command in the background, and
 *   GET    .../processes[/PID[/events]]     its list, state and output; POST
 *   POST   .../processes/PID/stdin|signal   to its stdin, a signal
 *                                            (admit/proc_call.h)
 *   POST   /v1/sessions/ID/egress           {"allow_hosts", "allow_cidrs"}:
 *                                            keep only these rules
 *   PUT    /v1/sessions/ID/files/PATH       the body is the file
 *   GET    /v1/sessions/ID/files/PATH       the file
 *   GET    /v1/sessions/ID/files[?dir=D]    a listing
 *
 * A run's result is the command line's --json object (docs/design.md) with
 * HTTP 200 whatever the program did: a program that fails is an answer,
 * not an HTTP error. HTTP errors are the API's own: 400 a bad request
 * (naming the field), 401 no valid key, 404, 405, 410 a closed session
 * (with why), 413 too large (a body over its route's cap, or code over
 * 4 MiB), 429 over a limit (Retry-After), 502 a run lost with its worker
 * (may_have_started, retry_safe), 503 shutting down, no slot or no worker
 * in time. Every run's answer carries its run_id. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../api/api.h"
#include "../core/internal.h"
#include "admit/call_secrets.h"
#include "admit/narrow.h"
#include "api_v1.h"
#include "runs_api.h"
#include "tier_probe.h"
#include "admit/service.h"
#include "webhook/webhook.h"
#include "http/wire.h"
#include "admit/webhook_run.h"

bool api_needs_key(const char *method, const char *path)
{
	(void)method;
	return strcmp(path, "/v1/health") != 0;
}

size_t api_exec_body_limit(const struct serve_config *c)
{
	/* Code's cap (a command as long as code may be), or stdin as large as
	 * a transfer may be, in base64 (4 bytes for every 3), beside a small
	 * object's worth of command and fields: a body is one or the other,
	 * and the body budgets must hold it (http_wiring_budgets). */
	size_t transfer = (size_t)c->sandbox.session.transfer_mb << 20;
	size_t stdin_body = (transfer + 2) / 3 * 4 + SERVE_SMALL_BODY;
	return stdin_body > c->max_body ? stdin_body : c->max_body;
}

/* Whether path is a session's route ending in tail ("/exec"). */
static bool session_route_is(const char *path, const char *tail)
{
	size_t n = strlen(path), t = strlen(tail);
	return !strncmp(path, SESSIONS_PREFIX, strlen(SESSIONS_PREFIX)) && n > t &&
	       !strcmp(path + n - t, tail);
}

size_t api_body_limit(const struct service *svc, const char *method, const char *path)
{
	/* A file goes up as the raw body: as large as a transfer may be. */
	if (!strcmp(method, "PUT") && !strncmp(path, SESSIONS_PREFIX, strlen(SESSIONS_PREFIX)))
		return (size_t)svc->cfg.sandbox.session.transfer_mb << 20;
	/* A background command's body is exec's; its stdin a transfer's in
	 * base64, as exec's stdin is. */
	if (!strcmp(method, "POST") &&
	    (session_route_is(path, "/exec") || session_route_is(path, "/processes") ||
	     session_route_is(path, "/stdin")))
		return api_exec_body_limit(&svc->cfg);
	/* A route that takes a small object (a session's terms, its egress
	 * rules) or none gets a small cap: only code may be large. */
	bool small = strcmp(method, "POST") || !strcmp(path, "/v1/sessions") ||
		     session_route_is(path, "/egress") || session_route_is(path, "/signal");
	return small && svc->cfg.max_body > SERVE_SMALL_BODY ? SERVE_SMALL_BODY : svc->cfg.max_body;
}

int api_may_buffer(struct service *svc, const struct http_request *head, struct http_response *rs)
{
	/* A session file, or a command with its stdin, is read into memory
	 * only for a session the key holds, not for any path that looks like
	 * one: the backend looks it up (here, or in Redis for the queue's)
	 * before a byte is read. */
	if ((strcmp(head->method, "PUT") && strcmp(head->method, "POST")) ||
	    strncmp(head->path, SESSIONS_PREFIX, strlen(SESSIONS_PREFIX)))
		return 0;
	struct session_route r;
	if (session_route_parse(head, rs, &r))
		return -1;
	if (r.op != SESSION_PUT && r.op != SESSION_EXEC && r.op != SESSION_PROC)
		return 0;
	int rc = svc->backend->session_held(svc, r.id, head->key);
	if (rc == -ENOENT) {
		/* Another key's session answers the same: its id tells nothing. */
		respond_error(rs, 404, "not_found", "no such session");
		return -1;
	}
	if (rc == -EIO) {
		respond_error(rs, 503, "queue_unavailable",
			      "the queue cannot be reached to find the session; retry");
		rs->retry_after = 5;
		return -1;
	}
	return 0; /* held, or closed: the call answers why */
}

static void post_session(struct service *svc, const struct http_request *rq,
			 struct http_response *rs)
{
	static const char *const allowed[] = {"limits", "allow_hosts", "allow_cidrs", "env",
					      "from_checkpoint", "secrets", NULL};
	json_t *o = request_body(rq, rs, allowed);
	if (!o)
		return;
	json_t *from = json_incref(json_object_get(o, "from_checkpoint"));
	char *secrets = NULL;
	json_object_del(o, "from_checkpoint");
	struct aj_config cfg;
	struct run_terms t;
	struct terms_lists lists;
	struct aj_error err = {0};
	const char *why;
	if (atomic_load(&svc->draining)) {
		respond_error(rs, 503, "shutting_down", "the server is shutting down");
		rs->retry_after = 5;
		goto out;
	}
	if (from && (!json_is_string(from) || !json_string_length(from))) {
		respond_error(rs, 400, "bad_request", "from_checkpoint: expected a checkpoint's id");
		goto out;
	}
	if (terms_narrow(&svc->cfg.sandbox, o, &t, &why, &err)) {
		respond_error(rs, 400, why, "%s", err.message);
		goto out;
	}
	if (call_secrets(svc, rq->key, o, &secrets, rs))
		goto out;
	/* o becomes the session's terms: shared with its forks, written to
	 * disk when serve keeps it paused over a restart. The request's
	 * secrets are not in it (a kept session comes back with the
	 * server's and the key's only); the library keeps its own copy of
	 * the joined ones. */
	call_secrets_forget(o);
	t.secrets = secrets;
	terms_apply(&svc->cfg.sandbox, &t, &cfg, &lists);
	const struct session_opening op = {&cfg, &t, o, from ? json_string_value(from) : NULL};
	svc->backend->session_open(svc, rq, rs, &op);
out:
	call_secrets_free(secrets);
	json_decref(from);
	json_decref(o);
}

static void list_sessions(struct service *svc, const struct http_request *rq,
			  struct http_response *rs)
{
	/* With --queue, Redis holds a key's session ids but of each only its
	 * worker, key and end (agentjail:session:ID): its limits, rules,
	 * secrets and times are its worker's, a queue round trip a session
	 * away; ids alone would not be the rows this route promises. */
	if (!svc->backend->session_list)
		return respond_error(rs, 501, "not_offered", "listing sessions is not offered by a "
				     "server with --queue yet: its sessions live on workers, and "
				     "Redis keeps only which worker and key hold each, not what "
				     "each was opened with");
	const char *q = http_query(rq, "all");
	if (q && strcmp(q, "true") && strcmp(q, "false"))
		return respond_error(rs, 400, "bad_request", "all: expected true or false");
	bool all = q && !strcmp(q, "true");
	/* Every key's sessions (their limits, rules, secrets' names, and
	 * which key holds them) are the operator's, not any tenant's. */
	if (all && !rq->key->admin)
		return respond_error(rs, 403, "forbidden", "this key may not list every key's "
				     "sessions (agentjail keys add --admin)");
	svc->backend->session_list(svc, rq, rs, all);
}

static void session_route(struct service *svc, const struct http_request *rq,
			  struct http_response *rs)
{
	struct session_route r;
	if (!session_route_parse(rq, rs, &r))
		svc->backend->session_call(svc, rq, rs, &r);
}

static void get_metrics(struct service *svc, struct http_response *rs)
{
	struct metrics_gauges g = {.draining = atomic_load(&svc->draining)};
	svc->backend->gauges(svc, &g);
	admission_counts(&svc->adm, &g.running, &g.waiting);
	g.slots = admission_concurrency(&svc->adm);
	struct webhook_counts h;
	webhooks_counts(svc->webhooks, &h);
	g.hooks_delivered = h.delivered;
	g.hooks_failed = h.failed;
	g.hooks_given_up = h.given_up;
	g.hooks_dropped = h.dropped;
	g.tier_probes = tier_probe_count(svc->tier_probe);
	rs->body = metrics_render(&svc->metrics, &g);
	if (!rs->body) {
		respond_error(rs, 500, "internal", "out of memory");
		return;
	}
	rs->code = 200;
	rs->len = strlen(rs->body);
	rs->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* run_python as a remote client offers it to a model (python's
 * remote_tools.py, the TypeScript client): the library's definition for
 * this server's limits and the packages its sandbox has (probed once, as
 * /mcp's tools/list), for a fresh sandbox per call or, ?session=true, for
 * a session that keeps its state. */
static void get_tools(struct service *svc, const struct http_request *rq,
		      struct http_response *rs)
{
	const char *q = http_query(rq, "session");
	if (q && strcmp(q, "true") && strcmp(q, "false"))
		return respond_error(rs, 400, "bad_request", "session: expected true or false");
	bool session = q && !strcmp(q, "true");
	json_t *def = tool_definition_object(&svc->cfg.sandbox, session,
					     tool_packages_of(svc->backend->mcp_sandbox(svc)));
	if (!def)
		return respond_error(rs, 500, "internal", "out of memory");
	respond_json(rs, 200, json_pack("{s:[o]}", "tools", def));
}

void api_handle(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	const char *p = rq->path, *m = rq->method;
	if (!strcmp(p, "/v1/health")) {
		if (strcmp(m, "GET"))
			return respond_method(rs, m, "GET");
		bool draining = atomic_load(&svc->draining);
		/* 503 while draining: a load balancer stops sending here. */
		respond_json(rs, draining ? 503 : 200,
			     json_pack("{s:s, s:s, s:s}", "status", draining ? "draining" : "ok",
				       "version", AGENTJAIL_VERSION, "tier",
				       aj_tier_name(svc->cfg.sandbox.tier)));
	} else if (!strcmp(p, "/v1/tiers")) {
		if (strcmp(m, "GET"))
			return respond_method(rs, m, "GET");
		tier_probe_answer(svc->tier_probe, rs);
	} else if (!strcmp(p, "/v1/tools")) {
		if (strcmp(m, "GET"))
			return respond_method(rs, m, "GET");
		get_tools(svc, rq, rs);
	} else if (!strcmp(p, "/metrics")) {
		if (strcmp(m, "GET"))
			return respond_method(rs, m, "GET");
		if (!rq->key->metrics) /* server-wide counts: the operator's key only */
			return respond_error(rs, 403, "forbidden", "this key may not read /metrics "
					     "(agentjail keys add --metrics)");
		get_metrics(svc, rs);
	} else if (!strncmp(p, RUNS_PATH, strlen(RUNS_PATH)) &&
		   (!p[strlen(RUNS_PATH)] || p[strlen(RUNS_PATH)] == '/')) {
		runs_api_handle(svc, rq, rs);
	} else if (!strcmp(p, "/v1/checkpoints") || !strncmp(p, "/v1/checkpoints/", 16)) {
		if (!svc->backend->checkpoints)
			return respond_error(rs, 501, "not_offered", "checkpoints are not kept by a "
					     "server with --queue yet: its sessions live on workers");
		svc->backend->checkpoints(svc, rq, rs);
	} else if (!strcmp(p, "/v1/sessions")) {
		if (!strcmp(m, "GET"))
			return list_sessions(svc, rq, rs);
		if (strcmp(m, "POST"))
			return respond_method(rs, m, "GET, POST");
		post_session(svc, rq, rs);
	} else if (!strncmp(p, SESSIONS_PREFIX, strlen(SESSIONS_PREFIX))) {
		session_route(svc, rq, rs);
	} else {
		respond_error(rs, 404, "not_found", "no such route: %.200s", p);
	}
}
