/* agentjail worker's readers (worker.h): runs and session opens from the
 * tier's stream (one consumer group: each entry goes to one worker),
 * calls for this worker's sessions from its own ops list. A request runs
 * only once its id is claimed in Redis, and is answered on its reply list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../admit/narrow.h"
#include "../admit/runs_begin.h"
#include "worker.h"

/* Takes request id for this worker: false if its caller gave up on it (or
 * another took it), and then it must not run. */
static bool claim(const struct worker *w, redisContext *c, json_t *request)
{
	const char *id = json_string_value(json_object_get(request, "id"));
	if (!id)
		return false;
	struct aj_error err;
	redisReply *r = queue_cmd(c, &err, "SET agentjail:claim:%s %s NX EX 3600", id, w->id);
	bool won = r && r->type == REDIS_REPLY_STATUS;
	if (r)
		freeReplyObject(r);
	return won;
}

static json_t *run(struct worker *w, json_t *req, const struct worker_record *rec)
{
	struct run_terms *t = malloc(sizeof *t); /* 32 KiB of variables: not on a reader's stack */
	struct aj_error err;
	const char *why;
	if (!t)
		return worker_refusal("internal", "out of memory");
	/* serve's terms narrowed again against this worker's own config: a
	 * worker never runs with a limit, rule or variable its deployer
	 * would refuse. */
	if (terms_narrow(&w->cfg, req, t, &why, &err)) {
		free(t);
		return worker_terms_refusal(why, &err);
	}
	json_t *code = json_object_get(req, "code");
	struct aj_result res;
	local_run_streaming(&w->local, t, json_string_value(code) ?: "",
			    json_string_length(code), worker_record_cancel(rec),
			    worker_record_stream(rec), &res);
	enum aj_language lang = t->lang;
	free(t);
	/* The run's id, the one its caller's answer carries: an operator can
	 * find the run here from what the client holds. */
	worker_log(w, "run: %s, %s, %.1f ms, id %s", aj_language_name(lang),
		   aj_status_name(res.status), res.wall_ms,
		   json_string_value(json_object_get(req, "id")) ?: "?");
	return worker_result(w, &res);
}

static json_t *handle(struct worker *w, redisContext *c, json_t *req,
		      const struct worker_record *rec)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	if (!op)
		return worker_refusal("bad_request", "no op");
	/* run_language: a run in the request's "language" (queue_run_request);
	 * run's own request has none, and terms_narrow reads it as Python. */
	if (!strcmp(op, "run") || !strcmp(op, "run_language"))
		return run(w, req, rec);
	if (!strcmp(op, "session_open"))
		return worker_session_open(w, c, req);
	if (!strcmp(op, "close"))
		return worker_session_close(w, c, req);
	/* The record's stream and cancel, taken here: the sessions' file
	 * knows no record. */
	return worker_session_op(w, req, op, worker_record_stream(rec), worker_record_cancel(rec));
}

/* A claimed request: run (recorded when it asks), then answered. */
static void serve_request(struct worker *w, redisContext *c, json_t *req)
{
	struct worker_record rec;
	json_t *answer;
	if (worker_record_begin(w, req, &rec)) {
		answer = worker_refusal("run_ended",
					"the run's record ended or expired before it started");
	} else if (worker_record_cancelled(&rec)) {
		struct aj_result res;
		runs_cancelled_result(&res);
		answer = worker_result(w, &res);
	} else {
		answer = handle(w, c, req, &rec);
	}
	worker_record_end(&rec, answer);
	worker_answer(w, c, req, answer);
}

/* Whether a stream entry is older than its caller waits (by Redis's own
 * clock, which made its id): its caller has given up or soon will, and a
 * run nobody waits for must not start. */
static bool stale(redisContext *c, const char *entry_id, json_t *req)
{
	redisReply *t = redisCommand(c, "TIME");
	bool old = false;
	if (t && t->type == REDIS_REPLY_ARRAY && t->elements == 2) {
		long long now_ms = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
		long long born_ms = atoll(entry_id);
		old = now_ms - born_ms > json_integer_value(json_object_get(req, "wait_ms")) + 60000;
	}
	if (t)
		freeReplyObject(t);
	return old;
}

/* One request (entry_id: the stream entry it came in; NULL: the ops list). */
static void take(struct worker *w, redisContext *c, const char *text, size_t len,
		 const char *entry_id)
{
	json_t *req = json_loadb(text, len, 0, NULL);
	if (!json_is_object(req)) {
		worker_log(w, "dropped a request that is not a JSON object");
		json_decref(req);
		return;
	}
	if (entry_id && stale(c, entry_id, req)) {
		worker_log(w, "dropped stream entry %s: older than its caller waits", entry_id);
		json_decref(req);
		return;
	}
	if (claim(w, c, req))
		serve_request(w, c, req);
	json_decref(req);
}

/* A reader: read is one blocking Redis command (1 s at most, so that a
 * stopping worker is noticed), got takes its reply. */
struct reader {
	redisReply *(*read)(struct worker *w, redisContext *c);
	void (*got)(struct worker *w, redisContext *c, redisReply *r);
	bool logs; /* says when Redis fails (one reader of a pair does) */
};

/* Until the worker stops: reads on a connection of its own, made again
 * when Redis fails. */
static void read_loop(struct worker *w, const struct reader *rd)
{
	redisContext *c = NULL;
	struct aj_error err = {0};
	while (!atomic_load(&w->stopping)) {
		if (!c && !(c = queue_get(&w->q, 5.0, &err))) {
			if (rd->logs)
				worker_log(w, "%s; retrying", err.message);
			worker_pause_ms(1000);
			continue;
		}
		redisReply *r = rd->read(w, c);
		if (!r) {
			if (rd->logs)
				worker_log(w, "Redis: %s; reconnecting", c->errstr);
			queue_put(&w->q, c, true);
			c = NULL;
			worker_pause_ms(500);
			continue;
		}
		rd->got(w, c, r);
		freeReplyObject(r);
	}
	queue_put(&w->q, c, false);
}

static redisReply *read_stream(struct worker *w, redisContext *c)
{
	return redisCommand(c, "XREADGROUP GROUP %s %s COUNT 1 BLOCK 1000 STREAMS %s >",
			    QUEUE_GROUP, w->id, w->stream);
}

static void got_stream(struct worker *w, redisContext *c, redisReply *r)
{
	if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOGROUP")) {
		/* A Redis that restarted empty: the group is made again, from
		 * the stream's start, so a run added before it is not skipped
		 * (stale ones are refused in take). */
		queue_do(c, "XGROUP CREATE %s %s 0 MKSTREAM", w->stream, QUEUE_GROUP);
		return;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 1)
		return;
	redisReply *entries = r->element[0]->element[1];
	for (size_t i = 0; i < entries->elements; i++) {
		redisReply *e = entries->element[i];
		const char *eid = e->element[0]->str;
		redisReply *fields = e->element[1];
		for (size_t f = 0; f + 1 < fields->elements; f += 2)
			if (!strcmp(fields->element[f]->str, "msg"))
				take(w, c, fields->element[f + 1]->str, fields->element[f + 1]->len,
				     eid);
		queue_do(c, "XACK %s %s %s", w->stream, QUEUE_GROUP, eid);
		queue_do(c, "XDEL %s %s", w->stream, eid);
	}
}

static redisReply *read_ops(struct worker *w, redisContext *c)
{
	return redisCommand(c, "BRPOP %s 1", w->ops);
}

static void got_ops(struct worker *w, redisContext *c, redisReply *r)
{
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2)
		take(w, c, r->element[1]->str, r->element[1]->len, NULL);
}

void *worker_stream_loop(void *arg)
{
	static const struct reader stream = {read_stream, got_stream, true};
	read_loop(arg, &stream);
	return NULL;
}

void *worker_ops_loop(void *arg)
{
	static const struct reader ops = {read_ops, got_ops, false};
	read_loop(arg, &ops);
	return NULL;
}
