/* Recorded runs through the queue (backend_ops.run_recorded of the queue
 * backend, and a session's recorded call). The record is made in Redis
 * (remote/store.c) and the request goes to a worker with "record": true:
 * the worker writes the events and the end there as they happen, so any
 * serve replica's reader follows them, and they outlive this serve.
 *
 * A thread of the run's own here waits for its turn and for the worker's
 * answer, as a plain run's request does, for what no worker can write: no
 * worker took it, Redis was lost, the worker died (a reader may find that
 * first: the record ends once, whoever ends it). When serve stops, the
 * thread stops waiting for a run a worker holds (it goes on there, and
 * ends its record); one no worker took yet is abandoned and ends saying
 * it never started. Cancel: DELETE marks the record; the worker that runs
 * it polls the mark and fires the run's aj_cancel. A run still waiting
 * here for its turn when this replica takes its DELETE leaves the queue at
 * once (queue_run_call_off) and ends unsent.
 *
 * Webhook: the record keeps it, and its end (whoever ends it) makes it
 * due in Redis, where any replica's delivery threads take it
 * (remote_hooks.c): a run left to its worker when serve stopped has its
 * webhook delivered by the next serve. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "remote.h"
#include "remote_runs.h"
#include "remote_state.h"
#include "../admit/runs_begin.h"
#include "../http/wire.h"

struct qrunner {
	struct service *svc;
	char id[33];
	struct key_use *use;
	json_t *req;       /* what the worker is sent */
	char worker[128];  /* a session's call: the worker that holds it */
	double run_sec;
	double t0;
	struct run_hook hook;
	struct admit_ticket ticket; /* its wait for its turn, called off by a cancel */
	struct qrunner *next_waiting;
};

/* The runs waiting here for their turn: a cancel taken by this replica
 * calls theirs off (queue_run_call_off), so each leaves the queue at once. */
static pthread_mutex_t waiting_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qrunner *waiting;

static void wait_list(struct qrunner *r, bool add)
{
	pthread_mutex_lock(&waiting_lock);
	struct qrunner **p = &waiting;
	while (*p && *p != r)
		p = &(*p)->next_waiting;
	if (add && !*p) {
		r->next_waiting = waiting;
		waiting = r;
	} else if (!add && *p) {
		*p = r->next_waiting;
	}
	pthread_mutex_unlock(&waiting_lock);
}

void queue_run_call_off(struct service *svc, const char *id)
{
	pthread_mutex_lock(&waiting_lock);
	for (struct qrunner *r = waiting; r; r = r->next_waiting)
		if (!strcmp(r->id, id))
			admit_call_off(&svc->adm, &r->ticket);
	pthread_mutex_unlock(&waiting_lock);
}

/* The threads of recorded runs still waiting: the backend's stop waits
 * for them (they notice the drain within a second). */
static struct runners runners = RUNNERS_INIT;

/* The record's end for what remote_call said: the answer a plain POST
 * would have had (or a session call's); NULL when it was left to its
 * worker. */
static json_t *end_of(struct qrunner *r, enum remote_failure f, json_t *reply, bool taken,
		      const struct aj_error *err)
{
	struct service *svc = r->svc;
	bool session = *r->worker;
	const char *code = json_string_value(json_object_get(reply, "code"));
	switch (f) {
	case REMOTE_OK: {
		struct aj_result res;
		result_from_json(json_object_get(reply, "result"), &res, NULL);
		return run_answer(svc, r->id, &res, r->t0);
	}
	case REMOTE_DETACHED:
		return NULL;
	case REMOTE_REFUSED:
		if (session && code && (!strcmp(code, "closed") || !strcmp(code, "not_found")))
			code = "session_closed";
		return run_failure_json(code ? code : "refused", r->id, false, false, err->message);
	case REMOTE_NO_WORKER:
		return run_failure_json("no_worker", r->id, false, false, err->message);
	case REMOTE_LOST:
	case REMOTE_UNKNOWN: {
		/* Counted by the store if this ends the record (a reader may
		 * have ended it lost first: counted then, once). */
		bool may = f == REMOTE_UNKNOWN || taken;
		char msg[1100];
		snprintf(msg, sizeof msg, session ? "the session is closed, because %s" : "%s",
			 err->message);
		return run_failure_json(session ? "session_closed" : "run_lost", r->id, true, may,
					msg);
	}
	default:
		return run_failure_json("queue_unavailable", r->id, false, false, err->message);
	}
}

static void qrunner_free(struct qrunner *r)
{
	json_decref(r->req);
	run_hook_clear(&r->hook);
	free(r);
}

static void *qrunner_main(void *arg)
{
	struct qrunner *r = arg;
	struct service *svc = r->svc;
	struct http_response refusal = {0};
	json_t *end;
	bool detached = false;
	wait_list(r, true);
	int turn = service_admit_start(svc, r->use, &r->ticket, &refusal);
	wait_list(r, false);
	bool admitted = turn == 0;
	if (turn > 0) {
		/* Cancelled while it waited here: it left the queue then, and
		 * ends now, never sent to a worker. */
		struct aj_result res;
		runs_cancelled_result(&res);
		end = run_answer(svc, r->id, &res, r->t0);
	} else if (!admitted) {
		end = runs_refusal_end(&refusal, r->id);
	} else {
		struct aj_error err = {0};
		json_t *reply = NULL;
		bool taken = true;
		enum remote_failure f = remote_call_until(
			&remote_of(svc)->queue, svc->cfg.sandbox.tier, *r->worker ? r->worker : NULL, r->id, r->req,
			*r->worker ? SESSION_TAKE_SEC : svc->cfg.max_wait_sec, r->run_sec,
			&svc->draining, &reply, &taken, &err);
		end = end_of(r, f, reply, taken, &err);
		detached = f == REMOTE_DETACHED;
		if (f != REMOTE_OK && f != REMOTE_DETACHED)
			fprintf(stderr, "agentjail serve: recorded run %s: %s\n", r->id, err.message);
		json_decref(reply);
	}
	runs_end(svc, r->id, end, detached, &r->hook, admitted ? r->use : NULL);
	qrunner_free(r);
	runners_exit(&runners);
	return NULL;
}

/* The record and the runner (r's request made): 0, or -1 with the
 * refusal in rs; r is the runner's, or freed, either way. */
static int qrunner_start(struct service *svc, const struct http_request *rq, struct http_response *rs,
		 struct qrunner *r, const struct run_info *info)
{
	r->svc = svc;
	r->t0 = now_ms() / 1e3;
	json_object_set_new(r->req, "record", json_true());
	/* The worker ends the record, and keeps it as long as serve would. */
	json_object_set_new(r->req, "keep_sec", json_real(svc->cfg.keep_runs_sec));
	int rc = runs_begin(svc, rq, rs, r->id, info, &r->use, &runners, qrunner_main, r);
	if (rc)
		qrunner_free(r);
	return rc < 0 ? -1 : 0;
}

json_t *queue_run_request(struct service *svc, const struct run_terms *t, const char *code,
			  size_t len)
{
	/* Another language is another op: a worker that knows no "language"
	 * refuses an op it does not know ("unknown op"), where it would run
	 * the code as Python under "run". */
	bool python = !t || t->lang == AJ_LANG_PYTHON;
	json_t *req = json_pack("{s:s, s:s%}", "op", python ? "run" : "run_language", "code", code,
				len);
	if (req && !t)
		json_object_set_new(req, "limits", limits_to_json(&svc->cfg.sandbox.limits));
	else if (req && terms_to_json(&svc->cfg.sandbox, t, req)) {
		json_decref(req);
		req = NULL;
	}
	return req;
}

static struct qrunner *qrunner_new(const char *id, json_t *req, double run_sec)
{
	struct qrunner *r = calloc(1, sizeof *r);
	if (!r || !req) {
		free(r);
		json_decref(req);
		return NULL;
	}
	snprintf(r->id, sizeof r->id, "%s", id);
	r->req = req;
	r->run_sec = run_sec;
	return r;
}

int queue_run_recorded(struct service *svc, const struct http_request *rq,
		       struct http_response *rs, const char *id,
		       const struct recorded_request *req)
{
	struct qrunner *r = qrunner_new(
		id, queue_run_request(svc, &req->terms, req->code, req->len),
		req->terms.limits.wall_sec);
	if (!r) {
		respond_error(rs, 500, "internal", "out of memory");
		return -1;
	}
	if (run_hook_set(&r->hook, rq, rs, req->webhook)) {
		qrunner_free(r);
		return -1;
	}
	struct run_info info = {.background = req->background,
				.reserve = run_reserve(&req->terms.limits, NULL),
				.webhook = req->webhook};
	return qrunner_start(svc, rq, rs, r, &info);
}

int queue_session_recorded(struct service *svc, const struct http_request *rq,
			   struct http_response *rs, const char *id, const char *session,
			   const char *worker, const struct call_body *call)
{
	struct qrunner *r = qrunner_new(id, call_body_request(call, session),
				       svc->cfg.sandbox.limits.wall_sec);
	if (!r) {
		respond_error(rs, 500, "internal", "out of memory");
		return -1;
	}
	snprintf(r->worker, sizeof r->worker, "%s", worker);
	if (run_hook_set(&r->hook, rq, rs, NULL)) {
		qrunner_free(r);
		return -1;
	}
	/* The deployer's caps: a session's own can only be narrower. */
	struct run_info info = {.session = true,
				.reserve = run_reserve(&svc->cfg.sandbox.limits,
						       &svc->cfg.sandbox.session)};
	snprintf(info.session_id, sizeof info.session_id, "%s", session);
	return qrunner_start(svc, rq, rs, r, &info);
}

void queue_runs_wait(void)
{
	runners_wait(&runners);
}
