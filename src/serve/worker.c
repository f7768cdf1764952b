/* agentjail worker: takes runs and session calls from Redis (queue.h) and
 * runs them here, under this machine's tier and this deployer's limits.
 *
 * Threads: `concurrency` readers of the tier's stream (one run each at a
 * time), as many for the calls of the sessions this worker holds, and one
 * that keeps the worker's heartbeat, reports sessions the library closed,
 * and closes what dead workers left behind: their taken runs are answered
 * "worker lost" and never run again; their sessions are marked closed.
 *
 * SIGTERM: no new request is taken; runs in progress finish and are
 * answered; sessions are closed; then the worker leaves. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "../core/internal.h"
#include "keys.h"
#include "local.h"
#include "options.h"
#include "narrow.h"
#include "queue.h"
#include "wire.h"

int cmd_worker(int argc, char **argv);

#define MAX_THREADS 256

struct wsession {
	char id[40];
	char owner[KEY_NAME_MAX + 1];
	struct aj_session *s;
	bool closed_reported;
	struct wsession *next;
};

static struct worker {
	struct aj_config cfg;
	struct queue q;
	struct local local;
	char name[128];
	char stream[64];
	char ops[160];
	unsigned concurrency;
	atomic_bool stopping;     /* take nothing new */
	atomic_bool keeper_stop;  /* the runs are over: the heartbeat may end */
	pthread_mutex_t lock; /* sessions */
	struct wsession *sessions;
} w;

static const char usage[] =
	"usage: agentjail worker --queue redis://HOST[:PORT][/DB] [options]\n"
	"\n"
	"Takes runs from the queue agentjail serve --queue puts them on, and runs\n"
	"them here in the given tier, under this worker's limits (a run asking\n"
	"for more is refused). Any number of workers, on any machines.\n"
	"\n"
	"  --queue URL        the Redis (required)\n"
	"  --name NAME        this worker's name (default: HOSTNAME-PID); unique\n"
	"  --concurrency N    runs at once (default: the CPUs), advertised as this\n"
	"                     worker's slots: serve admits up to the live workers' sum\n"
	SERVICE_OPTIONS_HELP SESSION_OPTIONS_HELP
		LIMIT_OPTIONS_HELP ONE_TIER_OPTIONS_HELP;

static void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_msg(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	/* One line at a time: runs log from several threads, and stderr is
	 * unbuffered, so without the lock the three writes of two lines could
	 * interleave (a log reader counting "run:" lines missed one). */
	flockfile(stderr);
	fprintf(stderr, "agentjail worker %s: ", w.name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	va_end(ap);
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---- answers ---- */

static void answer(redisContext *c, json_t *request, json_t *body)
{
	const char *reply = json_string_value(json_object_get(request, "reply"));
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!reply || !text) {
		free(text);
		return;
	}
	struct aj_error err;
	redisReply *r = queue_cmd(c, &err, "LPUSH %s %s", reply, text);
	if (r)
		freeReplyObject(r);
	else
		log_msg("cannot answer: %s", err.message);
	/* Unread answers (a caller that gave up) do not stay forever. */
	r = queue_cmd(c, &err, "EXPIRE %s 300", reply);
	if (r)
		freeReplyObject(r);
	free(text);
}

static json_t *refusal(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static json_t *refusal(const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "error", msg);
}

static json_t *result_answer(struct aj_result *res)
{
	json_t *o = json_pack("{s:b, s:o}", "ok", 1, "result", result_to_json_object(res, w.cfg.tier));
	aj_result_free(res);
	return o;
}

/* Takes request id for this worker: false if its caller gave up on it (or
 * another took it), and then it must not run. */
static bool claim(redisContext *c, json_t *request)
{
	const char *id = json_string_value(json_object_get(request, "id"));
	if (!id)
		return false;
	struct aj_error err;
	redisReply *r = queue_cmd(c, &err, "SET agentjail:claim:%s %s NX EX 3600", id, w.name);
	bool won = r && r->type == REDIS_REPLY_STATUS;
	if (r)
		freeReplyObject(r);
	return won;
}

/* ---- sessions ---- */

static struct wsession *find_session(const char *id)
{
	for (struct wsession *s = w.sessions; s; s = s->next)
		if (id && !strcmp(s->id, id))
			return s;
	return NULL;
}

static json_t *open_session(redisContext *c, json_t *req)
{
	struct aj_config cfg = w.cfg;
	struct aj_error err = {0};
	if (limits_narrow(&w.cfg, json_object_get(req, "limits"), &cfg.limits, &err))
		return refusal("bad_limits", "this worker's limits are narrower: %s", err.message);
	const char *owner = json_string_value(json_object_get(req, "owner"));
	struct wsession *s = calloc(1, sizeof *s);
	if (!s || !owner)
		return free(s), refusal("internal", "out of memory or no owner");
	int rc = aj_session_open(&cfg, &s->s, &err);
	if (rc) {
		free(s);
		return refusal(rc == -EMFILE ? "session_limit" : "sandbox_unavailable", "%s",
			       err.message);
	}
	snprintf(s->id, sizeof s->id, "%s", aj_session_id(s->s));
	snprintf(s->owner, sizeof s->owner, "%s", owner);
	redisReply *r = queue_cmd(c, &err, "HSET agentjail:session:%s worker %s owner %s", s->id,
				  w.name, owner);
	if (r)
		freeReplyObject(r);
	if ((r = queue_cmd(c, &err, "SADD agentjail:key:%s:sessions %s", owner, s->id)))
		freeReplyObject(r);
	if ((r = queue_cmd(c, &err, "SADD agentjail:worker:%s:sessions %s", w.name, s->id)))
		freeReplyObject(r);
	pthread_mutex_lock(&w.lock);
	s->next = w.sessions;
	w.sessions = s;
	pthread_mutex_unlock(&w.lock);
	log_msg("session %s opened for %s", s->id, owner);
	return json_pack("{s:b, s:s, s:s, s:o}", "ok", 1, "id", s->id, "worker", w.name, "limits",
			 limits_to_json(&cfg.limits));
}

/* Marks a closed session so in Redis: the serve answers 410 with why. */
static void report_closed(redisContext *c, struct wsession *s, const char *reason)
{
	struct aj_error err;
	redisReply *r = queue_cmd(c, &err, "HSET agentjail:session:%s closed %s", s->id, reason);
	if (r)
		freeReplyObject(r);
	if ((r = queue_cmd(c, &err, "EXPIRE agentjail:session:%s 3600", s->id)))
		freeReplyObject(r);
	if ((r = queue_cmd(c, &err, "SREM agentjail:key:%s:sessions %s", s->owner, s->id)))
		freeReplyObject(r);
	if ((r = queue_cmd(c, &err, "SREM agentjail:worker:%s:sessions %s", w.name, s->id)))
		freeReplyObject(r);
	s->closed_reported = true;
}

static json_t *errno_refusal(int rc, const struct aj_error *err)
{
	return json_pack("{s:b, s:s, s:i, s:s}", "ok", 0, "code", "file_error", "errno", -rc, "error",
			 err->message);
}

static json_t *session_op(json_t *req, const char *op)
{
	const char *sid = json_string_value(json_object_get(req, "session"));
	pthread_mutex_lock(&w.lock);
	struct wsession *s = find_session(sid);
	pthread_mutex_unlock(&w.lock);
	if (!s)
		return refusal("not_found", "no such session on worker %s", w.name);
	const char *closed = aj_session_closed_reason(s->s);
	if (closed)
		return refusal("closed", "%s", closed);
	struct aj_error err = {0};
	int rc;
	if (!strcmp(op, "session_run")) {
		json_t *code = json_object_get(req, "code");
		struct aj_result res;
		rc = aj_session_run(s->s, json_string_value(code) ?: "", json_string_length(code), &res);
		if (rc == -ESHUTDOWN) {
			aj_result_free(&res);
			return refusal("closed", "%s", aj_session_closed_reason(s->s) ?: "closed");
		}
		return result_answer(&res);
	}
	const char *path = json_string_value(json_object_get(req, "path"));
	if (!strcmp(op, "put")) {
		json_t *d = json_object_get(req, "data");
		unsigned char *data = NULL;
		size_t len = 0;
		if (!json_is_string(d) ||
		    base64_decode(json_string_value(d), json_string_length(d), &data, &len))
			return refusal("bad_request", "put: the data is not base64");
		rc = aj_session_put(s->s, path, data ? (void *)data : (void *)"", len, &err);
		free(data);
		return rc ? errno_refusal(rc, &err)
			  : json_pack("{s:b, s:I}", "ok", 1, "bytes", (json_int_t)len);
	}
	if (!strcmp(op, "get")) {
		void *data;
		size_t len;
		if ((rc = aj_session_get(s->s, path, &data, &len, &err)))
			return errno_refusal(rc, &err);
		char *b64 = base64_encode(data, len, NULL);
		free(data);
		json_t *o = json_pack("{s:b, s:s}", "ok", 1, "data", b64 ? b64 : "");
		free(b64);
		return o;
	}
	if (!strcmp(op, "list")) {
		struct aj_file_info *e;
		size_t n;
		if ((rc = aj_session_list(s->s, path ? path : ".", &e, &n, &err)))
			return errno_refusal(rc, &err);
		return json_pack("{s:b, s:o}", "ok", 1, "entries", file_list_to_json(e, n));
	}
	return refusal("bad_request", "unknown op '%.40s'", op);
}

static json_t *close_session(redisContext *c, json_t *req)
{
	const char *sid = json_string_value(json_object_get(req, "session"));
	pthread_mutex_lock(&w.lock);
	struct wsession **p = &w.sessions, *s = NULL;
	while (*p && strcmp((*p)->id, sid ? sid : ""))
		p = &(*p)->next;
	if (*p) {
		s = *p;
		*p = s->next;
	}
	pthread_mutex_unlock(&w.lock);
	if (!s)
		return refusal("not_found", "no such session on worker %s", w.name);
	struct aj_error err;
	if (!s->closed_reported)
		report_closed(c, s, "it was deleted");
	redisReply *r = queue_cmd(c, &err, "DEL agentjail:session:%s", s->id);
	if (r)
		freeReplyObject(r);
	aj_session_close(s->s);
	free(s);
	return json_pack("{s:b}", "ok", 1);
}

/* ---- the loops ---- */

static json_t *handle(redisContext *c, json_t *req)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	if (!op)
		return refusal("bad_request", "no op");
	if (!strcmp(op, "run")) {
		struct aj_limits limits;
		struct aj_error err;
		if (limits_narrow(&w.cfg, json_object_get(req, "limits"), &limits, &err))
			return refusal("bad_limits", "this worker's limits are narrower: %s",
				       err.message);
		json_t *code = json_object_get(req, "code");
		struct aj_result res;
		local_run(&w.local, &limits, json_string_value(code) ?: "", json_string_length(code),
			  NULL, &res);
		/* The run's id, the one its caller's answer carries: an operator
		 * can find the run here from what the client holds. */
		log_msg("run: %s, %.1f ms, id %s", aj_status_name(res.status), res.wall_ms,
			json_string_value(json_object_get(req, "id")) ?: "?");
		return result_answer(&res);
	}
	if (!strcmp(op, "session_open"))
		return open_session(c, req);
	if (!strcmp(op, "close"))
		return close_session(c, req);
	return session_op(req, op);
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

static void take(redisContext *c, const char *text, size_t len, const char *entry_id)
{
	json_t *req = json_loadb(text, len, 0, NULL);
	if (!json_is_object(req)) {
		log_msg("dropped a request that is not a JSON object");
		json_decref(req);
		return;
	}
	if (entry_id && stale(c, entry_id, req)) {
		log_msg("dropped stream entry %s: older than its caller waits", entry_id);
		json_decref(req);
		return;
	}
	if (claim(c, req))
		answer(c, req, handle(c, req));
	json_decref(req);
}

static void *stream_loop(void *arg)
{
	(void)arg;
	redisContext *c = NULL;
	struct aj_error err = {0};
	while (!atomic_load(&w.stopping)) {
		if (!c && !(c = queue_get(&w.q, 5.0, &err))) {
			log_msg("%s; retrying", err.message);
			pause_ms(1000);
			continue;
		}
		redisReply *r = redisCommand(c, "XREADGROUP GROUP %s %s COUNT 1 BLOCK 1000 STREAMS %s >",
					     QUEUE_GROUP, w.name, w.stream);
		if (!r) {
			log_msg("Redis: %s; reconnecting", c->errstr);
			queue_put(&w.q, c, true);
			c = NULL;
			pause_ms(500);
			continue;
		}
		if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOGROUP")) {
			/* A Redis that restarted empty: the group is made again,
			 * from the stream's start, so a run added before it is
			 * not skipped (stale ones are refused in take). */
			redisReply *g = redisCommand(c, "XGROUP CREATE %s %s 0 MKSTREAM", w.stream,
						     QUEUE_GROUP);
			if (g)
				freeReplyObject(g);
		} else if (r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
			redisReply *entries = r->element[0]->element[1];
			for (size_t i = 0; i < entries->elements; i++) {
				redisReply *e = entries->element[i];
				const char *eid = e->element[0]->str;
				redisReply *fields = e->element[1];
				for (size_t f = 0; f + 1 < fields->elements; f += 2)
					if (!strcmp(fields->element[f]->str, "msg"))
						take(c, fields->element[f + 1]->str,
						     fields->element[f + 1]->len, eid);
				redisReply *a = redisCommand(c, "XACK %s %s %s", w.stream, QUEUE_GROUP, eid);
				if (a)
					freeReplyObject(a);
				if ((a = redisCommand(c, "XDEL %s %s", w.stream, eid)))
					freeReplyObject(a);
			}
		}
		freeReplyObject(r);
	}
	queue_put(&w.q, c, false);
	return NULL;
}

static void *ops_loop(void *arg)
{
	(void)arg;
	redisContext *c = NULL;
	struct aj_error err = {0};
	while (!atomic_load(&w.stopping)) {
		if (!c && !(c = queue_get(&w.q, 5.0, &err))) {
			pause_ms(1000);
			continue;
		}
		redisReply *r = redisCommand(c, "BRPOP %s 1", w.ops);
		if (!r) {
			queue_put(&w.q, c, true);
			c = NULL;
			pause_ms(500);
			continue;
		}
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 2)
			take(c, r->element[1]->str, r->element[1]->len, NULL);
		freeReplyObject(r);
	}
	queue_put(&w.q, c, false);
	return NULL;
}

/* What a dead worker left: runs it took are answered "worker lost" (never
 * run again), its sessions marked closed, its name forgotten. */
static void bury(redisContext *c, const char *dead, const char *tier)
{
	struct aj_error err;
	char stream[64];
	snprintf(stream, sizeof stream, "agentjail:runs:%s", tier);
	redisReply *p = queue_cmd(c, &err, "XPENDING %s %s - + 1000 %s", stream, QUEUE_GROUP, dead);
	for (size_t i = 0; p && i < p->elements; i++) {
		const char *eid = p->element[i]->element[0]->str;
		redisReply *cl = queue_cmd(c, &err, "XCLAIM %s %s %s 0 %s", stream, QUEUE_GROUP, w.name,
					   eid);
		for (size_t k = 0; cl && k < cl->elements; k++) {
			redisReply *e = cl->element[k];
			if (e->type != REDIS_REPLY_ARRAY || e->elements < 2)
				continue;
			redisReply *f = e->element[1];
			for (size_t j = 0; j + 1 < f->elements; j += 2) {
				if (strcmp(f->element[j]->str, "msg"))
					continue;
				json_t *req = json_loadb(f->element[j + 1]->str,
							 f->element[j + 1]->len, 0, NULL);
				const char *id = json_string_value(json_object_get(req, "id"));
				/* Not taken yet: make sure no one ever takes it. */
				redisReply *s = id ? queue_cmd(c, &err,
							       "SET agentjail:claim:%s abandoned NX EX 3600",
							       id)
						   : NULL;
				/* Won: the dead worker had read it but never claimed
				 * it, so it never started and its caller may send it
				 * again; lost (or unknown): it may have started. */
				bool never_taken = s && s->type == REDIS_REPLY_STATUS;
				if (s)
					freeReplyObject(s);
				json_t *lost = refusal("worker_lost",
						       "worker lost: %s stopped while it held the run; it "
						       "is not run again (agent code is not idempotent)",
						       dead);
				json_object_set_new(lost, "taken", json_boolean(!never_taken));
				answer(c, req, lost);
				json_decref(req);
			}
		}
		if (cl)
			freeReplyObject(cl);
		redisReply *a = queue_cmd(c, &err, "XACK %s %s %s", stream, QUEUE_GROUP, eid);
		if (a)
			freeReplyObject(a);
		if ((a = queue_cmd(c, &err, "XDEL %s %s", stream, eid)))
			freeReplyObject(a);
		log_msg("closed run entry %s of lost worker %s", eid, dead);
	}
	if (p)
		freeReplyObject(p);
	redisReply *s = queue_cmd(c, &err, "SMEMBERS agentjail:worker:%s:sessions", dead);
	for (size_t i = 0; s && i < s->elements; i++) {
		const char *sid = s->element[i]->str;
		redisReply *o = queue_cmd(c, &err, "HGET agentjail:session:%s owner", sid);
		if (o && o->type == REDIS_REPLY_STRING) {
			redisReply *x = queue_cmd(c, &err, "SREM agentjail:key:%s:sessions %s", o->str, sid);
			if (x)
				freeReplyObject(x);
		}
		if (o)
			freeReplyObject(o);
		redisReply *x = queue_cmd(c, &err,
					  "HSET agentjail:session:%s closed %s", sid,
					  "its worker was lost; its state is gone");
		if (x)
			freeReplyObject(x);
		if ((x = queue_cmd(c, &err, "EXPIRE agentjail:session:%s 3600", sid)))
			freeReplyObject(x);
	}
	if (s)
		freeReplyObject(s);
	redisReply *x = queue_cmd(c, &err, "DEL agentjail:worker:%s:sessions agentjail:worker:%s:ops",
				  dead, dead);
	if (x)
		freeReplyObject(x);
	if ((x = queue_cmd(c, &err, "XGROUP DELCONSUMER %s %s %s", stream, QUEUE_GROUP, dead)))
		freeReplyObject(x);
	if ((x = queue_cmd(c, &err, "HDEL agentjail:workers %s", dead)))
		freeReplyObject(x);
}

static void reap(redisContext *c)
{
	struct aj_error err;
	redisReply *all = queue_cmd(c, &err, "HGETALL agentjail:workers");
	for (size_t i = 0; all && i + 1 < all->elements; i += 2) {
		const char *name = all->element[i]->str;
		if (!strcmp(name, w.name))
			continue;
		redisReply *a = queue_cmd(c, &err, "EXISTS agentjail:worker:%s:alive", name);
		bool dead = a && a->integer == 0;
		if (a)
			freeReplyObject(a);
		/* Only one survivor buries it: the lock expires if that one dies. */
		if (dead) {
			redisReply *l = queue_cmd(c, &err, "SET agentjail:burying:%s %s NX EX 30", name,
						  w.name);
			bool mine = l && l->type == REDIS_REPLY_STATUS;
			if (l)
				freeReplyObject(l);
			if (mine) {
				log_msg("worker %s is lost: closing what it held", name);
				bury(c, name, all->element[i + 1]->str);
			}
		}
	}
	if (all)
		freeReplyObject(all);
}

static void *keeper_loop(void *arg)
{
	(void)arg;
	redisContext *c = NULL;
	struct aj_error err = {0};
	double last_reap = 0;
	bool was_down = false;
	/* The heartbeat lasts until the last run is answered: a worker that
	 * is finishing is not lost. */
	while (!atomic_load(&w.keeper_stop)) {
		if (!c && !(c = queue_get(&w.q, 5.0, &err))) {
			if (!was_down)
				log_msg("%s; retrying every second", err.message);
			was_down = true;
			pause_ms(1000);
			continue;
		}
		if (was_down)
			log_msg("Redis at %s is back", w.q.url);
		was_down = false;
		/* The heartbeat is also the offer: serve admits up to the sum of
		 * the live workers' slots, so a dead worker's leave with its key,
		 * and a stopping one offers none while it finishes. */
		redisReply *r = queue_cmd(c, &err, "SET agentjail:worker:%s:alive %u PX %d", w.name,
					  atomic_load(&w.stopping) ? 0u : w.concurrency,
					  QUEUE_ALIVE_MS);
		if (!r) {
			queue_put(&w.q, c, true);
			c = NULL;
			continue;
		}
		freeReplyObject(r);
		if ((r = queue_cmd(c, &err, "HSET agentjail:workers %s %s", w.name,
				   aj_tier_name(w.cfg.tier))))
			freeReplyObject(r);
		/* Sessions the library closed (idle, lifetime, a failed sandbox). */
		pthread_mutex_lock(&w.lock);
		for (struct wsession *s = w.sessions; s; s = s->next)
			if (!s->closed_reported && aj_session_closed_reason(s->s))
				report_closed(c, s, aj_session_closed_reason(s->s));
		pthread_mutex_unlock(&w.lock);
		if (now_ms() / 1e3 - last_reap > 2.0) {
			reap(c);
			last_reap = now_ms() / 1e3;
		}
		pause_ms(1000);
	}
	/* Leaving: sessions end, and this worker's name with them. */
	if (c || (c = queue_get(&w.q, 5.0, &err))) {
		pthread_mutex_lock(&w.lock);
		for (struct wsession *s = w.sessions; s; s = s->next)
			if (!s->closed_reported)
				report_closed(c, s, "its worker shut down");
		pthread_mutex_unlock(&w.lock);
		redisReply *r = queue_cmd(c, &err, "DEL agentjail:worker:%s:alive", w.name);
		if (r)
			freeReplyObject(r);
		if ((r = queue_cmd(c, &err, "HDEL agentjail:workers %s", w.name)))
			freeReplyObject(r);
		if ((r = queue_cmd(c, &err, "XGROUP DELCONSUMER %s %s %s", w.stream, QUEUE_GROUP,
				   w.name)))
			freeReplyObject(r);
		queue_put(&w.q, c, false);
	}
	return NULL;
}

enum { OPT_QUEUE = 6000, OPT_NAME, OPT_CONC, OPT_HELP };

int cmd_worker(int argc, char **argv)
{
	static const struct option own[] = {
		{"queue", required_argument, NULL, OPT_QUEUE},
		{"name", required_argument, NULL, OPT_NAME},
		{"concurrency", required_argument, NULL, OPT_CONC},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0}};
	struct option opts[40];
	options_with(own, opts, 40);
	options_add(session_options, opts, 40);
	options_add(service_options, opts, 40);
	options_add(one_tier_options, opts, 40);
	aj_config_init(&w.cfg);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	w.concurrency = cpus > 0 ? (unsigned)cpus : 1;
	const char *url = NULL, *name = NULL;
	int o, applied;
	optind = 1;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if ((applied = service_option_apply(o, optarg, &w.cfg)) < 0)
			return EXIT_USAGE;
		if (applied)
			continue;
		switch (o) {
		case 'h':
		case OPT_HELP:
			fputs(usage, stdout);
			return 0;
		case OPT_QUEUE:
			url = optarg;
			break;
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_CONC: {
			long v;
			if (parse_count("concurrency", optarg, 1, MAX_THREADS / 2, &v))
				return EXIT_USAGE;
			w.concurrency = (unsigned)v;
			break;
		}
		case '?':
			fputs("try 'agentjail worker --help'\n", stderr);
			return EXIT_USAGE;
		default:
			if (option_apply(o, optarg, &w.cfg))
				return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_error("worker: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!url) {
		cli_error("worker: --queue redis://HOST[:PORT][/DB] is required");
		return EXIT_USAGE;
	}
	struct aj_error err = {0};
	if (aj_config_validate(&w.cfg, &err)) {
		cli_config_error("worker", &err);
		return EXIT_USAGE;
	}
	if (queue_init(&w.q, url, &err)) {
		cli_error("worker: %s", err.message);
		return EXIT_USAGE;
	}
	if (name) {
		struct aj_error nerr;
		if (key_name_check(name, &nerr)) {
			cli_error("worker: --name: %s", nerr.message + strlen("key name: "));
			return EXIT_USAGE;
		}
		snprintf(w.name, sizeof w.name, "%s", name);
	} else {
		char host[64] = "worker";
		gethostname(host, sizeof host - 1);
		host[strcspn(host, ".")] = '\0';
		snprintf(w.name, sizeof w.name, "%s-%d", host, (int)getpid());
	}
	snprintf(w.stream, sizeof w.stream, "agentjail:runs:%s", aj_tier_name(w.cfg.tier));
	snprintf(w.ops, sizeof w.ops, "agentjail:worker:%s:ops", w.name);
	pthread_mutex_init(&w.lock, NULL);

	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (local_open(&w.local, &w.cfg, &err)) {
		cli_error("worker: the %s tier cannot run here: %s", aj_tier_name(w.cfg.tier),
			  err.message);
		return EXIT_SANDBOX;
	}
	/* The group exists before the first read (and the name is not taken). */
	redisContext *c = queue_get(&w.q, 5.0, &err);
	if (c) {
		redisReply *r = redisCommand(c, "XGROUP CREATE %s %s 0 MKSTREAM", w.stream, QUEUE_GROUP);
		if (r)
			freeReplyObject(r);
		r = queue_cmd(c, &err, "EXISTS agentjail:worker:%s:alive", w.name);
		bool taken = r && r->integer == 1;
		if (r)
			freeReplyObject(r);
		queue_put(&w.q, c, false);
		if (taken) {
			cli_error("worker: the name '%s' is in use by a live worker", w.name);
			local_close(&w.local);
			return EXIT_USAGE;
		}
	} else {
		log_msg("%s; will keep trying", err.message);
	}
	pthread_t keeper, th[MAX_THREADS];
	unsigned n = 0;
	pthread_create(&keeper, NULL, keeper_loop, NULL);
	for (unsigned i = 0; i < w.concurrency; i++) {
		pthread_create(&th[n++], NULL, stream_loop, NULL);
		pthread_create(&th[n++], NULL, ops_loop, NULL);
	}
	printf("AGENTJAIL_WORKER=%s\n", w.name);
	fflush(stdout);
	log_msg("taking %s runs from %s, %u at once", aj_tier_name(w.cfg.tier), url, w.concurrency);
	int sig;
	sigwait(&stop, &sig);
	log_msg("%s: finishing the runs in progress, taking no new ones", strsignal(sig));
	atomic_store(&w.stopping, true);
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	atomic_store(&w.keeper_stop, true);
	pthread_join(keeper, NULL);
	while (w.sessions) {
		struct wsession *s = w.sessions;
		w.sessions = s->next;
		aj_session_close(s->s);
		free(s);
	}
	local_close(&w.local);
	queue_destroy(&w.q);
	log_msg("stopped");
	return 0;
}
