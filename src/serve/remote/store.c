/* The run store in Redis (runs.h's table; the layout in remote/store.h).
 * serve creates a record and reads it; the worker that runs it writes its
 * events and its end (with this same store, on its own connection pool),
 * so they outlive serve's restart and any replica answers for them. A
 * reader that finds a record not ended whose worker's heartbeat is gone
 * ends it with the lost-run answer: a run never ends in silence. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "remote.h"
#include "../http/respond.h"
#include "../runs/budget.h"
#include "store.h"

/* Events one read takes at most: a reader holds these while it sends
 * them (twice, briefly: Redis's reply and the copies), so they bound its
 * memory: each is a chunk of the run's output (at most the supervisor's
 * 64 KiB read) or one image. */
#define READ_COUNT 8

/* A run whose event could not be written (Redis did not answer): its
 * result will say so. Kept here, in the process that writes the run's
 * events and its end, since Redis is what failed. */
struct lost_run {
	char id[33];
	struct lost_run *next;
};

struct redis_store {
	struct queue *q;
	double give_up_run, give_up_session; /* remote_store_give_up */
	void (*on_lost)(void *arg, bool may_have_started); /* remote_store_on_lost */
	void *on_lost_arg;
	void (*on_cancel)(void *arg, const char *id); /* remote_store_on_cancel */
	void *on_cancel_arg;
	pthread_mutex_t lost_lock;
	struct lost_run *lost;
};

static void lost_mark(struct redis_store *rs, const char *id)
{
	pthread_mutex_lock(&rs->lost_lock);
	struct lost_run *l = rs->lost;
	while (l && strcmp(l->id, id))
		l = l->next;
	if (!l && (l = calloc(1, sizeof *l))) {
		snprintf(l->id, sizeof l->id, "%s", id);
		l->next = rs->lost;
		rs->lost = l;
	}
	pthread_mutex_unlock(&rs->lost_lock);
}

/* Whether id lost an event; forgotten once asked (at its end). */
static bool lost_take(struct redis_store *rs, const char *id)
{
	bool was = false;
	pthread_mutex_lock(&rs->lost_lock);
	for (struct lost_run **p = &rs->lost; *p; p = &(*p)->next)
		if (!strcmp((*p)->id, id)) {
			struct lost_run *l = *p;
			*p = l->next;
			free(l);
			was = true;
			break;
		}
	pthread_mutex_unlock(&rs->lost_lock);
	return was;
}

/* A key's bytes held, kept as a running total beside its set, so that
 * making a record costs work bounded by what it must evict, not by how
 * many records the key has (a whole scan in one script blocks Redis for
 * everyone: half a second at 200k records):
 *   agentjail:key:NAME:runbytes  the total (INCRBY as records grow)
 *   agentjail:key:NAME:runsize   a hash, run id -> its bytes, so that a
 *                                record Redis expired (no hook tells us)
 *                                can be taken off the total later
 *   agentjail:key:NAME:runscan   where the next look for expired ones
 *                                starts in the set
 * A record costs RECORD_COST besides its events and result, so a flood of
 * empty runs is paid for too (as the memory store's overhead). */
#define RECORD_COST BUDGET_RECORD_COST

/* Shared by the scripts that touch the total: forget(id) takes a record
 * off its key's set and total. Uses KEYS[1] (set), KEYS[3] (sizes),
 * KEYS[4] (total). */
#define FORGET_LUA                                                                  \
	"local function forget(id)\n"                                               \
	"  local b = tonumber(redis.call('HGET', KEYS[3], id) or '0')\n"            \
	"  if b ~= 0 then redis.call('DECRBY', KEYS[4], b) end\n"                   \
	"  redis.call('HDEL', KEYS[3], id)\n"                                       \
	"  redis.call('ZREM', KEYS[1], id)\n"                                       \
	"end\n"

/* The budget, then the new record, in one step. First at most 32 of the
 * key's records, from where the last look ended (round the set), whose
 * hash Redis expired are taken off the total; then, only while the total
 * and the new record's cost pass the budget, its oldest ended records are
 * deleted, oldest first, a batch at a time; still over (its live runs
 * hold it): -1, and no record. KEYS: the key's set, the new hash, sizes,
 * total, scan cursor; ARGV: budget, owner, background, session_id,
 * expiry, id, the seconds after which a run no worker took is given up
 * (0: never), the seconds the record is kept after its end (what a
 * worker's poller renews by), what the record holds while live (its
 * fixed cost and its reservation: run_info.reserve), its fixed cost, its
 * webhook URL ('': none).
 * Times are Redis's clock: one clock for every serve and worker. */
static const char create_lua[] =
	FORGET_LUA BUDGET_FITS_LUA
	"local budget, cost = tonumber(ARGV[1]), tonumber(ARGV[9])\n"
	"local n = redis.call('ZCARD', KEYS[1])\n"
	"if n > 0 then\n"
	"  local from = tonumber(redis.call('GET', KEYS[5]) or '0')\n"
	"  if from >= n then from = 0 end\n"
	"  local ids = redis.call('ZRANGE', KEYS[1], from, from + 31)\n"
	"  local gone = 0\n"
	"  for _, id in ipairs(ids) do\n"
	"    if redis.call('EXISTS', 'agentjail:run:' .. id) == 0 then\n"
	"      forget(id)\n"
	"      gone = gone + 1\n"
	"    end\n"
	"  end\n"
	"  redis.call('SET', KEYS[5], from + #ids - gone, 'EX', ARGV[5])\n"
	"end\n"
	"local used = tonumber(redis.call('GET', KEYS[4]) or '0')\n"
	"local at = 0\n"
	"while not fits(used, cost, budget) do\n"
	"  local ids = redis.call('ZRANGE', KEYS[1], at, at + 31)\n"
	"  if #ids == 0 then break end\n"
	"  for _, id in ipairs(ids) do\n"
	"    if fits(used, cost, budget) then break end\n"
	"    local h = 'agentjail:run:' .. id\n"
	"    local s = redis.call('HGET', h, 'state')\n"
	"    if not s or s == 'done' then\n"
	"      redis.call('DEL', h, h .. ':events')\n"
	"      forget(id)\n"
	"      used = tonumber(redis.call('GET', KEYS[4]) or '0')\n"
	"    else\n"
	"      at = at + 1\n"
	"    end\n"
	"  end\n"
	"end\n"
	"if not fits(used, cost, budget) then return -1 end\n"
	"local t = redis.call('TIME')\n"
	"local created = string.format('%.6f', t[1] + t[2] / 1e6)\n"
	"redis.call('HSET', KEYS[2], 'owner', ARGV[2], 'state', 'queued', 'created', created,\n"
	"  'background', ARGV[3], 'session_id', ARGV[4], 'bytes', ARGV[10], 'reserve', cost,\n"
	"  'keep', ARGV[8])\n"
	"if ARGV[11] ~= '' then redis.call('HSET', KEYS[2], 'webhook', ARGV[11]) end\n"
	"if tonumber(ARGV[7]) > 0 then\n"
	"  redis.call('HSET', KEYS[2], 'deadline', string.format('%.6f', created + ARGV[7]))\n"
	"end\n"
	"redis.call('EXPIRE', KEYS[2], ARGV[5])\n"
	"redis.call('ZADD', KEYS[1], created, ARGV[6])\n"
	"redis.call('HSET', KEYS[3], ARGV[6], cost)\n"
	"redis.call('INCRBY', KEYS[4], cost)\n"
	"for i = 1, 4 do if i ~= 2 then redis.call('EXPIRE', KEYS[i], ARGV[5]) end end\n"
	"return 0\n";

/* A record's growth onto its key's total: the owner's sizes and total by
 * name (the hash says whose it is). h: the record's hash, its id after
 * 'agentjail:run:', n: bytes, ended: its end (its reservation is over).
 * A live record counts its reservation, or what it holds if more; an
 * ended one what it holds. */
#define GROW_LUA                                                                    \
	"local function grow(h, owner, n, ended)\n"                                 \
	"  local b = redis.call('HINCRBY', h, 'bytes', n)\n"                        \
	"  local r = tonumber(redis.call('HGET', h, 'reserve') or '0')\n"           \
	"  local charge = b\n"                                                      \
	"  if not ended and r > b then charge = r end\n"                            \
	"  if not owner then return end\n"                                          \
	"  local k, id = 'agentjail:key:' .. owner, string.sub(h, 15)\n"            \
	"  local old = tonumber(redis.call('HGET', k .. ':runsize', id) or '0')\n"  \
	"  if charge ~= old then\n"                                                 \
	"    redis.call('HSET', k .. ':runsize', id, charge)\n"                     \
	"    redis.call('INCRBY', k .. ':runbytes', charge - old)\n"                \
	"  end\n"                                                                   \
	"end\n"

/* A record gone from its key's set and total, if its hash is gone
 * (expired). KEYS: set, hash, sizes, total; ARGV: id. */
static const char forget_lua[] =
	FORGET_LUA
	"if redis.call('EXISTS', KEYS[2]) == 0 then forget(ARGV[1]) end\n"
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
	GROW_LUA
	"local f = redis.call('HMGET', KEYS[1], 'state', 'owner')\n"
	"local s = f[1]\n"
	"if not s or s == 'done' then return 0 end\n"
	"if ARGV[4] ~= '' then\n"
	"  redis.call('XADD', KEYS[2], '0-*', 'kind', ARGV[1], 'data', ARGV[2], 'name', ARGV[4],\n"
	"    'mime', ARGV[5])\n"
	"else\n"
	"  redis.call('XADD', KEYS[2], '0-*', 'kind', ARGV[1], 'data', ARGV[2])\n"
	"end\n"
	"grow(KEYS[1], f[2], #ARGV[2] + #ARGV[4] + #ARGV[5], false)\n"
	"redis.call('EXPIRE', KEYS[2], ARGV[3])\n"
	"return 1\n";

/* The end, exactly once: whoever comes second (the worker's result after
 * a reader's lost answer, or the reverse) changes nothing. A record with a
 * webhook makes its delivery due now in RUNS_REDIS_HOOKS, in the same
 * step, whoever ends it (a worker, a reader, the serve that sent it): any
 * replica takes it from there. KEYS: hash, events; ARGV: result, keep. */
static const char finish_lua[] =
	GROW_LUA
	"local f = redis.call('HMGET', KEYS[1], 'state', 'owner')\n"
	"local s = f[1]\n"
	"if not s or s == 'done' then return 0 end\n"
	"local x = redis.call('XADD', KEYS[2], '0-*', 'kind', 'result', 'data', ARGV[1])\n"
	"local t = redis.call('TIME')\n"
	"redis.call('HSET', KEYS[1], 'state', 'done', 'ended',\n"
	"  string.format('%.6f', t[1] + t[2] / 1e6), 'result', ARGV[1], 'last', string.sub(x, 3))\n"
	"grow(KEYS[1], f[2], 2 * #ARGV[1], true)\n"
	"redis.call('EXPIRE', KEYS[1], ARGV[2])\n"
	"redis.call('EXPIRE', KEYS[2], ARGV[2])\n"
	"if redis.call('HEXISTS', KEYS[1], 'webhook') == 1 then\n"
	"  redis.call('ZADD', '" RUNS_REDIS_HOOKS "', t[1] * 1000 + math.floor(t[2] / 1000),\n"
	"    string.sub(KEYS[1], 15))\n"
	"end\n"
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
	const char *av[20];
	size_t al[20];
	char nk[8];
	snprintf(nk, sizeof nk, "%d", nkeys);
	av[0] = "EVAL", al[0] = 4;
	av[1] = lua, al[1] = strlen(lua);
	av[2] = nk, al[2] = strlen(nk);
	for (int i = 0; i < argc && i < 17; i++) {
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
	char set[128], sizes[128], total[128], scan[128], hash[64], events[72], budget[32],
		expiry[32], give_up[32], cost[32], fixed[32];
	keys_of(id, hash, events);
	snprintf(set, sizeof set, "agentjail:key:%s:runs", owner);
	snprintf(sizes, sizeof sizes, "agentjail:key:%s:runsize", owner);
	snprintf(total, sizeof total, "agentjail:key:%s:runbytes", owner);
	snprintf(scan, sizeof scan, "agentjail:key:%s:runscan", owner);
	snprintf(cost, sizeof cost, "%zu", budget_cost(st->budget, info->reserve));
	snprintf(fixed, sizeof fixed, "%d", RECORD_COST);
	snprintf(budget, sizeof budget, "%zu", st->budget);
	snprintf(expiry, sizeof expiry, "%ld", live_sec(st));
	const struct redis_store *rs = st->impl;
	snprintf(give_up, sizeof give_up, "%.3f",
		 info->session ? rs->give_up_session : rs->give_up_run);
	char keep[32];
	snprintf(keep, sizeof keep, "%ld", (long)st->keep_sec > 0 ? (long)st->keep_sec : 1);
	const char *argv[] = {set,    hash,	sizes, total,
			      scan,   budget, owner, info->background ? "1" : "0",
			      info->session ? info->session_id : "",
			      expiry, id,	give_up, keep, cost, fixed,
			      info->webhook ? info->webhook : ""};
	long long v = script(c, err, create_lua, 5, argv, NULL, 16);
	queue_put(qof(st), c, v == -2);
	if (v == -2)
		return -EIO;
	if (v == -1)
		return budget_refusal(err, owner, st->budget);
	return 0;
}

bool remote_store_started(struct run_store *st, const char *id, const char *worker)
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
	remote_store_started(st, id, "");
}

static const char *const kind_names[] = {"stdout", "stderr", "image", "result"};

static void rappend(struct run_store *st, const char *id, enum run_event_kind kind,
		    const char *data, size_t len, const char *name, const char *mime)
{
	struct aj_error err;
	redisContext *c = queue_get(qof(st), 5.0, &err);
	if (!c) {
		lost_mark(st->impl, id);
		fprintf(stderr, "agentjail: run %s: an event is lost: %s\n", id, err.message);
		return;
	}
	char hash[64], events[72], expiry[32];
	keys_of(id, hash, events);
	snprintf(expiry, sizeof expiry, "%ld", live_sec(st));
	const char *argv[] = {hash, events, kind_names[kind], data, expiry, name ? name : "",
			      mime ? mime : ""};
	size_t lens[] = {strlen(hash), strlen(events), strlen(kind_names[kind]), len,
			 strlen(expiry), strlen(argv[5]), strlen(argv[6])};
	long long v = script(c, &err, append_lua, 2, argv, lens, 7);
	queue_put(qof(st), c, v == -2);
	if (v == -2) {
		/* A gap a reader cannot see: the result will name it. */
		lost_mark(st->impl, id);
		fprintf(stderr, "agentjail: run %s: an event is lost: %s\n", id, err.message);
	}
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
	json_t *copy = lost_take(st->impl, id) ? json_copy(result) : NULL;
	if (copy) {
		json_object_set_new(copy, "events_lost", json_true());
		result = copy;
	}
	bool lost = json_is_true(json_object_get(result, "lost"));
	bool may = json_is_true(json_object_get(result, "may_have_started"));
	char *text = json_dumps(result, JSON_COMPACT);
	json_decref(copy);
	redisContext *c = text ? queue_get(qof(st), 5.0, &err) : NULL;
	int won = -1;
	if (c) {
		won = finish_text(st, c, id, text);
		queue_put(qof(st), c, won < 0);
	}
	free(text);
	const struct redis_store *rs = st->impl;
	/* Counted where it ended: a reader may have ended it first. */
	if (won == 1 && lost && rs->on_lost)
		rs->on_lost(rs->on_lost_arg, may);
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
	/* Whichever reader (of any serve replica) won tells the log and
	 * its metrics once. */
	const struct redis_store *rs = st->impl;
	if (won == 1) {
		fprintf(stderr, "agentjail serve: recorded run %s lost (%s): %s\n", id,
			never ? "it never started" : "it may have started", msg);
		if (rs->on_lost)
			rs->on_lost(rs->on_lost_arg, !never);
	}
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
	const struct redis_store *rs = st->impl;
	if (!rc && info.state == RUN_QUEUED && rs->on_cancel)
		rs->on_cancel(rs->on_cancel_arg, id);
	return rc;
}

static bool rcancel_requested(struct run_store *st, const char *id)
{
	bool cancel = false;
	remote_store_poll(st, &id, 1, &cancel);
	return cancel;
}

int remote_store_poll(struct run_store *st, const char *const *ids, size_t n, bool *cancel)
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

/* An expired record off its key's set and total. */
static void forget_expired(redisContext *c, const char *owner, const char *id)
{
	struct aj_error err;
	char set[128], sizes[128], total[128], hash[64], events[72];
	keys_of(id, hash, events);
	snprintf(set, sizeof set, "agentjail:key:%s:runs", owner);
	snprintf(sizes, sizeof sizes, "agentjail:key:%s:runsize", owner);
	snprintf(total, sizeof total, "agentjail:key:%s:runbytes", owner);
	const char *argv[] = {set, hash, sizes, total, id};
	script(c, &err, forget_lua, 4, argv, NULL, 5);
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
				forget_expired(c, owner, r->element[i]->str);
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
	struct redis_store *rs = st->impl;
	while (rs && rs->lost) {
		struct lost_run *l = rs->lost;
		rs->lost = l->next;
		free(l);
	}
	if (rs)
		pthread_mutex_destroy(&rs->lost_lock);
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

void remote_store_give_up(struct run_store *st, double run_sec, double session_sec)
{
	struct redis_store *r = st->impl;
	r->give_up_run = run_sec;
	r->give_up_session = session_sec;
}

void remote_store_on_lost(struct run_store *st, void (*fn)(void *arg, bool may_have_started),
			void *arg)
{
	struct redis_store *r = st->impl;
	r->on_lost = fn;
	r->on_lost_arg = arg;
}

void remote_store_on_cancel(struct run_store *st, void (*fn)(void *arg, const char *id),
			  void *arg)
{
	struct redis_store *r = st->impl;
	r->on_cancel = fn;
	r->on_cancel_arg = arg;
}

int remote_store_open(struct run_store *st, struct queue *q, double keep_sec, size_t budget,
		    struct aj_error *err)
{
	struct redis_store *r = calloc(1, sizeof *r);
	if (!r)
		return error_set(err, -ENOMEM, "runs: out of memory");
	r->q = q;
	pthread_mutex_init(&r->lost_lock, NULL);
	*st = (struct run_store){.ops = &redis_ops, .keep_sec = keep_sec, .budget = budget, .impl = r,
				 .schedules_webhooks = true};
	return 0;
}
