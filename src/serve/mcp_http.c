/* The server is stateless over HTTP: it assigns no Mcp-Session-Id, so any
 * replica behind a load balancer can take any POST, and GET (a stream the
 * server would push on) is 405, as the transport allows. Requests of both
 * protocol eras are served, as on stdio.
 *
 * A tools/call that asked for notifications (a progressToken, or the 2026
 * era's _meta logLevel), from a client that accepts text/event-stream, is
 * answered as an SSE stream (mcp_stream.c): the notifications as they
 * happen, then the response. Every other answer is application/json, as
 * before. */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/internal.h"
#include "../mcp/config.h"
#include "../mcp/server.h"
#include "admit/backend.h"
#include "http/access_log.h"
#include "mcp_http.h"
#include "mcp_stream.h"
#include "runs/sse.h"

struct mcp_http {
	struct mcp_config cfg;
	struct mcp_server *server;
};

/* One POST: the answer it collects, and whether its call has ended. It
 * lives until both the handler and the call are done with it: an SSE
 * answer leaves the handler before its call ends. */
struct http_link {
	struct mcp_link link;
	struct service *svc;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	char *answer;
	unsigned calls_done;
	bool handler_left; /* the handler answered with the stream and went */
	bool admitted;  /* a queue place is held for this POST's tools/call */
	bool started;   /* ... and the run took it */
	struct key_use *use;
	struct mcp_stream *stream; /* the client accepts SSE; else NULL */
};

static void link_free(struct http_link *l)
{
	/* A call refused by its arguments never took its place. */
	if (l->admitted && !l->started)
		admit_abandon(&l->svc->adm, l->use);
	if (l->stream)
		mcp_stream_end(l->stream);
	free(l->answer);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->changed);
	free(l);
}

static const char *const versions[] = {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26",
				       "2024-11-05"};

static void link_emit(struct mcp_link *link, const char *msg)
{
	struct http_link *l = (struct http_link *)link;
	if (l->stream)
		mcp_stream_push(l->stream, msg, false);
	pthread_mutex_lock(&l->lock);
	/* One message per POST gets an answer: a second cannot happen, and
	 * is dropped rather than sent as a body of two documents. */
	if (!l->answer)
		l->answer = strdup(msg);
	pthread_cond_broadcast(&l->changed);
	pthread_mutex_unlock(&l->lock);
}

static void link_notify(struct mcp_link *link, const char *msg)
{
	struct http_link *l = (struct http_link *)link;
	mcp_stream_push(l->stream, msg, true);
}

static void link_done(struct mcp_link *link)
{
	struct http_link *l = (struct http_link *)link;
	pthread_mutex_lock(&l->lock);
	l->calls_done++;
	bool last = l->handler_left && l->calls_done == l->link.calls_started;
	pthread_cond_broadcast(&l->changed);
	pthread_mutex_unlock(&l->lock);
	if (last)
		link_free(l);
}

static void link_run(struct mcp_link *link, const char *code, size_t len, struct aj_cancel *cancel,
		     const struct aj_stream *stream, struct aj_result *res)
{
	struct http_link *l = (struct http_link *)link;
	struct service *svc = l->svc;
	unsigned retry;
	double t0 = now_ms() / 1e3;
	if (admit_start(&svc->adm, l->use, NULL, &retry) != ADMIT_OK) {
		l->started = true; /* the queue place is given up */
		metrics_refused(&svc->metrics, ADMIT_WAITED);
		result_init(res);
		result_sandbox_error(res, "the server is busy: no run slot came free within %g s; "
				     "try again shortly",
				     svc->cfg.max_wait_sec);
		return;
	}
	l->started = true;
	/* Streamed when the call wants notifications, on either backend. */
	struct aj_error err;
	service_run(svc, code, len, cancel, stream, res, &err);
	admit_finish(&svc->adm, l->use);
	metrics_run(&svc->metrics, svc->cfg.sandbox.tier, res->status, now_ms() / 1e3 - t0);
	/* A tools/call is a run apart from its request's line (a batch may
	 * hold several). */
	access_log_run(l->use && l->use->key ? l->use->key->name : NULL, "/mcp", "",
		       svc->cfg.sandbox.tier, (now_ms() / 1e3 - t0) * 1e3,
		       aj_status_name(res->status));
}

int mcp_http_init(struct service *svc)
{
	struct mcp_http *m = calloc(1, sizeof *m);
	if (!m)
		return -1;
	mcp_config_init(&m->cfg);
	m->cfg.sandbox = svc->cfg.sandbox;
	m->cfg.concurrency = svc->cfg.concurrency;
	m->server = mcp_server_start(&m->cfg, svc->backend->mcp_sandbox(svc));
	if (!m->server) {
		free(m);
		return -1;
	}
	svc->mcp = m;
	return 0;
}

void mcp_http_stop(struct service *svc)
{
	if (!svc->mcp)
		return;
	mcp_server_stop(svc->mcp->server);
	free(svc->mcp);
	svc->mcp = NULL;
}

static bool accepts_json(const char *accept)
{
	/* The transport has clients list application/json and
	 * text/event-stream; every answer but a streamed call's is
	 * application/json. */
	return !accept || strstr(accept, "application/json") || strstr(accept, "*/*");
}

/* A JSON-RPC error as the whole answer, for what fails before the server
 * sees the message. */
static void rpc_error(struct http_response *rs, int status, json_t *id, int code, const char *msg)
{
	/* An id that could not be read is null (JSON-RPC 2.0, section 5). */
	json_t *o = json_pack("{s:s, s:{s:i, s:s}, s:O}", "jsonrpc", "2.0", "error", "code", code,
			      "message", msg, "id", id ? id : json_null());
	respond_json(rs, status, o);
}

/* The request's method and headers, before its body is read: false, or
 * true with the refusal in rs. */
static bool head_refused(const struct service *svc, const struct http_request *rq,
			 struct http_response *rs)
{
	if (!strcmp(rq->method, "GET") || !strcmp(rq->method, "DELETE")) {
		/* No server-pushed stream and no session to end: stateless. */
		respond_error(rs, 405, "method_not_allowed",
			      "this server offers no SSE stream and no MCP session; POST messages");
		rs->allow = "POST";
		return true;
	}
	if (strcmp(rq->method, "POST")) {
		respond_error(rs, 405, "method_not_allowed", "%s is not allowed here", rq->method);
		rs->allow = "POST";
		return true;
	}
	/* DNS rebinding: a web page the user opened must not reach a server
	 * on their loopback. Browsers send Origin; other clients need not. */
	if (rq->origin && (!svc->cfg.origin || strcmp(rq->origin, svc->cfg.origin))) {
		respond_error(rs, 403, "forbidden_origin",
			      "Origin %.200s is not allowed (agentjail serve --origin)", rq->origin);
		return true;
	}
	if (rq->protocol_version) {
		bool known = false;
		for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
			known |= !strcmp(rq->protocol_version, versions[i]);
		if (!known) {
			rpc_error(rs, 400, NULL, -32600, "Unsupported MCP-Protocol-Version header");
			return true;
		}
	}
	if (!accepts_json(rq->accept)) {
		respond_error(rs, 406, "not_acceptable", "answers are application/json");
		return true;
	}
	return false;
}

void mcp_http_handle(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	if (head_refused(svc, rq, rs))
		return;
	/* A tools/call takes its queue place here, so a full queue is a 429
	 * the client's HTTP stack understands, before any thread starts. */
	/* JSON_ALLOW_NUL as the MCP server reads it (code may hold a \u0000):
	 * a call it answers is a call admitted here. */
	if (request_json_caps(rq, rs))
		return; /* before jansson (here and in the MCP server) parses it */
	json_t *msg = json_loadb(rq->body, rq->body_len, JSON_ALLOW_NUL, NULL);
	bool is_call = json_is_object(msg) &&
		       json_is_string(json_object_get(msg, "method")) &&
		       !strcmp(json_string_value(json_object_get(msg, "method")), "tools/call") &&
		       json_object_get(msg, "id");
	struct http_link *l = calloc(1, sizeof *l);
	/* Only a call can send notifications, and only a client that takes
	 * an event stream can be sent them. */
	if (l && is_call && accepts_sse(rq) && !(l->stream = mcp_stream_new())) {
		free(l);
		l = NULL;
	}
	if (!l) {
		json_decref(msg);
		rpc_error(rs, 500, NULL, -32603, "out of memory");
		return;
	}
	l->link = (struct mcp_link){.emit = link_emit, .notify = l->stream ? link_notify : NULL,
				    .done = link_done, .run = link_run, .owner = rq->key};
	l->svc = svc;
	l->use = admission_use(&svc->adm, rq->key);
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->changed, NULL);
	if (is_call) {
		unsigned retry = 0;
		enum admit_verdict v = admit_enter(&svc->adm, l->use, &retry);
		if (v != ADMIT_OK) {
			metrics_refused(&svc->metrics, v);
			rpc_error(rs, v == ADMIT_DRAINING ? 503 : 429, json_object_get(msg, "id"),
				  -32000,
				  v == ADMIT_RATE ? "Rate limited: this key used its runs per minute"
				  : v == ADMIT_DRAINING ? "The server is shutting down"
							: "The server's run queue is full");
			rs->retry_after = retry;
			json_decref(msg);
			if (l->stream)
				mcp_stream_unread(l->stream);
			link_free(l);
			return;
		}
		l->admitted = true;
	}
	json_decref(msg);
	mcp_server_message(svc->mcp->server, &l->link, rq->body, rq->body_len);
	if (l->link.calls_started && l->link.notifying) {
		/* The call goes on; the answer is its stream, from the
		 * notifications already queued on. */
		mcp_stream_respond(l->stream, rs);
		pthread_mutex_lock(&l->lock);
		l->handler_left = true;
		bool last = l->calls_done == l->link.calls_started;
		pthread_mutex_unlock(&l->lock);
		if (last)
			link_free(l);
		return;
	}
	if (l->stream)
		mcp_stream_unread(l->stream);
	pthread_mutex_lock(&l->lock);
	while (l->calls_done < l->link.calls_started)
		pthread_cond_wait(&l->changed, &l->lock);
	pthread_mutex_unlock(&l->lock);
	if (l->answer) {
		rs->code = 200;
		rs->body = l->answer;
		rs->len = strlen(l->answer);
		rs->content_type = "application/json";
		l->answer = NULL;
	} else {
		/* A notification, a response, or a call cancelled meanwhile. */
		rs->code = 202;
	}
	link_free(l);
}
