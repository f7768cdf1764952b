/* The run store in Redis (runs.h's table; the layout in runs_redis.h).
 * serve creates a record and reads it; the worker that runs it writes its
 * events and its end (with this same store, on its own connection pool),
 * so they outlive serve's restart and any replica answers for them. A
 * reader that finds a record not ended whose worker's heartbeat is gone
 * ends it with the lost-run answer: a run never ends in silence. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "remote.h"
#include "respond.h"
#include "runs_redis.h"

/* Events one read takes at most: a reader holds these while it sends
 * them (twice, briefly: Redis's reply and the copies), so they bound its
 * memory: each is a chunk of the run's output (at most the supervisor's
 * 64 KiB read) or one image. */
#define READ_COUNT 8

struct redis_store {
	struct queue *q;
	double give_up_run, give_up_session; /* runs_redis_give_up */
};

/* The budget, then the new record, in one step: the key's records oldest
 * first, those expired dropped from its set, the oldest ended ones
 * deleted while the key holds its budget or more; still at it (its live
 * runs hold it): -1, and no record. KEYS: the key's set, the new hash;
 * ARGV: budget, owner, background, session_id, expiry, id, the seconds
 * after which a run no worker took is given up (0: never), the seconds
 * the record is kept after its end (what a worker's poller renews by).
 * Times are Redis's clock: one clock for every serve and worker. */
static const char create_lua[] =
	"local ids = redis.call('ZRANGE', KEYS[1], 0, -1)\n"
	"local budget = tonumber(ARGV[1])\n"
	"local total, rows = 0, {}\n"
	"for _, id in ipairs(ids) do\n"
	"  local h = redis.call('HMGET', 'agentjail:run:' .. id, 'state', 'bytes')\n"
	"  if not h[1] then redis.call('ZREM', KEYS[1], id)\n"
	"  else\n"
	"    local b = tonumber(h[2]) or 0\n"
	"    total = total + b\n"
	"    rows[#rows + 1] = {id, h[1], b}\n"
	"  end\n"
	"end\n"
	"for _, r in ipairs(rows) do\n"
	"  if total < budget then break end\n"
	"  if r[2] == 'done' then\n"
	"    redis.call('DEL', 'agentjail:run:' .. r[1], 'agentjail:run:' .. r[1] .. ':events')\n"
	"    redis.call('ZREM', KEYS[1], r[1])\n"
	"    total = total - r[3]\n"
	"  end\n"
	"end\n"
	"if total >= budget then return -1 end\n"
	"local t = redis.call('TIME')\n"
	"local created = string.format('%.6f', t[1] + t[2] / 1e6)\n"
	"redis.call('HSET', KEYS[2], 'owner', ARGV[2], 'state', 'queued', 'created', created,\n"
	"  'background', ARGV[3], 'session_id', ARGV[4], 'bytes', 0, 'keep', ARGV[8])\n"
	"if tonumber(ARGV[7]) > 0 then\n"
	"  redis.call('HSET', KEYS[2], 'deadline', string.format('%.6f', created + ARGV[7]))\n"
	"end\n"
	"redis.call('EXPIRE', KEYS[2], ARGV[5])\n"
	"redis.call('ZADD', KEYS[1], created, ARGV[6])\n"
	"redis.call('EXPIRE', KEYS[1], ARGV[5])\n"
	"return 0\n";

/* queued -> running, unless it ended first. KEYS: hash; ARGV: worker,
 * expiry. */
static const char started_lua[] =
	"if redis.call('HGET', KEYS[1], 'state') ~= 'queued' then return 0 end\n"
	"redis.call('HSET', KEYS[1], 'state', 'running', 'worker', ARGV[1])\n"
	"redis.call('EXPIRE', KEYS[1], ARGV[2])\n"
	"return 1\n";

/* One event, unless the record ended (or expired): nothing follows the
 * result. Its number is the stream's next (0-*: Redis counts). KEYS:
 * hash, events; ARGV: kind, data, expiry, name, mime. */
static const char append_lua[] =
	"local s = redis.call('HGET', KEYS[1], 'state')\n"
	"if not s or s == 'done' then return 0 end\n"
	"if ARGV[4] ~= '' then\n"
	"  redis.call('XADD', KEYS[2], '0-*', 'kind', ARGV[1], 'data', ARGV[2], 'name', ARGV[4],\n"
	"    'mime', ARGV[5])\n"
	"else\n"
	"  redis.call('XADD', KEYS[2], '0-*', 'kind', ARGV[1], 'data', ARGV[2])\n"
	"end\n"
	"redis.call('HINCRBY', KEYS[1], 'bytes', #ARGV[2])\n"
	"redis.call('EXPIRE', KEYS[2], ARGV[3])\n"
	"return 1\n";

/* The end, exactly once: whoever comes second (the worker's result after
 * a reader's lost answer, or the reverse) changes nothing. KEYS: hash,
 * events; ARGV: result, keep. */
static const char finish_lua[] =
	"local s = redis.call('HGET', KEYS[1], 'state')\n"
	"if not s or s == 'done' then return 0 end\n"
	"local x = redis.call('XADD', KEYS[2], '0-*', 'kind', 'result', 'data', ARGV[1])\n"
	"local t = redis.call('TIME')\n"
	"redis.call('HSET', KEYS[1], 'state', 'done', 'ended',\n"
	"  string.format('%.6f', t[1] + t[2] / 1e6), 'result', ARGV[1], 'last', string.sub(x, 3))\n"
	"redis.call('HINCRBY', KEYS[1], 'bytes', 2 * #ARGV[1])\n"
	"redis.call('EXPIRE', KEYS[1], ARGV[2])\n"
	"redis.call('EXPIRE', KEYS[2], ARGV[2])\n"
	"return 1\n";

/* A run no worker claimed by its deadline is made unrunnable (the claim
 * SET NX, as its serve would have done had it not stopped): 1 if this
 * call did it. KEYS: hash, claim. */
static const char overdue_lua[] =
	"local d = tonumber(redis.call('HGET', KEYS[1], 'deadline') or '0')\n"
	"if d == 0 then return 0 end\n"
	"local t = redis.call('TIME')\n"
	"if t[1] + t[2] / 1e6 < d then return 0 end\n"
	"if redis.call('SET', KEYS[2], 'abandoned', 'NX', 'EX', 3600) then return 1 end\n"
	"return 0\n";

/* The worker's poll of its live records: for each hash (KEYS, the events
 * stream's name is the hash's plus ':events') its cancel flag, and the
 * expiry of one not ended renewed to its own keep time plus the live
 * margin (ARGV[1]). One that ended is left alone: its end set the expiry
 * serve's --keep-runs asked for, and a renewal racing the end must not
 * stretch or cut it. */
static const char poll_lua[] =
	"local out = {}\n"
	"for i, h in ipairs(KEYS) do\n"
	"  local f = redis.call('HMGET', h, 'state', 'cancel', 'keep')\n"
	"  out[i] = (f[2] == '1') and 1 or 0\n"
	"  if f[1] and f[1] ~= 'done' then\n"
	"    local live = (tonumber(f[3]) or 0) + tonumber(ARGV[1])\n"
	"    redis.call('EXPIRE', h, live)\n"
	"    redis.call('EXPIRE', h .. ':events', live)\n"
	"  end\n"
	"end\n"
	"return out\n";

/* Asked to stop, unless it ended. KEYS: hash. */
static const char cancel_lua[] =
	"local s = redis.call('HGET', KEYS[1], 'state')\n"
	"if s and s ~= 'done' then redis.call('HSET', KEYS[1], 'cancel', '1') end\n"
	"return 0\n";

static struct queue *qof(struct run_store *st)
{
	return ((struct redis_store *)st->impl)->q;
}

static long live_sec(struct run_store *st)
{
	return (long)st->keep_sec + RUNS_REDIS_LIVE_SEC;
}

/* A script's integer answer, or -2 on a Redis error (err says it). */
static long long script(redisContext *c, struct aj_error *err, const char *lua, int nkeys,
			const char **argv, const size_t *lens, int argc)
{
	const char *av[16];
	size_t al[16];
	char nk[8];
	snprintf(nk, sizeof nk, "%d", nkeys);
	av[0] = "EVAL", al[0] = 4;
	av[1] = lua, al[1] = strlen(lua);
	av[2] = nk, al[2] = strlen(nk);
	for (int i = 0; i < argc && i < 13; i++) {
		av[3 + i] = argv[i];
		al[3 + i] = lens ? lens[i] : strlen(argv[i]);
	}
	redisReply *r = redisCommandArgv(c, 3 + argc, av, al);
	if (!r || r->type == REDIS_REPLY_ERROR) {
		error_set(err, -EIO, "queue: Redis: %.300s",
			  r ? r->str : c->errstr[0] ? c->errstr : "no reply");
		if (r)
			freeReplyObject(r);
		return -2;
	}
	long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	freeReplyObject(r);
	return v;
}

static void keys_of(const char *id, char hash[64], char events[72])
{
	snprintf(hash, 64, "agentjail:run:%.40s", id);
	snprintf(events, 72, "agentjail:run:%.40s:events", id);
}

static int rcreate(struct run_store *st, const char *id, const char *owner,
		   const struct run_info *info, struct aj_error *err)
{
	redisContext *c = queue_get(qof(st), 5.0, err);
	if (!c)
		return -EIO;
	char set[128], hash[64], events[72], budget[32], expiry[32], give_up[32];
	keys_of(id, hash, events);
	snprintf(set, sizeof set, "agentjail:key:%s:runs", owner);
	snprintf(budget, sizeof budget, "%zu", st->budget);
	snprintf(expiry, sizeof expiry, "%ld", live_sec(st));
	const struct redis_store *rs = st->impl;
	snprintf(give_up, sizeof give_up, "%.3f",
		 info->session ? rs->give_up_session : rs->give_up_run);
	char keep[32];
	snprintf(keep, sizeof keep, "%ld", (long)st->keep_sec > 0 ? (long)st->keep_sec : 1);
	const char *argv[] = {set,	hash,	  budget, owner, info->background ? "1" : "0",
			      info->session ? info->session_id : "", expiry, id, give_up, keep};
	long long v = script(c, err, create_lua, 2, argv, NULL, 10);
	queue_put(qof(st), c, v == -2);
	if (v == -2)
		return -EIO;
	if (v == -1)
		return error_set(err, -EDQUOT,
				 "key '%s' holds its runs budget (%zu MiB) in runs still going; "
				 "wait for one to end",
				 owner, st->budget >> 20);
	return 0;
}

bool runs_redis_started(struct run_store *st, const char *id, const char *worker)
{
	struct aj_error err;
	redisContext *c = queue_get(qof(st), 5.0, &err);
	if (!c)
		return false;
	char hash[64], events[72], expiry[32];
	keys_of(id, hash, events);
	snprintf(expiry, sizeof expiry, "%ld", live_sec(st));
	const char *argv[] = {hash, worker, expiry};
	long long v = script(c, &err, started_lua, 1, argv, NULL, 3);
	queue_put(qof(st), c, v == -2);
	return v == 1;
}

static void rstarted(struct run_store *st, const char *id)
{
	runs_redis_started(st, id, "");
}

static const char *const kind_names[] = {"stdout", "stderr", "image", "result"};

static void rappend(struct run_store *st, const char *id, enum run_event_kind kind,
		    const char *data, size_t len, const char *name, const char *mime)
{
	struct aj_error err;
	redisContext *c = queue_get(qof(st), 5.0, &err);
	if (!c)
		return;
	char hash[64], events[72], expiry[32];
	keys_of(id, hash, events);
	snprintf(expiry, sizeof expiry, "%ld", live_sec(st));
	const char *argv[] = {hash, events, kind_names[kind], data, expiry, name ? name : "",
			      mime ? mime : ""};
	size_t lens[] = {strlen(hash), strlen(events), strlen(kind_names[kind]), len,
			 strlen(expiry), strlen(argv[5]), strlen(argv[6])};
	long long v = script(c, &err, append_lua, 2, argv, lens, 7);
	queue_put(qof(st), c, v == -2);
}

/* Ends the record with the result text: 1 if this call ended it, 0 if it
 * had ended (or expired), -1 on a Redis error. */
static int finish_text(struct run_store *st, redisContext *c, const char *id, const char *text)
{
	struct aj_error err;
	char hash[64], events[72], keep[32];
	keys_of(id, hash, events);
	snprintf(keep, sizeof keep, "%ld", (long)st->keep_sec > 0 ? (long)st->keep_sec : 1);
	const char *argv[] = {hash, events, text, keep};
	long long v = script(c, &err, finish_lua, 2, argv, NULL, 4);
	return v == -2 ? -1 : (int)v;
}

static void rfinish(struct run_store *st, const char *id, json_t *result)
{
	struct aj_error err;
	char *text = json_dumps(result, JSON_COMPACT);
	redisContext *c = text ? queue_get(qof(st), 5.0, &err) : NULL;
	if (c)
		queue_put(qof(st), c, finish_text(st, c, id, text) < 0);
	free(text);
}

/* A record no worker claimed: ended if its deadline passed (its serve
 * stopped waiting for it without ending it: killed, say). 1 when ended,
 * 0 if not, -1 on a Redis error. */
static int end_if_overdue(struct run_store *st, redisContext *c, const char *id)
{
	struct aj_error err;
	char hash[64], events[72], claim[64];
	keys_of(id, hash, events);
	snprintf(claim, sizeof claim, "agentjail:claim:%.40s", id);
	const char *argv[] = {hash, claim};
	long long v = script(c, &err, overdue_lua, 2, argv, NULL, 2);
	if (v != 1)
		return v == -2 ? -1 : 0;
	json_t *o = run_failure_json("no_worker", id, false, false,
				     "no worker took the run within its wait, and the server that "
				     "sent it stopped waiting; it never started");
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	int won = text ? finish_text(st, c, id, text) : -1;
	free(text);
	return won < 0 ? -1 : 1;
}

/* A record not ended: if the worker that took it is gone (its heartbeat
 * expired), or its request was abandoned before any worker claimed it,
 * ends it with the lost answer. worker: the hash's, or "" (then the
 * claim says who took it). 1 when it is now ended, 0 if it still runs
 * (or nobody took it yet), -1 on a Redis error. */
static int end_if_lost(struct run_store *st, redisContext *c, const char *id, const char *worker)
{
	struct aj_error err;
	char taker[128];
	snprintf(taker, sizeof taker, "%s", worker);
	if (!*taker) {
		redisReply *r = queue_cmd(c, &err, "GET agentjail:claim:%s", id);
		if (!r)
			return -1;
		snprintf(taker, sizeof taker, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
		freeReplyObject(r);
		if (!*taker)
			return end_if_overdue(st, c, id);
	}
	bool never = !strcmp(taker, "abandoned");
	if (!never) {
		redisReply *r = queue_cmd(c, &err, "EXISTS agentjail:worker:%s:alive", taker);
		if (!r)
			return -1;
		bool alive = r->integer == 1;
		freeReplyObject(r);
		if (alive)
			return 0;
	}
	char msg[512];
	if (never)
		snprintf(msg, sizeof msg, REMOTE_NEVER_TAKEN_WORDS);
	else
		snprintf(msg, sizeof msg, REMOTE_LOST_WORDS, taker);
	json_t *o = run_failure_json("run_lost", id, true, !never, msg);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return -1;
	int won = finish_text(st, c, id, text);
	free(text);
	/* Whichever reader (of any serve replica) won tells the log once. */
	if (won == 1)
		fprintf(stderr, "agentjail serve: recorded run %s lost (%s): %s\n", id,
			never ? "it never started" : "it may have started", msg);
	return won < 0 ? -1 : 1;
}

static enum run_state state_of(const redisReply *r)
{
	if (r->type != REDIS_REPLY_STRING)
		return RUN_QUEUED;
	return !strcmp(r->str, "done") ? RUN_DONE : !strcmp(r->str, "running") ? RUN_RUNNING : RUN_QUEUED;
}

/* The record's hash as owner sees it (lost ones ended on the way): 0 with
 * *info, -ENOENT, -EIO. with_result: the result is fetched and parsed
 * too; only GET /v1/runs/ID wants it, and an events read, a cancel or a
 * list row would pay for the whole result (as large as the output) on
 * every call. */
static int read_info(struct run_store *st, redisContext *c, const char *id, const char *owner,
		     struct run_info *info, bool with_result)
{
	struct aj_error err;
	for (int pass = 0; pass < 2; pass++) {
		redisReply *h = queue_cmd(c, &err,
					  "HMGET agentjail:run:%s owner state created ended "
					  "background session_id worker %s last",
					  id, with_result ? "result" : "state");
		if (!h)
			return -EIO;
		redisReply **e = h->element;
		if (h->elements != 9 || e[0]->type != REDIS_REPLY_STRING || strcmp(e[0]->str, owner)) {
			freeReplyObject(h); /* another key's run answers as none at all */
			return -ENOENT;
		}
		memset(info, 0, sizeof *info);
		snprintf(info->id, sizeof info->id, "%s", id);
		info->state = state_of(e[1]);
		info->created = e[2]->type == REDIS_REPLY_STRING ? atof(e[2]->str) : 0;
		info->ended = e[3]->type == REDIS_REPLY_STRING ? atof(e[3]->str) : 0;
		info->background = e[4]->type == REDIS_REPLY_STRING && !strcmp(e[4]->str, "1");
		if (e[5]->type == REDIS_REPLY_STRING && *e[5]->str) {
			info->session = true;
			snprintf(info->session_id, sizeof info->session_id, "%s", e[5]->str);
		}
		char worker[128];
		snprintf(worker, sizeof worker, "%s",
			 e[6]->type == REDIS_REPLY_STRING ? e[6]->str : "");
		if (info->state == RUN_DONE && e[8]->type == REDIS_REPLY_STRING)
			info->last_id = strtoull(e[8]->str, NULL, 10);
		if (with_result && info->state == RUN_DONE && e[7]->type == REDIS_REPLY_STRING)
			info->result = json_loadb(e[7]->str, e[7]->len, 0, NULL);
		freeReplyObject(h);
		if (info->state == RUN_DONE || pass)
			return 0;
		int lost = end_if_lost(st, c, id, worker);
		if (lost < 0)
			return -EIO;
		if (!lost)
			return 0;
	}
	return 0;
}

static int rinfo(struct run_store *st, const char *id, const char *owner, struct run_info *info)
{
	struct aj_error err;
	redisContext *c = queue_get(qof(st), 5.0, &err);
	if (!c)
		return -EIO;
	int rc = read_info(st, c, id, owner, info, true);
	queue_put(qof(st), c, rc == -EIO);
	return rc;
}

static int kind_of(const char *s, enum run_event_kind *k)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, kind_names[i])) {
			*k = (enum run_event_kind)i;
			return 0;
		}
	return -1;
}

static char *dup_bytes(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* A stream's entries as events (appended to *ev): *done once the result
 * is among them. -1 when out of memory or an entry is malformed. */
static int take_entries(const redisReply *entries, struct run_event **ev, size_t *n, bool *done)
{
	struct run_event *a = realloc(*ev, (*n + entries->elements + 1) * sizeof *a);
	if (!a)
		return -1;
	*ev = a;
	for (size_t i = 0; i < entries->elements; i++) {
		const redisReply *e = entries->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
		    strncmp(e->element[0]->str, "0-", 2))
			return -1;
		struct run_event x = {.id = strtoull(e->element[0]->str + 2, NULL, 10)};
		const redisReply *f = e->element[1];
		bool kind = false;
		for (size_t j = 0; j + 1 < f->elements; j += 2) {
			const char *k = f->element[j]->str;
			const redisReply *v = f->element[j + 1];
			if (!strcmp(k, "kind"))
				kind = !kind_of(v->str, &x.kind);
			else if (!strcmp(k, "data"))
				x.data = dup_bytes(v->str, x.len = v->len);
			else if (!strcmp(k, "name"))
				x.name = strdup(v->str);
			else if (!strcmp(k, "mime"))
				x.mime = strdup(v->str);
		}
		a[(*n)++] = x;
		if (!kind || !x.data)
			return -1;
		if (x.kind == RUN_EV_RESULT)
			*done = true;
	}
	return 0;
}

static int revents(struct run_store *st, const char *id, const char *owner, uint64_t after,
		   int wait_ms, struct run_event **ev, size_t *n, bool *done)
{
	*ev = NULL;
	*n = 0;
	*done = false;
	struct aj_error err;
	/* The connection waits as long as the read may block, and more. */
	redisContext *c = queue_get(qof(st), wait_ms / 1e3 + 5.0, &err);
	if (!c)
		return -EIO;
	struct run_info info;
	int rc = read_info(st, c, id, owner, &info, false);
	if (rc) {
		queue_put(qof(st), c, rc == -EIO);
		return rc;
	}
	char events[72], hash[64], from[32];
	keys_of(id, hash, events);
	snprintf(from, sizeof from, "0-%llu", (unsigned long long)after);
	/* What is there now; and when nothing is, a run not ended is waited
	 * for (an ended one has nothing after its result). */
	redisReply *r = queue_cmd(c, &err, "XREAD COUNT %d STREAMS %s %s", READ_COUNT, events, from);
	if (r && r->type != REDIS_REPLY_ARRAY && info.state != RUN_DONE && wait_ms > 0) {
		freeReplyObject(r);
		r = queue_cmd(c, &err, "XREAD COUNT %d BLOCK %d STREAMS %s %s", READ_COUNT, wait_ms,
			      events, from);
	}
	if (!r) {
		queue_put(qof(st), c, true);
		return -EIO;
	}
	rc = 0;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	    take_entries(r->element[0]->element[1], ev, n, done)) {
		run_events_free(*ev, *n);
		*ev = NULL;
		*n = 0;
		rc = -EIO;
	}
	/* An ended run read up to its end: nothing more will come. */
	if (!rc && !*n && info.state == RUN_DONE)
		*done = true;
	freeReplyObject(r);
	queue_put(qof(st), c, false);
	return rc;
}

static int rcancel(struct run_store *st, const char *id, const char *owner)
{
	struct aj_error err;
	redisContext *c = queue_get(qof(st), 5.0, &err);
	if (!c)
		return -EIO;
	struct run_info info;
	int rc = read_info(st, c, id, owner, &info, false);
	if (!rc) {
		char hash[64], events[72];
		keys_of(id, hash, events);
		const char *argv[] = {hash};
		if (info.state != RUN_DONE && script(c, &err, cancel_lua, 1, argv, NULL, 1) == -2)
			rc = -EIO;
	}
	queue_put(qof(st), c, rc == -EIO);
	return rc;
}

static bool rcancel_requested(struct run_store *st, const char *id)
{
	bool cancel = false;
	runs_redis_poll(st, &id, 1, &cancel);
	return cancel;
}

int runs_redis_poll(struct run_store *st, const char *const *ids, size_t n, bool *cancel)
{
	if (!n)
		return 0;
	struct aj_error err;
	redisContext *c = queue_get(qof(st), 5.0, &err);
	if (!c)
		return -1;
	/* One script for all: one round trip however many runs this worker
	 * holds, and each record's renewal decided where its state is. */
	enum { MAX_IDS = 256 };
	size_t m = n < MAX_IDS ? n : MAX_IDS;
	const char *av[MAX_IDS + 4];
	size_t al[MAX_IDS + 4];
	char hashes[MAX_IDS][64], nk[16], live[16];
	snprintf(nk, sizeof nk, "%zu", m);
	snprintf(live, sizeof live, "%d", RUNS_REDIS_LIVE_SEC);
	av[0] = "EVAL", av[1] = poll_lua, av[2] = nk;
	for (size_t i = 0; i < m; i++) {
		snprintf(hashes[i], sizeof hashes[i], "agentjail:run:%.40s", ids[i]);
		av[3 + i] = hashes[i];
	}
	av[3 + m] = live;
	for (size_t i = 0; i < m + 4; i++)
		al[i] = strlen(av[i]);
	redisReply *r = redisCommandArgv(c, (int)m + 4, av, al);
	int rc = r && r->type == REDIS_REPLY_ARRAY && r->elements == m ? 0 : -1;
	for (size_t i = 0; !rc && i < m; i++)
		cancel[i] = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == 1;
	for (size_t i = m; i < n; i++)
		cancel[i] = false;
	if (r)
		freeReplyObject(r);
	queue_put(qof(st), c, rc != 0);
	return rc;
}

static json_t *rlist(struct run_store *st, const char *owner, const char *before,
		     unsigned limit, struct aj_error *err)
{
	redisContext *c = queue_get(qof(st), 5.0, err);
	if (!c)
		return NULL;
	long long start = 0;
	if (before) {
		redisReply *r = queue_cmd(c, err, "ZREVRANK agentjail:key:%s:runs %s", owner, before);
		if (!r) {
			queue_put(qof(st), c, true);
			return NULL;
		}
		bool known = r->type == REDIS_REPLY_INTEGER;
		start = known ? r->integer + 1 : 0;
		freeReplyObject(r);
		if (!known) {
			/* A page goes on after the last run of the one before;
			 * that run gone (expired, or another key's) ends the list. */
			queue_put(qof(st), c, false);
			return json_array();
		}
	}
	json_t *a = json_array();
	/* Expired records are skipped (and dropped from the set): a page may
	 * then hold fewer than limit though older runs remain, so read on. */
	while (a && json_array_size(a) < limit) {
		redisReply *r = queue_cmd(c, err, "ZREVRANGE agentjail:key:%s:runs %lld %lld", owner,
					  start, start + (long long)limit - 1);
		if (!r) {
			json_decref(a);
			queue_put(qof(st), c, true);
			return NULL;
		}
		size_t got = r->elements;
		for (size_t i = 0; i < got && json_array_size(a) < limit; i++) {
			struct run_info info;
			/* A row without its result: a page of runs stays
			 * small, and GET /v1/runs/ID has the result. */
			int rc = read_info(st, c, r->element[i]->str, owner, &info, false);
			if (!rc) {
				json_array_append_new(a, run_info_json(&info));
			} else if (rc == -ENOENT) {
				queue_do(c, "ZREM agentjail:key:%s:runs %s", owner, r->element[i]->str);
				start--; /* the set shifted under the next page */
			}
		}
		freeReplyObject(r);
		start += (long long)got;
		if (got < limit)
			break;
	}
	queue_put(qof(st), c, false);
	return a;
}

/* Redis expires the records itself (EXPIRE on each). */
static void rsweep(struct run_store *st)
{
	(void)st;
}

static void rclose(struct run_store *st)
{
	free(st->impl);
	st->impl = NULL;
}

static const struct run_store_ops redis_ops = {
	.create = rcreate,
	.started = rstarted,
	.append = rappend,
	.finish = rfinish,
	.info = rinfo,
	.events = revents,
	.cancel = rcancel,
	.cancel_requested = rcancel_requested,
	.list = rlist,
	.sweep = rsweep,
	.close = rclose,
};

void runs_redis_give_up(struct run_store *st, double run_sec, double session_sec)
{
	struct redis_store *r = st->impl;
	r->give_up_run = run_sec;
	r->give_up_session = session_sec;
}

int runs_redis_open(struct run_store *st, struct queue *q, double keep_sec, size_t budget,
		    struct aj_error *err)
{
	struct redis_store *r = calloc(1, sizeof *r);
	if (!r)
		return error_set(err, -ENOMEM, "runs: out of memory");
	r->q = q;
	*st = (struct run_store){.ops = &redis_ops, .keep_sec = keep_sec, .budget = budget, .impl = r};
	return 0;
}
