/* The /v1/runs routes over the backend (the runs) and the run store (the
 * records): the same answers whichever backend and store serve uses. */
#include <ctype.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "admit/call_secrets.h"
#include "admit/narrow.h"
#include "runs_api.h"
#include "admit/service.h"
#include "runs/sse.h"
#include "webhook/webhook.h"
#include "admit/webhook_run.h"

#define LIST_DEFAULT 20
#define LIST_MAX 100

/* The plain POST: today's path, not recorded, as fast as it was. */
static void post_plain(struct service *svc, const struct http_request *rq,
		       struct http_response *rs, const char *code, size_t len,
		       const struct run_terms *t)
{
	struct aj_error err = {0};
	struct key_use *u = admission_use(&svc->adm, rq->key);
	double t0 = now_ms() / 1e3;
	if (service_admit(svc, u, rs))
		return;
	struct aj_result res;
	struct run_fate fate;
	serve_id_new(fate.id);
	int rc = service_run_fate(svc, t, code, len, NULL, &fate, &res, &err);
	admit_finish(&svc->adm, u);
	if (rc == -ECONNRESET) {
		/* 502: the worker it went to failed, as a gateway's upstream. */
		respond_run_failure(rs, 502, "run_lost", fate.id, true, fate.may_have_started,
				    err.message);
	} else if (rc) {
		bool bad = rc == -EINVAL || rc == -EPERM || rc == -EILSEQ || rc == -ENOEXEC;
		respond_run_failure(rs, bad ? 400 : 503,
				    rc == -EINVAL    ? "bad_limits"
				    : rc == -EPERM   ? "bad_egress"
				    : rc == -EILSEQ  ? "bad_env"
				    : rc == -ENOEXEC ? "bad_language"
				    : rc == -EAGAIN  ? "no_worker"
						     : "queue_unavailable",
				    fate.id, false, false, err.message);
		rs->retry_after = bad ? 0 : 5;
	} else {
		respond_run(svc, rs, fate.id, &res, t0);
		return;
	}
	aj_result_free(&res);
}

static void post_recorded(struct service *svc, const struct http_request *rq,
			  struct http_response *rs, const struct recorded_request *req)
{
	if (!svc->backend->run_recorded) {
		respond_error(rs, 501, "not_implemented",
			      "streamed and background runs are not yet on the queue");
		return;
	}
	char id[33];
	serve_id_new(id);
	if (svc->backend->run_recorded(svc, rq, rs, id, req))
		return;
	if (req->background) {
		char events[64];
		snprintf(events, sizeof events, RUNS_PATH "/%s/events", id);
		respond_json(rs, 202, json_pack("{s:s, s:s, s:s}", "id", id, "state", "queued",
						"events", events));
		snprintf(rs->location, sizeof rs->location, RUNS_PATH "/%s", id);
		snprintf(rs->run_id, sizeof rs->run_id, "%s", id);
	} else if (sse_answer(rs, &svc->runs, id, rq->key->name, 0, svc->cfg.idle_sec)) {
		/* The run goes on, recorded: its id lets it be read later. */
		respond_error(rs, 500, "internal", "out of memory (the run %s goes on)", id);
	}
}

static void post_run(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	static const char *const allowed[] = {"code",       "limits",  "allow_hosts", "allow_cidrs",
					      "env",        "background", "webhook", "language",
					      "secrets",    NULL};
	json_t *o = request_body(rq, rs, allowed);
	if (!o)
		return;
	struct recorded_request req = {0};
	char *secrets = NULL;
	struct aj_error err;
	const char *why;
	json_t *bg = json_object_get(o, "background");
	json_t *wh = json_object_get(o, "webhook");
	if (bg && !json_is_boolean(bg)) {
		respond_error(rs, 400, "bad_request", "background: expected true or false");
		goto out;
	}
	req.background = json_is_true(bg);
	if (wh && !json_is_string(wh)) {
		respond_error(rs, 400, "bad_webhook", "webhook: expected a URL (a string)");
		goto out;
	}
	if (wh && !req.background) {
		respond_error(rs, 400, "bad_webhook",
			      "webhook: only a background run (\"background\": true) has one");
		goto out;
	}
	if (wh && webhook_check(&svc->cfg, rq->key, json_string_value(wh), &err)) {
		/* No address is serve's to call unless the deployer said. */
		respond_error(rs, 400, "bad_webhook", "%s", err.message);
		goto out;
	}
	req.webhook = wh ? json_string_value(wh) : NULL;
	if (request_code(o, &req.code, &req.len, rs))
		goto out;
	if (terms_narrow(&svc->cfg.sandbox, o, &req.terms, &why, &err)) {
		respond_error(rs, 400, why, "%s", err.message);
		goto out;
	}
	/* The server's, the key's and the body's secrets: in this memory only
	 * (a recorded run copies them for its thread); the record keeps the
	 * code's output and result, never the request. */
	if (call_secrets(svc, rq->key, o, &secrets, rs))
		goto out;
	req.terms.secrets = secrets;
	if (req.background || accepts_sse(rq))
		post_recorded(svc, rq, rs, &req);
	else
		post_plain(svc, rq, rs, req.code, req.len, &req.terms);
out:
	call_secrets_free(secrets);
	call_secrets_forget(o);
	json_decref(o);
}

/* A run id as serve makes them: hex digits, at most 32. */
static bool run_id_ok(const char *s, size_t n)
{
	if (!n || n > 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

static void no_such_run(struct http_response *rs)
{
	/* Missing, expired, or another key's: the same words for all three. */
	respond_error(rs, 404, "no_such_run", "no such run");
}

/* An event number: 0 with *n, or -1 with the 400 naming what gave it. */
static int event_number(const char *what, const char *s, uint64_t *n, struct http_response *rs)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || !isdigit((unsigned char)*s)) {
		respond_error(rs, 400, "bad_request",
			      "%s: expected an event number (0 or more), got '%.40s'", what, s);
		return -1;
	}
	*n = v;
	return 0;
}

/* Whether run id is there for this key, and done: the store's events
 * past the last, which costs no copy of the result (info would parse it).
 * *past: after (> 0) is beyond the last event of a done run (read from
 * after - 1, nothing is there: not even event number after). */
static int run_probe(struct service *svc, const struct http_request *rq, const char *id,
		     uint64_t after, bool *done, bool *past)
{
	struct run_event *ev;
	size_t n;
	int rc = svc->runs.ops->events(&svc->runs, id, rq->key->name,
				       after ? after - 1 : UINT64_MAX, 0, &ev, &n, done);
	if (!rc)
		run_events_free(ev, n);
	*past = !rc && after && *done && !n;
	return rc;
}

static void get_info(struct service *svc, const struct http_request *rq,
		     struct http_response *rs, const char *id)
{
	struct run_info info;
	int rc = svc->runs.ops->info(&svc->runs, id, rq->key->name, &info);
	if (rc == -ENOENT)
		return no_such_run(rs);
	if (rc)
		return respond_error(rs, 503, "runs_unavailable", "the run store does not answer");
	respond_json(rs, 200, run_info_json(&info));
	run_info_clear(&info);
}

/* JSON, for a client that polls: what is there now, without waiting. */
static void events_json(struct service *svc, const struct http_request *rq,
			struct http_response *rs, const char *id, uint64_t after)
{
	struct run_event *ev;
	size_t n;
	bool done;
	int rc = svc->runs.ops->events(&svc->runs, id, rq->key->name, after, 0, &ev, &n, &done);
	if (rc == -ENOENT)
		return no_such_run(rs);
	if (rc)
		return respond_error(rs, 503, "runs_unavailable", "the run store does not answer");
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:I, s:s, s:o?}", "id", (json_int_t)ev[i].id,
						   "event", run_event_name(ev[i].kind), "data",
						   run_event_data(&ev[i])));
	run_events_free(ev, n);
	respond_json(rs, 200, json_pack("{s:o?, s:b}", "events", a, "done", done));
}

static void get_events(struct service *svc, const struct http_request *rq,
		       struct http_response *rs, const char *id)
{
	uint64_t after = 0;
	if (rq->last_event_id) {
		if (event_number("Last-Event-ID", rq->last_event_id, &after, rs))
			return;
	} else if (rq->query_after && event_number("after", rq->query_after, &after, rs)) {
		return;
	}
	/* Known before the stream starts: a missing run is a 404, not an
	 * event stream that ends at once. */
	bool done, past;
	int rc = run_probe(svc, rq, id, after, &done, &past);
	if (rc == -ENOENT)
		return no_such_run(rs);
	if (rc)
		return respond_error(rs, 503, "runs_unavailable", "the run store does not answer");
	/* An id the run never gave: a stream from there would end with no
	 * result, and the client would take that for the whole run. */
	if (past)
		return respond_error(rs, 400, "bad_request",
				     "%s: %llu is past the last event of run %s, which has ended",
				     rq->last_event_id ? "Last-Event-ID" : "after",
				     (unsigned long long)after, id);
	bool json = rq->accept && strcasestr(rq->accept, "application/json") && !accepts_sse(rq);
	if (json)
		return events_json(svc, rq, rs, id, after);
	if (sse_answer(rs, &svc->runs, id, rq->key->name, after, svc->cfg.idle_sec))
		respond_error(rs, 500, "internal", "out of memory");
}

static void cancel_run(struct service *svc, const struct http_request *rq,
		       struct http_response *rs, const char *id)
{
	struct run_store *st = &svc->runs;
	struct run_info info = {0};
	bool done, past;
	int rc = run_probe(svc, rq, id, 0, &done, &past);
	/* The state is read before the cancel, not after: a cancel takes
	 * effect at once (a local run can end before the next line), and the
	 * answer is the state the run was in when it was asked, so 202 never
	 * says "done". A run not done has no result to read: info is cheap. */
	if (!rc && !done && !(rc = st->ops->info(st, id, rq->key->name, &info)) &&
	    info.state == RUN_DONE)
		done = true; /* it ended meanwhile: left as it is */
	if (!rc && !done)
		rc = st->ops->cancel(st, id, rq->key->name);
	if (rc == -ENOENT)
		return no_such_run(rs);
	if (rc)
		return respond_error(rs, 503, "runs_unavailable", "the run store does not answer");
	/* Asked: 202, the run ends cancelled soon; one already done is left
	 * as it is, 200. */
	respond_json(rs, done ? 200 : 202,
		     json_pack("{s:s, s:s}", "id", id, "state",
			       run_state_name(done ? RUN_DONE : info.state)));
	run_info_clear(&info);
}

static void list_runs(struct service *svc, const struct http_request *rq,
		      struct http_response *rs)
{
	long limit = LIST_DEFAULT;
	if (rq->query_limit) {
		char *end;
		limit = strtol(rq->query_limit, &end, 10);
		if (!*rq->query_limit || *end || limit < 1 || limit > LIST_MAX)
			return respond_error(rs, 400, "bad_request",
					     "limit: expected 1 to %d, got '%.40s'", LIST_MAX,
					     rq->query_limit);
	}
	const char *before = rq->query_before;
	if (before && !run_id_ok(before, strlen(before)))
		return respond_error(rs, 400, "bad_request", "before: expected a run id, got '%.40s'",
				     before);
	struct aj_error err = {0};
	/* One more than asked: whether a next page exists. */
	json_t *a = svc->runs.ops->list(&svc->runs, rq->key->name, before, (unsigned)limit + 1,
					&err);
	if (!a)
		return respond_error(rs, 503, "runs_unavailable", "%s", err.message);
	json_t *next = json_null();
	if (json_array_size(a) > (size_t)limit) {
		json_array_remove(a, (size_t)limit);
		next = json_incref(json_object_get(json_array_get(a, (size_t)limit - 1), "id"));
	}
	respond_json(rs, 200, json_pack("{s:o, s:o}", "runs", a, "next", next));
}

void runs_api_handle(struct service *svc, const struct http_request *rq,
		     struct http_response *rs)
{
	const char *m = rq->method;
	const char *p = rq->path + strlen(RUNS_PATH);
	if (!*p) {
		if (!strcmp(m, "POST"))
			return post_run(svc, rq, rs);
		if (!strcmp(m, "GET"))
			return list_runs(svc, rq, rs);
		return respond_method(rs, m, "GET, POST");
	}
	if (*p != '/')
		return respond_error(rs, 404, "not_found", "no such route: %.200s", rq->path);
	p++;
	const char *slash = strchr(p, '/');
	size_t n = slash ? (size_t)(slash - p) : strlen(p);
	bool events = slash && !strcmp(slash, "/events");
	if (slash && !events)
		return respond_error(rs, 404, "not_found", "no such route: %.200s", rq->path);
	if (!run_id_ok(p, n))
		return no_such_run(rs);
	char id[33];
	memcpy(id, p, n);
	id[n] = '\0';
	if (events) {
		if (strcmp(m, "GET"))
			return respond_method(rs, m, "GET");
		return get_events(svc, rq, rs, id);
	}
	if (!strcmp(m, "GET"))
		return get_info(svc, rq, rs, id);
	if (!strcmp(m, "DELETE"))
		return cancel_run(svc, rq, rs, id);
	respond_method(rs, m, "GET, DELETE");
}
