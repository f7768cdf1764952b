/* What a front says about a run that the service admitted or refused: a
 * run's answer, counted in the metrics, and the admission's refusals (429
 * and 503 with Retry-After), each worded once here for every route and
 * both backends. The answers that know no service are http/respond.c's. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "../../core/internal.h"
#include "service.h"

static uint64_t log_count(json_t *v)
{
	return json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

json_t *run_answer(struct service *svc, const char *id, struct aj_result *res, double t0)
{
	metrics_run(&svc->metrics, svc->cfg.sandbox.tier, res->status, now_ms() / 1e3 - t0);
	json_t *o = result_to_json_object(res, svc->cfg.sandbox.tier);
	/* The proxy's counts for this run, from the log the answer carries
	 * (a worker's run included): what /metrics adds up. */
	json_t *e = o ? json_object_get(o, "egress") : NULL;
	if (json_is_object(e))
		metrics_egress(&svc->metrics, log_count(json_object_get(e, "allowed")),
			       log_count(json_object_get(e, "denied")),
			       log_count(json_object_get(e, "failed")));
	/* The secrets the proxy put in, by name ({"GH": 2}): names only. */
	json_t *inj = json_object_get(e, "injections");
	const char *name;
	json_t *count;
	json_object_foreach(inj, name, count)
		metrics_injections(&svc->metrics, name, log_count(count));
	if (o)
		json_object_set_new(o, "run_id", json_string(id));
	aj_result_free(res);
	return o;
}

void respond_run(struct service *svc, struct http_response *rs, const char *id,
		 struct aj_result *res, double t0)
{
	snprintf(rs->log_run, sizeof rs->log_run, "%s", id);
	snprintf(rs->log_verdict, sizeof rs->log_verdict, "%s", aj_status_name(res->status));
	respond_json(rs, 200, run_answer(svc, id, res, t0));
}

static bool refused(struct service *svc, enum admit_verdict v, unsigned retry,
		    struct http_response *rs)
{
	if (v == ADMIT_OK)
		return false;
	metrics_refused(&svc->metrics, v);
	switch (v) {
	case ADMIT_QUEUE_FULL:
		respond_error(rs, 429, "queue_full",
			      "%u runs are running and %u waiting, the most this server queues; "
			      "retry after %u s",
			      admission_concurrency(&svc->adm), svc->cfg.queue_size, retry);
		break;
	case ADMIT_RATE:
		respond_error(rs, 429, "rate_limited", "this key used its runs per minute; retry "
			      "after %u s", retry);
		break;
	case ADMIT_DRAINING:
		respond_error(rs, 503, "shutting_down", "the server is shutting down");
		break;
	case ADMIT_NO_WORKER:
		respond_error(rs, 503, "no_worker",
			      "no live %s worker offered a run slot within %g s (start one: "
			      "agentjail worker --queue URL --tier %s, with this server's queue "
			      "URL)",
			      aj_tier_name(svc->cfg.sandbox.tier), svc->cfg.max_wait_sec,
			      aj_tier_name(svc->cfg.sandbox.tier));
		/* Never the URL itself: it names the Redis that holds every
		 * key's runs, and a client has no business with it. */
		break;
	default:
		respond_error(rs, 503, "queue_timeout", "no run slot came free within %g s",
			      svc->cfg.max_wait_sec);
		break;
	}
	rs->retry_after = retry;
	return true;
}

int service_admit_enter(struct service *svc, struct key_use *u, struct http_response *rs)
{
	unsigned retry = 0;
	enum admit_verdict v = admit_enter(&svc->adm, u, &retry);
	return refused(svc, v, retry, rs) ? -1 : 0;
}

int service_admit_start(struct service *svc, struct key_use *u, struct admit_ticket *t,
			struct http_response *rs)
{
	unsigned retry = 0;
	enum admit_verdict v = admit_start(&svc->adm, u, t, &retry);
	if (v == ADMIT_CALLED_OFF)
		return 1;
	return refused(svc, v, retry, rs) ? -1 : 0;
}

int service_admit(struct service *svc, struct key_use *u, struct http_response *rs)
{
	if (service_admit_enter(svc, u, rs))
		return -1;
	return service_admit_start(svc, u, NULL, rs);
}
