/* The JSON API of agentjail serve:
 *
 *   GET    /v1/health                       no key: liveness and draining
 *   GET    /v1/tiers                        what `agentjail check` says
 *   GET    /metrics                         Prometheus text
 *   POST   /v1/runs                         {"code", "limits"?} → a result
 *   POST   /v1/sessions                     {"limits"?} → {"id", ...}
 *   DELETE /v1/sessions/ID
 *   POST   /v1/sessions/ID/runs             {"code"} → a result (+ images)
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

#include "../core/internal.h"
#include "narrow.h"
#include "service.h"
#include "wire.h"

#define SESSIONS_PREFIX "/v1/sessions/"

bool api_needs_key(const char *method, const char *path)
{
	(void)method;
	return strcmp(path, "/v1/health") != 0;
}

size_t api_body_limit(const struct service *svc, const char *method, const char *path)
{
	/* A file goes up as the raw body: as large as a transfer may be. */
	if (!strcmp(method, "PUT") && !strncmp(path, SESSIONS_PREFIX, strlen(SESSIONS_PREFIX)))
		return (size_t)svc->cfg.sandbox.session.transfer_mb << 20;
	return svc->cfg.max_body;
}

/* The body as a JSON object whose keys are all in allowed (NULL-ended). */
json_t *request_body(const struct http_request *rq, struct http_response *rs,
			   const char *const *allowed)
{
	json_error_t je;
	/* An empty body is an empty object: POST /v1/sessions needs none. */
	json_t *o = rq->body_len ? json_loadb(rq->body, rq->body_len,
					      JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je)
				 : json_object();
	if (!o) {
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

static bool refused(struct service *svc, enum admit_verdict v, unsigned retry,
		    struct http_response *rs)
{
	if (v == ADMIT_OK)
		return false;
	metrics_refused(&svc->metrics, v);
	switch (v) {
	case ADMIT_QUEUE_FULL:
		respond_error(rs, 429, "queue_full",
			      "%u runs are running and %u waiting, the most this server queues; "
			      "retry after %u s",
			      admission_concurrency(&svc->adm), svc->cfg.queue_size, retry);
		break;
	case ADMIT_RATE:
		respond_error(rs, 429, "rate_limited", "this key used its runs per minute; retry "
			      "after %u s", retry);
		break;
	case ADMIT_DRAINING:
		respond_error(rs, 503, "shutting_down", "the server is shutting down");
		break;
	case ADMIT_NO_WORKER:
		respond_error(rs, 503, "no_worker",
			      "no live %s worker offered a run slot within %g s (start one: "
			      "agentjail worker --queue %s --tier %s)",
			      aj_tier_name(svc->cfg.sandbox.tier), svc->cfg.max_wait_sec,
			      svc->cfg.queue_url, aj_tier_name(svc->cfg.sandbox.tier));
		break;
	default:
		respond_error(rs, 503, "queue_timeout", "no run slot came free within %g s",
			      svc->cfg.max_wait_sec);
		break;
	}
	rs->retry_after = retry;
	return true;
}

int service_admit(struct service *svc, struct key_use *u, struct http_response *rs)
{
	unsigned retry = 0;
	enum admit_verdict v = admit_enter(&svc->adm, u, &retry);
	if (v == ADMIT_OK)
		v = admit_start(&svc->adm, u, &retry);
	return refused(svc, v, retry, rs) ? -1 : 0;
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

void respond_run(struct service *svc, struct http_response *rs, const char *id,
		 struct aj_result *res, double t0)
{
	metrics_run(&svc->metrics, svc->cfg.sandbox.tier, res->status, now_ms() / 1e3 - t0);
	json_t *o = result_to_json_object(res, svc->cfg.sandbox.tier);
	if (o)
		json_object_set_new(o, "run_id", json_string(id));
	respond_json(rs, 200, o);
	aj_result_free(res);
}

static void post_run(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	static const char *const allowed[] = {"code", "limits", NULL};
	json_t *o = request_body(rq, rs, allowed);
	if (!o)
		return;
	const char *code;
	size_t len;
	struct aj_limits limits;
	struct aj_error err;
	if (request_code(o, &code, &len, rs))
		goto out;
	if (limits_narrow(&svc->cfg.sandbox, json_object_get(o, "limits"), &limits, &err)) {
		respond_error(rs, 400, "bad_limits", "%s", err.message);
		goto out;
	}
	struct key_use *u = admission_use(&svc->adm, rq->key);
	double t0 = now_ms() / 1e3;
	if (service_admit(svc, u, rs))
		goto out;
	struct aj_result res;
	struct run_fate fate;
	queue_new_id(fate.id);
	int rc = service_run_fate(svc, &limits, code, len, NULL, &fate, &res, &err);
	admit_finish(&svc->adm, u);
	if (rc == -ECONNRESET) {
		/* 502: the worker it went to failed, as a gateway's upstream. */
		respond_run_failure(rs, 502, "run_lost", fate.id, true, fate.may_have_started,
				    err.message);
	} else if (rc) {
		respond_run_failure(rs, rc == -EINVAL ? 400 : 503,
				    rc == -EINVAL   ? "bad_limits"
				    : rc == -EAGAIN ? "no_worker"
						    : "queue_unavailable",
				    fate.id, false, false, err.message);
		rs->retry_after = rc == -EINVAL ? 0 : 5;
	} else {
		respond_run(svc, rs, fate.id, &res, t0);
		goto out;
	}
	aj_result_free(&res);
out:
	json_decref(o);
}

static void post_session(struct service *svc, const struct http_request *rq,
			 struct http_response *rs)
{
	static const char *const allowed[] = {"limits", NULL};
	json_t *o = request_body(rq, rs, allowed);
	if (!o)
		return;
	struct aj_config cfg = svc->cfg.sandbox;
	struct aj_error err = {0};
	if (atomic_load(&svc->draining)) {
		respond_error(rs, 503, "shutting_down", "the server is shutting down");
		rs->retry_after = 5;
		goto out;
	}
	if (limits_narrow(&svc->cfg.sandbox, json_object_get(o, "limits"), &cfg.limits, &err)) {
		respond_error(rs, 400, "bad_limits", "%s", err.message);
		goto out;
	}
	if (svc->queue) {
		remote_post_session(svc, rq, rs, &cfg.limits);
		goto out;
	}
	struct hsession *h;
	int rc = sessions_create(&svc->sessions, &cfg, admission_use(&svc->adm, rq->key), &h,
				 &err);
	if (rc == -EDQUOT) {
		respond_error(rs, 429, "session_limit", "%s", err.message);
		rs->retry_after = 5;
	} else if (rc == -EMFILE) {
		respond_error(rs, 503, "session_limit", "%s", err.message);
		rs->retry_after = 5;
	} else if (rc) {
		respond_error(rs, 503, "sandbox_unavailable", "%s", err.message);
	} else {
		const struct aj_session_limits *sl = &cfg.session;
		respond_json(rs, 201,
			     json_pack("{s:s, s:s, s:o, s:{s:f, s:f, s:i, s:i}, s:s}", "id", h->id,
				       "tier", aj_tier_name(cfg.tier), "limits",
				       limits_to_json(&cfg.limits), "session", "idle_sec",
				       sl->idle_sec, "lifetime_sec", sl->lifetime_sec, "cpu_sec",
				       (int)sl->cpu_sec, "transfer_mb", (int)sl->transfer_mb,
				       "workspace", AJ_SESSION_WORKSPACE));
		sessions_put(&svc->sessions, h);
	}
out:
	json_decref(o);
}

static void session_gone(struct http_response *rs, struct hsession *h)
{
	respond_error(rs, 410, "session_closed", "the session is closed, because %s",
		      aj_session_closed_reason(h->s) ? aj_session_closed_reason(h->s)
						     : "it was deleted");
}

static void session_run(struct service *svc, const struct http_request *rq,
			struct http_response *rs, struct hsession *h)
{
	static const char *const allowed[] = {"code", NULL};
	json_t *o = request_body(rq, rs, allowed);
	if (!o)
		return;
	const char *code;
	size_t len;
	if (request_code(o, &code, &len, rs))
		goto out;
	struct key_use *u = admission_use(&svc->adm, rq->key);
	double t0 = now_ms() / 1e3;
	if (service_admit(svc, u, rs))
		goto out;
	struct aj_result res;
	int rc = aj_session_run(h->s, code, len, &res);
	admit_finish(&svc->adm, u);
	if (rc == -ESHUTDOWN) {
		aj_result_free(&res);
		session_gone(rs, h);
		goto out;
	}
	char id[33];
	queue_new_id(id);
	respond_run(svc, rs, id, &res, t0);
out:
	json_decref(o);
}

/* A file operation's error as HTTP: the path's fault is the caller's. */
void respond_file_error(struct http_response *rs, int rc, const char *message)
{
	switch (rc) {
	case -ENOENT:
		respond_error(rs, 404, "not_found", "%s", message);
		break;
	case -EFBIG:
		respond_error(rs, 413, "too_large", "%s", message);
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
		respond_error(rs, 400, "bad_path", "%s", message);
		break;
	case -ENOSPC:
	case -EDQUOT:
		respond_error(rs, 507, "no_space", "%s", message);
		break;
	default:
		respond_error(rs, 500, "session_error", "%s", message);
	}
}

static void file_error(struct http_response *rs, struct hsession *h, int rc,
		       const struct aj_error *err)
{
	if (rc == -ESHUTDOWN)
		session_gone(rs, h);
	else
		respond_file_error(rs, rc, err->message);
}

static void session_files(const struct http_request *rq, struct http_response *rs,
			  struct hsession *h, const char *path)
{
	struct aj_error err = {0};
	int rc;
	if (!strcmp(rq->method, "PUT") && path) {
		if ((rc = aj_session_put(h->s, path, rq->body, rq->body_len, &err)))
			return file_error(rs, h, rc, &err);
		respond_json(rs, 201, json_pack("{s:s, s:I}", "path", path, "bytes",
						(json_int_t)rq->body_len));
	} else if (!strcmp(rq->method, "GET") && path) {
		void *data;
		size_t len;
		if ((rc = aj_session_get(h->s, path, &data, &len, &err)))
			return file_error(rs, h, rc, &err);
		rs->code = 200;
		rs->body = data;
		rs->len = len;
		rs->content_type = "application/octet-stream";
	} else if (!strcmp(rq->method, "GET")) {
		struct aj_file_info *e;
		size_t n;
		const char *dir = rq->query_dir ? rq->query_dir : ".";
		if ((rc = aj_session_list(h->s, dir, &e, &n, &err)))
			return file_error(rs, h, rc, &err);
		respond_json(rs, 200,
			     json_pack("{s:s, s:o}", "dir", dir, "entries", file_list_to_json(e, n)));
	} else {
		respond_error(rs, 405, "method_not_allowed", "%s is not allowed here", rq->method);
		rs->allow = path ? "GET, PUT" : "GET";
	}
}

static void session_route(struct service *svc, const struct http_request *rq,
			  struct http_response *rs)
{
	const char *rest = rq->path + strlen(SESSIONS_PREFIX);
	char id[40];
	size_t n = strcspn(rest, "/");
	if (n == 0 || n >= sizeof id) {
		respond_error(rs, 404, "not_found", "no such session");
		return;
	}
	memcpy(id, rest, n);
	id[n] = '\0';
	const char *tail = rest + n; /* "", "/runs", "/files", "/files/PATH" */
	if (svc->queue)
		return remote_session_route(svc, rq, rs, id, tail);
	if (!*tail && !strcmp(rq->method, "DELETE")) {
		if (sessions_delete(&svc->sessions, id, admission_use(&svc->adm, rq->key)))
			respond_error(rs, 404, "not_found", "no such session");
		else
			respond_json(rs, 204, NULL);
		return;
	}
	bool runs = !strcmp(tail, "/runs");
	bool files = !strcmp(tail, "/files") || !strncmp(tail, "/files/", 7);
	if (!runs && !files && *tail) {
		respond_error(rs, 404, "not_found", "no such route: %.200s", rq->path);
		return;
	}
	if (!*tail || (runs && strcmp(rq->method, "POST"))) {
		respond_error(rs, 405, "method_not_allowed", "%s is not allowed here", rq->method);
		rs->allow = runs ? "POST" : "DELETE";
		return;
	}
	struct hsession *h = sessions_get(&svc->sessions, id, admission_use(&svc->adm, rq->key));
	if (!h) {
		/* Another key's session answers the same: its id tells nothing. */
		respond_error(rs, 404, "not_found", "no such session");
		return;
	}
	if (runs)
		session_run(svc, rq, rs, h);
	else
		session_files(rq, rs, h, tail[6] == '/' && tail[7] ? tail + 7 : NULL);
	sessions_put(&svc->sessions, h);
}

static void get_tiers(struct service *svc, struct http_response *rs)
{
	if (svc->queue) {
		json_t *t = remote_tiers(svc);
		if (t)
			respond_json(rs, 200, t);
		else
			respond_error(rs, 503, "queue_unavailable", "cannot reach Redis at %s",
				      svc->cfg.queue_url);
		return;
	}
	json_t *a = json_array();
	for (int t = 0; a && t < AJ_TIER_COUNT; t++) {
		struct aj_config cfg = svc->cfg.sandbox;
		cfg.tier = (enum aj_tier)t;
		struct aj_error err = {0};
		int rc = aj_check(cfg.tier, &cfg, &err);
		json_array_append_new(a, json_pack("{s:s, s:b, s:s?}", "tier",
						   aj_tier_name(cfg.tier), "available", rc == 0,
						   "reason", rc ? err.message : NULL));
	}
	respond_json(rs, 200,
		     json_pack("{s:s, s:o, s:o}", "serving", aj_tier_name(svc->cfg.sandbox.tier),
			       "limits", limits_to_json(&svc->cfg.sandbox.limits), "tiers", a));
}

static void get_metrics(struct service *svc, struct http_response *rs)
{
	struct metrics_gauges g = {.sessions_open = sessions_open(&svc->sessions),
				   .draining = atomic_load(&svc->draining)};
	admission_counts(&svc->adm, &g.running, &g.waiting);
	g.slots = admission_concurrency(&svc->adm);
	if (svc->queue) {
		unsigned slots;
		fleet_counts(&svc->fleet, &slots, &g.workers);
	}
	rs->body = metrics_render(&svc->metrics, &g);
	if (!rs->body) {
		respond_error(rs, 500, "internal", "out of memory");
		return;
	}
	rs->code = 200;
	rs->len = strlen(rs->body);
	rs->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

static void method_not_allowed(struct http_response *rs, const char *method, const char *allow)
{
	respond_error(rs, 405, "method_not_allowed", "%s is not allowed here", method);
	rs->allow = allow;
}

void api_handle(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	const char *p = rq->path, *m = rq->method;
	if (!strcmp(p, "/v1/health")) {
		if (strcmp(m, "GET"))
			return method_not_allowed(rs, m, "GET");
		bool draining = atomic_load(&svc->draining);
		/* 503 while draining: a load balancer stops sending here. */
		respond_json(rs, draining ? 503 : 200,
			     json_pack("{s:s, s:s, s:s}", "status", draining ? "draining" : "ok",
				       "version", AGENTJAIL_VERSION, "tier",
				       aj_tier_name(svc->cfg.sandbox.tier)));
	} else if (!strcmp(p, "/v1/tiers")) {
		if (strcmp(m, "GET"))
			return method_not_allowed(rs, m, "GET");
		get_tiers(svc, rs);
	} else if (!strcmp(p, "/metrics")) {
		if (strcmp(m, "GET"))
			return method_not_allowed(rs, m, "GET");
		get_metrics(svc, rs);
	} else if (!strcmp(p, "/v1/runs")) {
		if (strcmp(m, "POST"))
			return method_not_allowed(rs, m, "POST");
		post_run(svc, rq, rs);
	} else if (!strcmp(p, "/v1/sessions")) {
		if (strcmp(m, "POST"))
			return method_not_allowed(rs, m, "POST");
		post_session(svc, rq, rs);
	} else if (!strncmp(p, SESSIONS_PREFIX, strlen(SESSIONS_PREFIX))) {
		session_route(svc, rq, rs);
	} else {
		respond_error(rs, 404, "not_found", "no such route: %.200s", p);
	}
}
