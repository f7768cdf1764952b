/* How a recorded run begins (runs_begin.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "../http/access_log.h"
#include "runs_begin.h"
#include "../webhook/webhook.h"
#include "../../core/thread.h"
#include "webhook_run.h"

int runs_begin(struct service *svc, const struct http_request *rq, struct http_response *rs,
	       const char *id, const struct run_info *info, struct key_use **use,
	       struct runners *rn, void *(*fn)(void *), void *arg)
{
	struct run_store *st = &svc->runs;
	struct aj_error err = {0};
	*use = admission_use(&svc->adm, rq->key);
	if (service_admit_enter(svc, *use, rs))
		return -1;
	int rc = st->ops->create(st, id, rq->key->name, info, &err);
	if (rc) {
		admit_abandon(&svc->adm, *use);
		if (rc == -EDQUOT)
			respond_error(rs, 429, "runs_budget", "%s", err.message);
		else
			respond_error(rs, 503, "runs_unavailable", "%s", err.message);
		rs->retry_after = 5;
		return -1;
	}
	pthread_mutex_lock(&rn->lock);
	rn->n++;
	pthread_mutex_unlock(&rn->lock);
	rc = thread_start_detached(fn, arg, 0);
	if (!rc)
		return 0;
	/* The record exists: it ends with the failure, as a run would. */
	admit_abandon(&svc->adm, *use);
	json_t *o = run_failure_json("sandbox_unavailable", id, false, false,
				     "cannot start the run's thread");
	st->ops->finish(st, id, o);
	json_decref(o);
	runners_exit(rn);
	return 1;
}

int run_hook_set(struct run_hook *h, const struct http_request *rq, struct http_response *rs,
		 const char *webhook)
{
	h->key = rq->key;
	h->route = access_log_route(rq->path);
	h->t0 = now_ms();
	if (webhook && !(h->webhook = strdup(webhook))) {
		respond_error(rs, 500, "internal", "out of memory");
		return -1;
	}
	return 0;
}

void run_hook_clear(struct run_hook *h)
{
	free(h->webhook);
	h->webhook = NULL;
}

void runs_end(struct service *svc, const char *id, json_t *end, bool left,
	      const struct run_hook *hook, struct key_use *use)
{
	if (!left) {
		if (!end)
			end = run_failure_json("internal", id, false, false, "out of memory");
		/* Its line in the access log: how it ended, a status or the
		 * error's code. */
		const char *verdict = json_string_value(json_object_get(end, "status"));
		if (!verdict)
			verdict = json_string_value(
				json_object_get(json_object_get(end, "error"), "code"));
		access_log_run(hook->key ? hook->key->name : NULL, hook->route ? hook->route : "",
			       id, svc->cfg.sandbox.tier, hook->t0 ? now_ms() - hook->t0 : 0,
			       verdict);
		/* The record ends before the slot is given back: once the drain
		 * sees no run, every record is done and its readers can end. A
		 * worker may have ended it already: then this changes nothing. */
		if (end)
			svc->runs.ops->finish(&svc->runs, id, end);
		/* A store that schedules webhooks made it due as the record
		 * ended. */
		if (hook->webhook && !svc->runs.schedules_webhooks)
			webhook_run_done(svc, hook->key, hook->webhook, id);
	}
	json_decref(end);
	if (use)
		admit_finish(&svc->adm, use);
}

void runners_exit(struct runners *rn)
{
	pthread_mutex_lock(&rn->lock);
	if (--rn->n == 0)
		pthread_cond_broadcast(&rn->done);
	pthread_mutex_unlock(&rn->lock);
}

void runners_wait(struct runners *rn)
{
	pthread_mutex_lock(&rn->lock);
	while (rn->n)
		pthread_cond_wait(&rn->done, &rn->lock);
	pthread_mutex_unlock(&rn->lock);
}

json_t *runs_refusal_end(struct http_response *rs, const char *id)
{
	json_t *o = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
	free(rs->body);
	rs->body = NULL;
	if (o)
		json_object_set_new(o, "run_id", json_string(id));
	return o;
}

void runs_cancelled_result(struct aj_result *res)
{
	result_init(res);
	res->status = AJ_STATUS_KILLED;
	result_set_message(res, "cancelled by the caller before it started");
	result_ensure_streams(res);
}
