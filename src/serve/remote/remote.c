#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/internal.h"
#include "remote.h"
#include "../runs/runs.h"

/* How long Redis may be unreachable while a caller waits before it is
 * told: after that the run's outcome cannot be learnt. */
#define REDIS_GRACE_SEC 10.0

/* Sends the request. 0, or -1 with err. */
static int send_request(redisContext *c, enum aj_tier tier, const char *worker,
			const char *text, struct aj_error *err)
{
	redisReply *r;
	if (worker) {
		char list[128];
		snprintf(list, sizeof list, "agentjail:worker:%s:ops", worker);
		r = queue_cmd(c, err, "LPUSH %s %s", list, text);
	} else {
		char stream[64];
		snprintf(stream, sizeof stream, "agentjail:runs:%s", aj_tier_name(tier));
		r = queue_cmd(c, err, "XADD %s MAXLEN ~ %d * msg %s", stream, QUEUE_STREAM_MAX, text);
	}
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

/* Makes the request unrunnable if no worker has taken it: 1 if that
 * won, 0 if a worker took it first, -1 on a Redis error. */
static int abandon(redisContext *c, const char *id, struct aj_error *err)
{
	redisReply *r = queue_cmd(c, err, "SET agentjail:claim:%s abandoned NX EX 3600", id);
	if (!r)
		return -1;
	int won = r->type == REDIS_REPLY_STATUS;
	freeReplyObject(r);
	return won;
}

/* The worker that took id ("" if none yet) and whether it lives. */
static int who(redisContext *c, const char *id, char *name, size_t n, bool *alive,
	       struct aj_error *err)
{
	redisReply *r = queue_cmd(c, err, "GET agentjail:claim:%s", id);
	if (!r)
		return -1;
	snprintf(name, n, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
	freeReplyObject(r);
	*alive = false;
	if (!*name)
		return 0;
	r = queue_cmd(c, err, "EXISTS agentjail:worker:%s:alive", name);
	if (!r)
		return -1;
	*alive = r->integer == 1;
	freeReplyObject(r);
	return 0;
}

enum remote_failure remote_call(struct queue *q, enum aj_tier tier, const char *worker,
				const char *run_id, json_t *request, double wait_sec, double run_sec,
				json_t **reply, bool *taken, struct aj_error *err)
{
	return remote_call_until(q, tier, worker, run_id, request, wait_sec, run_sec, NULL, reply,
				 taken, err);
}

enum remote_failure remote_call_until(struct queue *q, enum aj_tier tier, const char *worker,
				      const char *run_id, json_t *request, double wait_sec,
				      double run_sec, const atomic_bool *stop, json_t **reply,
				      bool *taken, struct aj_error *err)
{
	*reply = NULL;
	/* Until known otherwise, a lost request may have started: the answer
	 * that says "safe to send again" must be sure of it. */
	*taken = true;
	char id[33], reply_key[64];
	if (run_id)
		snprintf(id, sizeof id, "%s", run_id);
	else
		serve_id_new(id);
	snprintf(reply_key, sizeof reply_key, "agentjail:reply:%s", id);
	json_object_set_new(request, "id", json_string(id));
	json_object_set_new(request, "reply", json_string(reply_key));
	json_object_set_new(request, "wait_ms", json_integer((json_int_t)(wait_sec * 1000)));
	char *text = json_dumps(request, JSON_COMPACT);
	if (!text) {
		error_set(err, -ENOMEM, "queue: out of memory");
		return REMOTE_REDIS;
	}
	enum remote_failure rc = REMOTE_REDIS;
	/* Twice: a pooled connection may be to a Redis that has since
	 * restarted. Should the first have landed after all, the request's
	 * claim (SET NX on its id) still lets only one copy run. */
	redisContext *c = NULL;
	int sent = -1;
	for (int attempt = 0; attempt < 2 && sent; attempt++) {
		c = queue_get(q, 5.0, err);
		if (!c)
			break;
		if ((sent = send_request(c, tier, worker, text, err))) {
			queue_put(q, c, true);
			c = NULL;
		}
	}
	free(text);
	if (sent) {
		queue_put(q, c, true);
		return REMOTE_REDIS;
	}

	double start = now_ms() / 1e3, taken_at = 0, redis_down_since = 0;
	char taker[128] = "";
	for (;;) {
		if (!c) {
			c = queue_get(q, 5.0, err);
			if (!c) {
				if (!redis_down_since)
					redis_down_since = now_ms() / 1e3;
				if (now_ms() / 1e3 - redis_down_since > REDIS_GRACE_SEC) {
					error_set(err, -EIO,
						  "queue: lost Redis at %s while waiting for the answer "
						  "(%s); whether the run happened is unknown",
						  q->url, err->message);
					return REMOTE_UNKNOWN;
				}
				struct timespec ts = {0, 200 * 1000 * 1000};
				nanosleep(&ts, NULL);
				continue;
			}
		}
		redisReply *r = queue_cmd(c, err, "BRPOP %s 1", reply_key);
		if (!r) {
			queue_put(q, c, true);
			c = NULL;
			continue;
		}
		redis_down_since = 0;
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
			json_error_t je;
			*reply = json_loadb(r->element[1]->str, r->element[1]->len, 0, &je);
			freeReplyObject(r);
			queue_put(q, c, false);
			if (!json_is_object(*reply)) {
				json_decref(*reply);
				*reply = NULL;
				error_set(err, -EPROTO, "queue: a worker's answer is not a JSON object");
				return REMOTE_LOST;
			}
			if (json_is_true(json_object_get(*reply, "ok")))
				return REMOTE_OK;
			const char *code = json_string_value(json_object_get(*reply, "code"));
			const char *why = json_string_value(json_object_get(*reply, "error"));
			error_set(err, -EIO, "%s", why ? why : "the worker refused the request");
			if (code && !strcmp(code, "worker_lost")) {
				/* The survivor that buried the dead worker knows
				 * whether that one had claimed it. */
				*taken = !json_is_false(json_object_get(*reply, "taken"));
				json_decref(*reply);
				*reply = NULL;
				return REMOTE_LOST;
			}
			return REMOTE_REFUSED;
		}
		freeReplyObject(r);
		/* No answer this second: who has it, and are they alive? */
		bool alive;
		if (who(c, id, taker, sizeof taker, &alive, err)) {
			queue_put(q, c, true);
			c = NULL;
			continue;
		}
		if (!strcmp(taker, "abandoned")) {
			/* A survivor closed it for a dead worker that had read
			 * it but not claimed it: it never started. */
			error_set(err, -ECONNRESET, REMOTE_NEVER_TAKEN_WORDS);
			*taken = false;
			rc = REMOTE_LOST;
			break;
		}
		if (*taker) {
			if (stop && atomic_load(stop)) {
				error_set(err, -EINTR, "%s runs it; no longer waited for here",
					  taker);
				rc = REMOTE_DETACHED;
				break;
			}
			if (!taken_at)
				taken_at = now_ms() / 1e3;
			if (!alive) {
				error_set(err, -ECONNRESET, REMOTE_LOST_WORDS, taker);
				rc = REMOTE_LOST;
				break;
			}
			if (now_ms() / 1e3 - taken_at > run_sec + 30.0) {
				error_set(err, -ETIMEDOUT,
					  "worker lost: %s gave no answer %g s after its limit", taker,
					  run_sec);
				rc = REMOTE_LOST;
				break;
			}
			continue;
		}
		/* Nobody has it yet. A session's worker that is gone never
		 * will; otherwise the wait is bounded by wait_sec. */
		bool gone = false;
		if (worker) {
			redisReply *a = queue_cmd(c, err, "EXISTS agentjail:worker:%s:alive", worker);
			gone = a && a->integer == 0;
			if (a)
				freeReplyObject(a);
		}
		bool stopping = stop && atomic_load(stop);
		if (gone || stopping || now_ms() / 1e3 - start > wait_sec) {
			int won = abandon(c, id, err);
			if (won < 0) {
				queue_put(q, c, true);
				c = NULL;
				continue;
			}
			if (won) {
				if (gone)
					error_set(err, -ECONNRESET,
						  "worker lost: %s, which holds the session, is gone",
						  worker);
				else if (stopping)
					error_set(err, -ESHUTDOWN,
						  "the server shut down before a worker took the run; "
						  "it never started");
				else
					error_set(err, -ETIMEDOUT,
						  "no %s worker took the run within %g s (is one running "
						  "with --queue %s?)",
						  aj_tier_name(tier), wait_sec, q->url);
				rc = gone ? REMOTE_LOST : REMOTE_NO_WORKER;
				*taken = false;
				break;
			}
		}
	}
	queue_put(q, c, false);
	return rc;
}

/* The slots a live worker advertises (its alive key's value), or -1 when
 * it is not alive. */
static long slots_of(redisContext *c, const char *name, struct aj_error *err)
{
	redisReply *r = queue_cmd(c, err, "GET agentjail:worker:%s:alive", name);
	if (!r)
		return -1;
	long n = -1;
	if (r->type == REDIS_REPLY_STRING) {
		char *end;
		n = strtol(r->str, &end, 10);
		/* A worker that advertises no number (an older one: its value
		 * was its tier) takes one run at a time at least. */
		if (*end || end == r->str || n < 0)
			n = 1;
	}
	freeReplyObject(r);
	return n;
}

json_t *remote_workers(struct queue *q, struct aj_error *err)
{
	redisContext *c = queue_get(q, 5.0, err);
	if (!c)
		return NULL;
	redisReply *r = queue_cmd(c, err, "HGETALL agentjail:workers");
	if (!r) {
		queue_put(q, c, true);
		return NULL;
	}
	json_t *a = json_array();
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		long slots = slots_of(c, r->element[i]->str, err);
		if (slots < 0)
			continue;
		/* NAME@START: its name, and which start of it (worker.h). */
		const char *id = r->element[i]->str, *at = strchr(id, '@');
		json_t *o = json_pack("{s:s%, s:s, s:i}", "name", id, at ? (size_t)(at - id) : strlen(id),
				      "tier", r->element[i + 1]->str, "slots", (int)slots);
		if (o && at)
			json_object_set_new(o, "start", json_string(at + 1));
		json_array_append_new(a, o);
	}
	freeReplyObject(r);
	queue_put(q, c, false);
	return a;
}

int remote_slots(struct queue *q, enum aj_tier tier, unsigned *slots, unsigned *workers,
		 struct aj_error *err)
{
	*slots = *workers = 0;
	redisContext *c = queue_get(q, 2.0, err);
	if (!c)
		return -1;
	redisReply *r = queue_cmd(c, err, "HGETALL agentjail:workers");
	if (!r) {
		queue_put(q, c, true);
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i + 1 < r->elements && !rc; i += 2) {
		if (strcmp(r->element[i + 1]->str, aj_tier_name(tier)))
			continue; /* another tier's stream: not ours to count */
		struct aj_error e = {0};
		long n = slots_of(c, r->element[i]->str, &e);
		if (n < 0 && c->err) {
			*err = e;
			rc = -1;
		} else if (n >= 0) {
			(*workers)++;
			*slots += (unsigned)n;
		}
	}
	freeReplyObject(r);
	queue_put(q, c, rc != 0);
	return rc;
}
