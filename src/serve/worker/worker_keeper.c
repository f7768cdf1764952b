/* agentjail worker's keeper thread (worker.h): the heartbeat (which is
 * also this worker's offer of run slots), the sessions the library closed,
 * and what lost workers left behind: their taken runs are answered
 * "worker lost" and never run again; their sessions are marked closed. */
#include <stdbool.h>
#include <string.h>

#include "../../core/internal.h"
#include "worker.h"

/* One run entry a dead worker held: answered "worker lost", never run. */
static void answer_lost(struct worker *w, redisContext *c, const char *dead, redisReply *f)
{
	struct aj_error err;
	for (size_t j = 0; j + 1 < f->elements; j += 2) {
		if (strcmp(f->element[j]->str, "msg"))
			continue;
		json_t *req = json_loadb(f->element[j + 1]->str, f->element[j + 1]->len, 0, NULL);
		const char *id = json_string_value(json_object_get(req, "id"));
		/* Not taken yet: make sure no one ever takes it. */
		redisReply *s = id ? queue_cmd(c, &err, "SET agentjail:claim:%s abandoned NX EX 3600",
					       id)
				   : NULL;
		/* Won: the dead worker had read it but never claimed it, so it
		 * never started and its caller may send it again; lost (or
		 * unknown): it may have started. */
		bool never_taken = s && s->type == REDIS_REPLY_STATUS;
		if (s)
			freeReplyObject(s);
		json_t *lost = worker_refusal("worker_lost",
					      "worker lost: %s stopped while it held the run; it "
					      "is not run again (agent code is not idempotent)",
					      dead);
		json_object_set_new(lost, "taken", json_boolean(!never_taken));
		worker_answer(w, c, req, lost);
		json_decref(req);
	}
}

/* What a dead worker left: runs it took are answered "worker lost" (never
 * run again), its sessions marked closed, its name forgotten. */
static void bury(struct worker *w, redisContext *c, const char *dead, const char *tier)
{
	struct aj_error err;
	char stream[64];
	snprintf(stream, sizeof stream, "agentjail:runs:%s", tier);
	redisReply *p = queue_cmd(c, &err, "XPENDING %s %s - + 1000 %s", stream, QUEUE_GROUP, dead);
	for (size_t i = 0; p && i < p->elements; i++) {
		const char *eid = p->element[i]->element[0]->str;
		redisReply *cl = queue_cmd(c, &err, "XCLAIM %s %s %s 0 %s", stream, QUEUE_GROUP,
					   w->id, eid);
		for (size_t k = 0; cl && k < cl->elements; k++) {
			redisReply *e = cl->element[k];
			if (e->type == REDIS_REPLY_ARRAY && e->elements >= 2)
				answer_lost(w, c, dead, e->element[1]);
		}
		if (cl)
			freeReplyObject(cl);
		queue_do(c, "XACK %s %s %s", stream, QUEUE_GROUP, eid);
		queue_do(c, "XDEL %s %s", stream, eid);
		worker_log(w, "closed run entry %s of lost worker %s", eid, dead);
	}
	if (p)
		freeReplyObject(p);
	redisReply *s = queue_cmd(c, &err, "SMEMBERS agentjail:worker:%s:sessions", dead);
	for (size_t i = 0; s && i < s->elements; i++) {
		const char *sid = s->element[i]->str;
		redisReply *o = queue_cmd(c, &err, "HGET agentjail:session:%s owner", sid);
		if (o && o->type == REDIS_REPLY_STRING)
			queue_do(c, "SREM agentjail:key:%s:sessions %s", o->str, sid);
		if (o)
			freeReplyObject(o);
		queue_do(c, "HSET agentjail:session:%s closed %s", sid,
			 "its worker was lost; its state is gone");
		queue_do(c, "EXPIRE agentjail:session:%s 3600", sid);
	}
	if (s)
		freeReplyObject(s);
	queue_do(c, "DEL agentjail:worker:%s:sessions agentjail:worker:%s:ops", dead, dead);
	queue_do(c, "XGROUP DELCONSUMER %s %s %s", stream, QUEUE_GROUP, dead);
	queue_do(c, "HDEL agentjail:workers %s", dead);
}

/* Buries every worker whose heartbeat ended. */
static void bury_the_lost(struct worker *w, redisContext *c)
{
	struct aj_error err;
	redisReply *all = queue_cmd(c, &err, "HGETALL agentjail:workers");
	for (size_t i = 0; all && i + 1 < all->elements; i += 2) {
		const char *name = all->element[i]->str;
		if (!strcmp(name, w->id))
			continue;
		redisReply *a = queue_cmd(c, &err, "EXISTS agentjail:worker:%s:alive", name);
		bool dead = a && a->integer == 0;
		if (a)
			freeReplyObject(a);
		/* Only one survivor buries it: the lock expires if that one dies. */
		if (dead) {
			redisReply *l = queue_cmd(c, &err, "SET agentjail:burying:%s %s NX EX 30", name,
						  w->id);
			bool mine = l && l->type == REDIS_REPLY_STATUS;
			if (l)
				freeReplyObject(l);
			if (mine) {
				worker_log(w, "worker %s is lost: closing what it held", name);
				bury(w, c, name, all->element[i + 1]->str);
			}
		}
	}
	if (all)
		freeReplyObject(all);
}

/* The name, given up if this start still holds it. */
static void release_name(struct worker *w, redisContext *c)
{
	static const char lua[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
				  "  redis.call('DEL', KEYS[1])\n"
				  "end\n"
				  "return 0\n";
	queue_do(c, "EVAL %s 1 %s %s", lua, w->name_key, w->id);
}

/* Leaving: sessions end, and this worker's name with them. */
static void leave(struct worker *w, redisContext *c)
{
	worker_sessions_report_closed(w, c, "its worker shut down");
	queue_do(c, "DEL agentjail:worker:%s:alive", w->id);
	queue_do(c, "HDEL agentjail:workers %s", w->id);
	queue_do(c, "XGROUP DELCONSUMER %s %s %s", w->stream, QUEUE_GROUP, w->id);
	release_name(w, c);
}

void *worker_keeper_loop(void *arg)
{
	struct worker *w = arg;
	redisContext *c = NULL;
	struct aj_error err = {0};
	double last_reap = 0;
	bool was_down = false;
	/* The heartbeat lasts until the last run is answered: a worker that
	 * is finishing is not lost. */
	while (!atomic_load(&w->keeper_stop)) {
		if (!c && !(c = queue_get(&w->q, 5.0, &err))) {
			if (!was_down)
				worker_log(w, "%s; retrying every second", err.message);
			was_down = true;
			worker_pause_ms(1000);
			continue;
		}
		if (was_down)
			worker_log(w, "Redis at %s is back", w->q.url);
		was_down = false;
		/* The heartbeat is also the offer: serve admits up to the sum of
		 * the live workers' slots, so a dead worker's leave with its key,
		 * and a stopping one offers none while it finishes. */
		redisReply *r = queue_cmd(c, &err, "SET agentjail:worker:%s:alive %u PX %d", w->id,
					  atomic_load(&w->stopping) ? 0u : w->concurrency,
					  QUEUE_ALIVE_MS);
		if (!r) {
			queue_put(&w->q, c, true);
			c = NULL;
			continue;
		}
		freeReplyObject(r);
		queue_do(c, "HSET agentjail:workers %s %s", w->id, aj_tier_name(w->cfg.tier));
		/* The name stays this start's while it lives: a second worker
		 * started under it is refused (worker.c). */
		queue_do(c, "SET %s %s PX %d", w->name_key, w->id, QUEUE_ALIVE_MS);
		/* Sessions the library closed (idle, lifetime, a failed sandbox). */
		worker_sessions_report_closed(w, c, NULL);
		if (now_ms() / 1e3 - last_reap > 2.0) {
			bury_the_lost(w, c);
			last_reap = now_ms() / 1e3;
		}
		worker_pause_ms(1000);
	}
	if (c || (c = queue_get(&w->q, 5.0, &err))) {
		leave(w, c);
		queue_put(&w->q, c, false);
	}
	return NULL;
}
