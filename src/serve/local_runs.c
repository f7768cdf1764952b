/* Recorded runs on this machine. The route makes the record and takes the
 * run's place in the queue; a thread of the run's own then waits for its
 * turn (the record "queued" meanwhile), runs it streaming into the store,
 * and ends the record with the answer a plain POST would have had. No
 * client connection is in that path: the SSE answer is only a reader of
 * the record, so a client that drops or never reads changes nothing for
 * the run.
 *
 * Cancel: the runner gives its aj_cancel token to the memory store
 * (runs_mem_set_cancel), and DELETE's cancel fires it there, at once. A
 * run cancelled while queued ends, once its turn comes, without running. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "local_runs.h"
#include "runs_mem.h"

struct runner {
	struct service *svc;
	char id[33];
	struct key_use *use;
	char *code;
	size_t len;
	struct aj_limits limits;
	struct egress_keep keep;
	struct hsession *session; /* a session's call: a reference held */
	double t0;                /* when it was asked for, now_ms() / 1e3 */
};

static void to_store(void *arg, const struct aj_event *ev)
{
	struct runner *r = arg;
	struct run_store *st = &r->svc->runs;
	enum run_event_kind k = ev->kind == AJ_EVENT_STDOUT   ? RUN_EV_STDOUT
				: ev->kind == AJ_EVENT_STDERR ? RUN_EV_STDERR
							      : RUN_EV_IMAGE;
	st->ops->append(st, r->id, k, ev->data, ev->len, ev->name, ev->mime);
}

/* The refusal admission wrote into rs as the record's result. */
static json_t *refusal_result(struct http_response *rs, const char *id)
{
	json_t *o = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
	free(rs->body);
	rs->body = NULL;
	if (o)
		json_object_set_new(o, "run_id", json_string(id));
	return o;
}

/* The run itself, its turn come: its answer. */
static json_t *run_turn(struct runner *r)
{
	struct service *svc = r->svc;
	struct run_store *st = &svc->runs;
	st->ops->started(st, r->id);
	struct aj_cancel *cancel = NULL;
	if (aj_cancel_new(&cancel))
		cancel = NULL; /* runs, but cannot be cancelled: said below if asked */
	runs_mem_set_cancel(st, r->id, cancel);
	struct aj_stream stream = {.fn = to_store, .arg = r};
	struct aj_result res;
	if (st->ops->cancel_requested(st, r->id)) {
		/* Cancelled while it waited: it never starts. */
		result_init(&res);
		res.status = AJ_STATUS_KILLED;
		result_set_message(&res, "cancelled by the caller before it started");
		result_ensure_streams(&res);
	} else if (r->session) {
		int rc = aj_session_run_streaming(r->session->s, r->code, r->len, cancel, &stream,
						  &res);
		if (rc == -ESHUTDOWN) {
			const char *why = aj_session_closed_reason(r->session->s);
			char msg[256];
			snprintf(msg, sizeof msg, "the session is closed, because %s",
				 why ? why : "it was deleted");
			aj_result_free(&res);
			runs_mem_set_cancel(st, r->id, NULL);
			aj_cancel_free(cancel);
			return run_failure_json("session_closed", r->id, false, false, msg);
		}
	} else {
		local_run_streaming(&svc->local, &r->limits, &r->keep, r->code, r->len, cancel,
				    &stream, &res);
	}
	runs_mem_set_cancel(st, r->id, NULL);
	aj_cancel_free(cancel);
	return run_answer(svc, r->id, &res, r->t0);
}

static void runner_free(struct runner *r)
{
	if (r->session)
		sessions_put(&r->svc->sessions, r->session);
	free(r->code);
	free(r);
}

static void runner_exit(struct local *l)
{
	pthread_mutex_lock(&l->runners_lock);
	if (--l->runners == 0)
		pthread_cond_broadcast(&l->runners_done);
	pthread_mutex_unlock(&l->runners_lock);
}

static void *runner_main(void *arg)
{
	struct runner *r = arg;
	struct service *svc = r->svc;
	struct http_response refusal = {0};
	json_t *result;
	bool admitted = !service_admit_start(svc, r->use, &refusal);
	result = admitted ? run_turn(r) : refusal_result(&refusal, r->id);
	if (!result)
		result = run_failure_json("internal", r->id, false, false, "out of memory");
	/* The record ends before the slot is given back: once the drain
	 * sees no run, every record is done and its readers can end. */
	svc->runs.ops->finish(&svc->runs, r->id, result);
	json_decref(result);
	if (admitted)
		admit_finish(&svc->adm, r->use);
	runner_free(r);
	runner_exit(&svc->local);
	return NULL;
}

/* The record and the runner for r (its fields set but the owner's): 0, or
 * -1 with the refusal in rs; r is the runner's, or freed, either way. */
static int record_start(struct service *svc, const struct http_request *rq,
			struct http_response *rs, struct runner *r, const struct run_info *info)
{
	struct run_store *st = &svc->runs;
	struct aj_error err = {0};
	r->svc = svc;
	r->use = admission_use(&svc->adm, rq->key);
	r->t0 = now_ms() / 1e3;
	if (service_admit_enter(svc, r->use, rs)) {
		runner_free(r);
		return -1;
	}
	int rc = st->ops->create(st, r->id, rq->key->name, info, &err);
	if (rc) {
		admit_abandon(&svc->adm, r->use);
		runner_free(r);
		if (rc == -EDQUOT) {
			respond_error(rs, 429, "runs_budget", "%s", err.message);
			rs->retry_after = 5;
		} else {
			respond_error(rs, 503, "runs_unavailable", "%s", err.message);
		}
		return -1;
	}
	struct local *l = &svc->local;
	pthread_mutex_lock(&l->runners_lock);
	l->runners++;
	pthread_mutex_unlock(&l->runners_lock);
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, runner_main, r);
	pthread_attr_destroy(&a);
	if (rc) {
		/* The record exists: it ends with the failure, as a run would. */
		admit_abandon(&svc->adm, r->use);
		json_t *o = run_failure_json("sandbox_unavailable", r->id, false, false,
					     "cannot start the run's thread");
		st->ops->finish(st, r->id, o);
		json_decref(o);
		runner_free(r);
		runner_exit(l);
	}
	return 0;
}

static struct runner *runner_new(const char *id, const char *code, size_t len)
{
	struct runner *r = calloc(1, sizeof *r);
	if (!r || !(r->code = malloc(len + 1))) {
		free(r);
		return NULL;
	}
	memcpy(r->code, code, len);
	r->code[len] = '\0';
	r->len = len;
	snprintf(r->id, sizeof r->id, "%s", id);
	return r;
}

int local_run_recorded(struct service *svc, const struct http_request *rq,
		       struct http_response *rs, const char *id,
		       const struct recorded_request *req)
{
	struct runner *r = runner_new(id, req->code, req->len);
	if (!r) {
		respond_error(rs, 500, "internal", "out of memory");
		return -1;
	}
	r->limits = req->limits;
	r->keep = req->keep;
	struct run_info info = {.background = req->background};
	return record_start(svc, rq, rs, r, &info);
}

int local_session_recorded(struct service *svc, const struct http_request *rq,
			   struct http_response *rs, const char *id, struct hsession *h,
			   const char *code, size_t len)
{
	struct runner *r = runner_new(id, code, len);
	if (!r) {
		respond_error(rs, 500, "internal", "out of memory");
		return -1;
	}
	/* The runner's own reference: the route's ends with its request. */
	if (!(r->session = sessions_get(&svc->sessions, h->id, h->owner))) {
		runner_free(r);
		respond_error(rs, 404, "not_found", "no such session");
		return -1;
	}
	struct run_info info = {.session = true};
	snprintf(info.session_id, sizeof info.session_id, "%s", h->id);
	return record_start(svc, rq, rs, r, &info);
}

void local_runs_wait(struct local *l)
{
	pthread_mutex_lock(&l->runners_lock);
	while (l->runners)
		pthread_cond_wait(&l->runners_done, &l->runners_lock);
	pthread_mutex_unlock(&l->runners_lock);
}
