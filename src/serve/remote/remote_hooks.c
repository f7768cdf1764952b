/* The queue backend's webhooks: their schedule lives in Redis, beside the
 * records, so that a background run's webhook is delivered whoever ends
 * its record and whichever serve replica is up then, a restarted one too.
 *
 * remote/store.c's end of a record with a webhook puts its id in
 * RUNS_REDIS_HOOKS, due now. The delivery threads of every replica
 * (webhook.c) ask this source for a due one: one script claims it for one
 * attempt (the attempt's number counted in the record, its score pushed
 * LEASE_MS on, so no other replica takes it meanwhile, and one that died
 * mid-attempt leaves it to the next after the lease), then the attempt's
 * outcome removes it (delivered, given up) or makes it due again after the
 * backoff, for whichever replica asks first. So each attempt is made once,
 * and a receiver gets one POST per delivery unless a replica dies between
 * its POST and its report (a receiver expects a record more than once).
 *
 * This replica sends only what it can sign and may send: the record's key
 * must be in its keys file with a webhook secret, and the URL under its
 * --webhook-allow; otherwise it is not sent, and says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote_hooks.h"
#include "remote_state.h"
#include "store.h"
#include "../webhook/webhook.h"
#include "../admit/webhook_run.h"

/* Longer than an attempt can take (WEBHOOK_TIMEOUT_SEC), with room: a
 * claim outlives its attempt unless its replica died. */
#define LEASE_MS 30000

/* The first due id, claimed for one attempt: {id, owner, url, attempt},
 * url '' when its record is gone or not ended (then it is dropped); {}
 * when none is due. KEYS: the schedule; ARGV: the lease. */
static const char claim_lua[] =
	"local t = redis.call('TIME')\n"
	"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
	"local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)\n"
	"if #due == 0 then return {} end\n"
	"local id = due[1]\n"
	"local h = 'agentjail:run:' .. id\n"
	"local f = redis.call('HMGET', h, 'owner', 'webhook', 'state')\n"
	"if not f[2] or f[3] ~= 'done' then\n"
	"  redis.call('ZREM', KEYS[1], id)\n"
	"  return {id, '', '', 0}\n"
	"end\n"
	"local n = redis.call('HINCRBY', h, 'hook_attempts', 1)\n"
	"redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), id)\n"
	"return {id, f[1], f[2], n}\n";

/* An attempt's outcome: over (delivered or given up: removed, the record
 * says which) or due again in ARGV[4] ms. KEYS: the schedule; ARGV: id,
 * delivered, last, the backoff. */
static const char done_lua[] =
	"local h = 'agentjail:run:' .. ARGV[1]\n"
	"if ARGV[2] == '1' or ARGV[3] == '1' then\n"
	"  redis.call('ZREM', KEYS[1], ARGV[1])\n"
	"  if redis.call('EXISTS', h) == 1 then\n"
	"    redis.call('HSET', h, 'hook', ARGV[2] == '1' and 'delivered' or 'given_up')\n"
	"  end\n"
	"else\n"
	"  local t = redis.call('TIME')\n"
	"  redis.call('ZADD', KEYS[1], t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[4]),\n"
	"    ARGV[1])\n"
	"end\n"
	"return 0\n";

static const struct key *key_named(const struct keyring *kr, const char *name)
{
	for (size_t i = 0; i < kr->count; i++)
		if (!strcmp(kr->keys[i].name, name))
			return &kr->keys[i];
	return NULL;
}

static void report_done(void *arg, const char *run_id, unsigned attempt, bool delivered, bool last)
{
	struct service *svc = arg;
	struct aj_error err = {0};
	redisContext *c = queue_get(&remote_of(svc)->queue, 5.0, &err);
	if (!c) {
		/* The claim's lease runs out: the next attempt is made then. */
		fprintf(stderr, "agentjail serve: webhook for run %s: %s; attempt %u's outcome "
				"not kept, the next comes after %d s\n",
			run_id, err.message, attempt, LEASE_MS / 1000);
		return;
	}
	char ms[32];
	snprintf(ms, sizeof ms, "%u", webhook_backoff(attempt) * 1000);
	redisReply *r = queue_cmd(c, &err, "EVAL %s 1 %s %s %s %s %s", done_lua, RUNS_REDIS_HOOKS,
				  run_id, delivered ? "1" : "0", last ? "1" : "0", ms);
	if (r)
		freeReplyObject(r);
	queue_put(&remote_of(svc)->queue, c, !r);
}

/* Says why a claimed delivery is not sent, and gives it up. */
static int not_sent(struct service *svc, const char *id, unsigned n, const char *why)
{
	fprintf(stderr, "agentjail serve: webhook for run %s: not sent: %s\n", id, why);
	report_done(svc, id, n, false, true);
	return 0;
}

static int take_due(void *arg, struct webhook_job *job)
{
	struct service *svc = arg;
	struct aj_error err = {0};
	redisContext *c = queue_get(&remote_of(svc)->queue, 5.0, &err);
	if (!c)
		return 0; /* Redis away: asked again at the next poll */
	char lease[16];
	snprintf(lease, sizeof lease, "%d", LEASE_MS);
	redisReply *r = queue_cmd(c, &err, "EVAL %s 1 %s %s", claim_lua, RUNS_REDIS_HOOKS, lease);
	queue_put(&remote_of(svc)->queue, c, !r);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 4) {
		if (r)
			freeReplyObject(r);
		return 0;
	}
	char owner[KEY_NAME_MAX + 1];
	snprintf(job->run_id, sizeof job->run_id, "%s", r->element[0]->str);
	snprintf(owner, sizeof owner, "%s", r->element[1]->str);
	job->url = strdup(r->element[2]->str);
	job->attempt = (unsigned)r->element[3]->integer;
	freeReplyObject(r);
	if (!job->url)
		return 0;
	if (!*job->url) {
		fprintf(stderr, "agentjail serve: webhook for run %s: not sent: its record is "
				"gone\n",
			job->run_id);
		return 0;
	}
	const struct key *key = key_named(&svc->keys, owner);
	if (!key)
		return not_sent(svc, job->run_id, job->attempt,
				"its key is not in this server's keys file");
	if (webhook_check(&svc->cfg, key, job->url, &err))
		return not_sent(svc, job->run_id, job->attempt, err.message);
	struct run_info info;
	if (svc->runs.ops->info(&svc->runs, job->run_id, owner, &info)) {
		/* Gone since (expired: --keep-runs shorter than the retries),
		 * or Redis failed: the lease brings it back in the latter case. */
		return 0;
	}
	json_t *body = run_info_json(&info);
	run_info_clear(&info);
	job->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	job->secret = strdup(key->webhook_secret);
	return job->body && job->secret ? 1 : 0;
}

void remote_hooks_start(struct service *svc)
{
	const struct webhook_source src = {.take = take_due, .done = report_done, .arg = svc};
	webhooks_set_source(svc->webhooks, &src);
}
