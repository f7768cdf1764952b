/* agentjail worker: the sessions it holds (worker.h). A session lives in
 * this process (the library's); Redis knows where it is (its hash names
 * this worker and its owner) and whether it closed, for serve's 410. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "../admit/narrow.h"
#include "../http/wire.h"
#include "../../api/api.h"
#include "../admit/call_body.h"
#include "../admit/proc_call.h"
#include "worker.h"

static struct wsession *find_session(struct worker *w, const char *id)
{
	for (struct wsession *s = w->sessions; s; s = s->next)
		if (id && !strcmp(s->id, id))
			return s;
	return NULL;
}

/* worker_session_open's session, under cfg. */
static json_t *session_open_with(struct worker *w, redisContext *c, json_t *req,
				 const struct aj_config *cfg, struct aj_error *err)
{
	const char *owner = json_string_value(json_object_get(req, "owner"));
	struct wsession *s = calloc(1, sizeof *s);
	if (!s || !owner)
		return free(s), worker_refusal("internal", "out of memory or no owner");
	int rc = aj_session_open(cfg, &s->s, err);
	if (rc) {
		free(s);
		return worker_refusal(rc == -EMFILE ? "session_limit" : "sandbox_unavailable", "%s",
				      err->message);
	}
	snprintf(s->id, sizeof s->id, "%s", aj_session_id(s->s));
	snprintf(s->owner, sizeof s->owner, "%s", owner);
	queue_do(c, "HSET agentjail:session:%s worker %s owner %s", s->id, w->id, owner);
	queue_do(c, "SADD agentjail:key:%s:sessions %s", owner, s->id);
	queue_do(c, "SADD agentjail:worker:%s:sessions %s", w->id, s->id);
	pthread_mutex_lock(&w->lock);
	s->next = w->sessions;
	w->sessions = s;
	pthread_mutex_unlock(&w->lock);
	worker_log(w, "session %s opened for %s", s->id, owner);
	return json_pack("{s:b, s:s, s:s, s:o}", "ok", 1, "id", s->id, "worker", w->id, "limits",
			 limits_to_json(&cfg->limits));
}

json_t *worker_session_open(struct worker *w, redisContext *c, json_t *req)
{
	struct aj_config cfg;
	struct aj_error err = {0};
	const char *why;
	struct run_terms *t = malloc(sizeof *t); /* 32 KiB: not on a reader's stack */
	struct terms_lists l;                     /* what cfg points to until it opens */
	if (!t)
		return worker_refusal("internal", "out of memory");
	if (terms_narrow(&w->cfg, req, t, &why, &err)) {
		json_t *refusal = worker_terms_refusal(why, &err);
		return free(t), refusal;
	}
	/* t's variables are copied by aj_session_open, which keeps its own. */
	terms_apply(&w->cfg, t, &cfg, &l);
	json_t *opened = session_open_with(w, c, req, &cfg, &err);
	free(t);
	return opened;
}

/* Marks a closed session so in Redis: the serve answers 410 with why. */
static void report_closed(struct worker *w, redisContext *c, struct wsession *s,
			  const char *reason)
{
	queue_do(c, "HSET agentjail:session:%s closed %s", s->id, reason);
	queue_do(c, "EXPIRE agentjail:session:%s 3600", s->id);
	queue_do(c, "SREM agentjail:key:%s:sessions %s", s->owner, s->id);
	queue_do(c, "SREM agentjail:worker:%s:sessions %s", w->id, s->id);
	s->closed_reported = true;
}

void worker_sessions_report_closed(struct worker *w, redisContext *c, const char *reason)
{
	pthread_mutex_lock(&w->lock);
	for (struct wsession *s = w->sessions; s; s = s->next) {
		const char *why = reason ? reason : aj_session_closed_reason(s->s);
		if (!s->closed_reported && why)
			report_closed(w, c, s, why);
	}
	pthread_mutex_unlock(&w->lock);
}

static json_t *errno_refusal(int rc, const struct aj_error *err)
{
	return json_pack("{s:b, s:s, s:i, s:s}", "ok", 0, "code", "file_error", "errno", -rc, "error",
			 err->message);
}

/* A call on the session, code or a command, read from the request as
 * serve read its body (call_body.h), against this session's own limits. */
static json_t *session_call_op(struct worker *w, struct wsession *s, json_t *req, bool exec,
			       const struct aj_stream *stream, struct aj_cancel *cancel)
{
	struct call_body b;
	struct aj_result res;
	struct aj_error err = {0};
	int status;
	const char *code;
	if (call_body_parse(req, exec, session_config(s->s), &b, &status, &code, &err))
		return worker_refusal(code, "%s", err.message);
	int rc = call_body_run(s->s, &b, cancel, stream, &res);
	call_body_clear(&b);
	if (rc == -ESHUTDOWN || rc == -EAGAIN) {
		aj_result_free(&res);
		return rc == -EAGAIN ? worker_refusal("sandbox_unavailable",
						      "no thread for the call's timeout")
				     : worker_refusal("closed", "%s",
						      aj_session_closed_reason(s->s) ?: "closed");
	}
	return worker_result(w, &res);
}

static json_t *put_file(struct wsession *s, json_t *req, const char *path)
{
	struct aj_error err = {0};
	json_t *d = json_object_get(req, "data");
	unsigned char *data = NULL;
	size_t len = 0;
	if (!json_is_string(d) ||
	    base64_decode(json_string_value(d), json_string_length(d), &data, &len))
		return worker_refusal("bad_request", "put: the data is not base64");
	int rc = aj_session_put(s->s, path, data ? (void *)data : (void *)"", len, &err);
	free(data);
	return rc ? errno_refusal(rc, &err)
		  : json_pack("{s:b, s:I}", "ok", 1, "bytes", (json_int_t)len);
}

static json_t *get_file(struct wsession *s, const char *path)
{
	struct aj_error err = {0};
	void *data;
	size_t len;
	int rc = aj_session_get(s->s, path, &data, &len, &err);
	if (rc)
		return errno_refusal(rc, &err);
	char *b64 = base64_encode(data, len, NULL);
	free(data);
	json_t *o = json_pack("{s:b, s:s}", "ok", 1, "data", b64 ? b64 : "");
	free(b64);
	return o;
}

static json_t *list_files(struct wsession *s, const char *path)
{
	struct aj_error err = {0};
	struct aj_file_info *e;
	size_t n;
	int rc = aj_session_list(s->s, path ? path : ".", &e, &n, &err);
	if (rc)
		return errno_refusal(rc, &err);
	return json_pack("{s:b, s:o}", "ok", 1, "entries", file_list_to_json(e, n));
}

/* POST /v1/sessions/ID/egress, on the worker that holds the session. */
static json_t *keep_egress(struct wsession *s, json_t *req)
{
	struct aj_error err = {0};
	int rc = egress_session_keep(s->s, req, &err);
	if (rc == -ESHUTDOWN)
		return worker_refusal("closed", "%s", aj_session_closed_reason(s->s) ?: "closed");
	if (rc)
		return worker_refusal("bad_egress", "%s", err.message);
	return json_pack("{s:b}", "ok", 1);
}

json_t *worker_session_op(struct worker *w, json_t *req, const char *op,
			  const struct aj_stream *stream, struct aj_cancel *cancel)
{
	const char *sid = json_string_value(json_object_get(req, "session"));
	pthread_mutex_lock(&w->lock);
	struct wsession *s = find_session(w, sid);
	pthread_mutex_unlock(&w->lock);
	if (!s)
		return worker_refusal("not_found", "no such session on worker %s", w->name);
	const char *closed = aj_session_closed_reason(s->s);
	if (closed)
		return worker_refusal("closed", "%s", closed);
	const char *path = json_string_value(json_object_get(req, "path"));
	bool exec;
	if (!call_body_op(op, &exec))
		return session_call_op(w, s, req, exec, stream, cancel);
	if (proc_call_is(op)) /* answered as the local backend answers it */
		return json_pack("{s:b, s:o}", "ok", 1, "answer", proc_call_run(s->s, req));
	if (!strcmp(op, "put"))
		return put_file(s, req, path);
	if (!strcmp(op, "get"))
		return get_file(s, path);
	if (!strcmp(op, "list"))
		return list_files(s, path);
	if (!strcmp(op, "egress"))
		return keep_egress(s, req);
	return worker_refusal("bad_request", "unknown op '%.40s'", op);
}

json_t *worker_session_close(struct worker *w, redisContext *c, json_t *req)
{
	const char *sid = json_string_value(json_object_get(req, "session"));
	pthread_mutex_lock(&w->lock);
	struct wsession **p = &w->sessions, *s = NULL;
	while (*p && strcmp((*p)->id, sid ? sid : ""))
		p = &(*p)->next;
	if (*p) {
		s = *p;
		*p = s->next;
	}
	pthread_mutex_unlock(&w->lock);
	if (!s)
		return worker_refusal("not_found", "no such session on worker %s", w->name);
	if (!s->closed_reported)
		report_closed(w, c, s, "it was deleted");
	queue_do(c, "DEL agentjail:session:%s", s->id);
	aj_session_close(s->s);
	free(s);
	return json_pack("{s:b}", "ok", 1);
}

void worker_sessions_end(struct worker *w)
{
	while (w->sessions) {
		struct wsession *s = w->sessions;
		w->sessions = s->next;
		aj_session_close(s->s);
		free(s);
	}
}
