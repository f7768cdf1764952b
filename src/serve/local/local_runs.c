/* Recorded runs on this machine. The route makes the record and takes the
 * run's place in the queue; a thread of the run's own then waits for its
 * turn (the record "queued" meanwhile), runs it streaming into the store,
 * and ends the record with the answer a plain POST would have had. No
 * client connection is in that path: the SSE answer is only a reader of
 * the record, so a client that drops or never reads changes nothing for
 * the run.
 *
 * Cancel: the runner gives its aj_cancel token to the memory store
 * (local_store_set_cancel), and DELETE's cancel fires it there, at once. A
 * run cancelled while queued leaves the queue at once (its wait is called
 * off: local_store_set_call_off) and ends without running. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "local_runs.h"
#include "local_state.h"
#include "../admit/call_secrets.h"
#include "../admit/runs_begin.h"
#include "store.h"

struct runner {
	struct service *svc;
	char id[33];
	struct key_use *use;
	char *code;
	size_t len;
	struct run_terms terms;   /* terms.secrets: the runner's own copy */
	struct hsession *session; /* a session's call: a reference held */
	struct call_body call;    /* ... and what it asks */
	double t0;                /* when it was asked for, now_ms() / 1e3 */
	struct run_hook hook;
	struct admit_ticket ticket; /* its wait, called off by a cancel */
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

/* The run itself, its turn come: its answer. */
static json_t *run_turn(struct runner *r)
{
	struct service *svc = r->svc;
	struct run_store *st = &svc->runs;
	st->ops->started(st, r->id);
	struct aj_cancel *cancel = NULL;
	if (aj_cancel_new(&cancel))
		cancel = NULL; /* runs, but cannot be cancelled: said below if asked */
	local_store_set_cancel(st, r->id, cancel);
	struct aj_stream stream = {.fn = to_store, .arg = r};
	struct aj_result res;
	if (st->ops->cancel_requested(st, r->id)) {
		/* Cancelled while it waited: it never starts. */
		runs_cancelled_result(&res);
	} else if (r->session) {
		int rc = call_body_run(r->session->s, &r->call, cancel, &stream, &res);
		if (rc == -ESHUTDOWN) {
			const char *why = aj_session_closed_reason(r->session->s);
			char msg[256];
			snprintf(msg, sizeof msg, "the session is closed, because %s",
				 why ? why : "it was deleted");
			aj_result_free(&res);
			local_store_set_cancel(st, r->id, NULL);
			aj_cancel_free(cancel);
			return run_failure_json("session_closed", r->id, false, false, msg);
		}
	} else {
		local_run_streaming(&local_of(svc)->local, &r->terms, r->code, r->len, cancel, &stream,
				    &res);
	}
	local_store_set_cancel(st, r->id, NULL);
	aj_cancel_free(cancel);
	return run_answer(svc, r->id, &res, r->t0);
}

static void runner_free(struct runner *r)
{
	if (r->session)
		sessions_put(&local_of(r->svc)->sessions, r->session);
	free(r->code);
	/* The run outlives its request: its secrets are its own, wiped here. */
	call_secrets_free((char *)r->terms.secrets);
	call_body_clear(&r->call);
	run_hook_clear(&r->hook);
	free(r);
}

/* A cancel while the run waits for its turn (the store calls it). */
static void call_off(void *arg)
{
	struct runner *r = arg;
	admit_call_off(&r->svc->adm, &r->ticket);
}

static void *runner_main(void *arg)
{
	struct runner *r = arg;
	struct service *svc = r->svc;
	struct http_response refusal = {0};
	local_store_set_call_off(&svc->runs, r->id, call_off, r);
	int turn = service_admit_start(svc, r->use, &r->ticket, &refusal);
	local_store_set_call_off(&svc->runs, r->id, NULL, NULL);
	bool admitted = turn == 0;
	json_t *result;
	if (admitted) {
		result = run_turn(r);
	} else if (turn > 0) {
		/* Cancelled while it waited: it left the queue then, and ends
		 * now, never run. */
		struct aj_result res;
		runs_cancelled_result(&res);
		result = run_answer(svc, r->id, &res, r->t0);
	} else {
		result = runs_refusal_end(&refusal, r->id);
	}
	runs_end(svc, r->id, result, false, &r->hook, admitted ? r->use : NULL);
	runner_free(r);
	runners_exit(&local_of(svc)->local.runners);
	return NULL;
}

/* The record and the runner for r (its fields set but the owner's): 0, or
 * -1 with the refusal in rs; r is the runner's, or freed, either way. */
static int record_start(struct service *svc, const struct http_request *rq, struct http_response *rs,
			struct runner *r, const struct run_info *info)
{
	r->svc = svc;
	r->t0 = now_ms() / 1e3;
	int rc = runs_begin(svc, rq, rs, r->id, info, &r->use, &local_of(svc)->local.runners, runner_main, r);
	if (rc)
		runner_free(r);
	return rc < 0 ? -1 : 0;
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
	r->terms = req->terms;
	r->terms.secrets = NULL;
	if (req->terms.secrets && !(r->terms.secrets = strdup(req->terms.secrets))) {
		runner_free(r);
		respond_error(rs, 500, "internal", "out of memory");
		return -1;
	}
	if (run_hook_set(&r->hook, rq, rs, req->webhook)) {
		runner_free(r);
		return -1;
	}
	struct run_info info = {.background = req->background,
				.reserve = run_reserve(&req->terms.limits, NULL)};
	return record_start(svc, rq, rs, r, &info);
}

int local_session_recorded(struct service *svc, const struct http_request *rq,
			   struct http_response *rs, const char *id, struct hsession *h,
			   struct call_body *call)
{
	struct runner *r = runner_new(id, "", 0);
	if (!r) {
		respond_error(rs, 500, "internal", "out of memory");
		return -1;
	}
	r->call = *call;
	*call = (struct call_body){0};
	/* The runner's own reference: the route's ends with its request. */
	if (!(r->session = sessions_get(&local_of(svc)->sessions, h->id, h->owner))) {
		runner_free(r);
		respond_error(rs, 404, "not_found", "no such session");
		return -1;
	}
	if (run_hook_set(&r->hook, rq, rs, NULL)) {
		runner_free(r);
		return -1;
	}
	/* The deployer's caps: a session's own can only be narrower. */
	struct run_info info = {.session = true,
				.reserve = run_reserve(&svc->cfg.sandbox.limits,
						       &svc->cfg.sandbox.session)};
	snprintf(info.session_id, sizeof info.session_id, "%s", h->id);
	return record_start(svc, rq, rs, r, &info);
}

void local_runs_wait(struct local *l)
{
	runners_wait(&l->runners);
}
