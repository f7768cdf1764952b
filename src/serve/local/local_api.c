/* The local backend: runs in this machine's sandboxes (local.c), sessions
 * in its own table (sessions.c). The answers are those of api.c. */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "../../core/internal.h"
#include "../../cli/cli.h"
#include "download.h"
#include "local_runs.h"
#include "local_state.h"
#include "session_list.h"
#include "session_state.h"
#include "../admit/call_secrets.h"
#include "../admit/narrow.h"
#include "../admit/service.h"
#include "../runs/sse.h"
#include "../../api/api.h"
#include "../admit/call_body.h"
#include "../admit/proc_call.h"
#include "../admit/proc_route.h"
#include "../http/wire.h"

static int local_backend_run(struct service *svc, const struct run_terms *t, const char *code,
			     size_t len, struct aj_cancel *cancel, struct run_fate *fate,
			     struct aj_result *res, struct aj_error *err)
{
	(void)fate;
	(void)err;
	local_run(&local_of(svc)->local, t, code, len, cancel, res);
	return 0;
}

static int local_backend_run_streaming(struct service *svc, const struct run_terms *t,
				       const char *code, size_t len, struct aj_cancel *cancel,
				       const struct aj_stream *stream,
				       struct run_fate *fate, struct aj_result *res,
				       struct aj_error *err)
{
	(void)fate;
	(void)err;
	local_run_streaming(&local_of(svc)->local, t, code, len, cancel, stream, res);
	return 0;
}

static void session_open(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const struct session_opening *o)
{
	if (o->from_checkpoint)
		return local_session_restore(svc, rq, rs, o);
	struct aj_error err = {0};
	struct hsession *h;
	const struct session_make m = {.cfg = o->cfg, .terms = o->terms};
	int rc = sessions_create(&local_of(svc)->sessions, &m, admission_use(&svc->adm, rq->key), &h,
				 &err);
	if (rc == -EDQUOT) {
		respond_error(rs, 429, "session_limit", "%s", err.message);
		rs->retry_after = 5;
	} else if (rc == -EMFILE) {
		respond_error(rs, 503, "session_limit", "%s", err.message);
		rs->retry_after = 5;
	} else if (rc) {
		respond_error(rs, 503, "sandbox_unavailable", "%s", err.message);
	} else {
		respond_json(rs, 201, local_session_json(o->cfg, h));
		sessions_put(&local_of(svc)->sessions, h);
	}
}

static void session_gone(struct http_response *rs, struct hsession *h)
{
	respond_error(rs, 410, "session_closed", "the session is closed, because %s",
		      aj_session_closed_reason(h->s) ? aj_session_closed_reason(h->s)
						     : "it was deleted");
}

/* A call on the session, code (.../runs) or a command (.../exec): the
 * same admission, record, stream and answer for both (call_body.h). */
static void session_run(struct service *svc, const struct http_request *rq,
			struct http_response *rs, struct hsession *h, bool exec)
{
	struct call_body b;
	if (call_body_read(rq, rs, exec, session_config(h->s), &b))
		return;
	if (accepts_sse(rq)) {
		/* Recorded, and the answer a reader of the record. */
		char rid[33];
		serve_id_new(rid);
		if (!local_session_recorded(svc, rq, rs, rid, h, &b) &&
		    sse_answer(rs, &svc->runs, rid, rq->key->name, 0, svc->cfg.idle_sec))
			respond_error(rs, 500, "internal", "out of memory");
		goto out;
	}
	struct key_use *u = admission_use(&svc->adm, rq->key);
	double t0 = now_ms() / 1e3;
	if (service_admit(svc, u, rs))
		goto out;
	struct aj_result res;
	int rc = call_body_run(h->s, &b, NULL, NULL, &res);
	admit_finish(&svc->adm, u);
	if (rc == -ESHUTDOWN || rc == -EAGAIN) {
		aj_result_free(&res);
		if (rc == -ESHUTDOWN)
			session_gone(rs, h);
		else
			respond_error(rs, 503, "sandbox_unavailable",
				      "cannot keep the call's timeout: out of memory or threads");
		goto out;
	}
	char id[33];
	serve_id_new(id);
	respond_run(svc, rs, id, &res, t0);
out:
	call_body_clear(&b);
}

/* Keep only the rules the body names; one the session lacks is refused,
 * named, and nothing changes (a call may drop rules, never add one). */
static void session_egress(struct session_table *t, const struct http_request *rq,
			   struct http_response *rs, struct hsession *h)
{
	static const char *const allowed[] = {"allow_hosts", "allow_cidrs", "secrets", NULL};
	json_t *o = request_body(rq, rs, allowed);
	if (!o)
		return;
	struct aj_error err = {0};
	json_t *names = json_object_get(o, "secrets");
	/* A body that names only secrets leaves the egress rules as they are:
	 * absent lists mean "keep none" only when the body is about rules. */
	bool rules = json_object_get(o, "allow_hosts") || json_object_get(o, "allow_cidrs") ||
		     !names;
	/* Secrets first: a name the session lacks changes nothing at all. */
	int rc = secrets_session_keep(h->s, o, &err);
	const char *code = "bad_secrets";
	if (!rc && rules) {
		code = "bad_egress";
		rc = egress_session_keep(h->s, o, &err);
	}
	if (rc == -ESHUTDOWN) {
		session_gone(rs, h);
	} else if (rc == -ENOSYS) {
		respond_error(rs, 501, "not_offered", "%s", err.message);
	} else if (rc) {
		bool half = names && !json_is_null(names) && !strcmp(code, "bad_egress");
		respond_error(rs, 400, code, "%s%s", err.message,
			      half ? " (the secrets named were kept: that part is done)" : "");
	} else {
		json_t *kept = rules ? egress_kept_json(o) : json_object();
		if (kept && names && !json_is_null(names))
			json_object_set(kept, "secrets_kept", names);
		sessions_narrowed(t, h, kept);
		if (kept && names && !json_is_null(names)) {
			json_object_del(kept, "secrets_kept");
			json_object_set(kept, "secrets", names);
		}
		respond_json(rs, 200, kept);
	}
	json_decref(o);
}

static void file_error(struct http_response *rs, struct hsession *h, int rc,
		       const struct aj_error *err)
{
	if (rc == -ESHUTDOWN)
		session_gone(rs, h);
	else
		respond_file_error(rs, rc, err->message);
}

static void session_files(struct session_table *t, const struct http_request *rq,
			  struct http_response *rs, struct hsession *h,
			  const struct session_route *r)
{
	struct aj_error err = {0};
	int rc;
	if (r->op == SESSION_PUT) {
		if ((rc = aj_session_put(h->s, r->path, rq->body, rq->body_len, &err)))
			return file_error(rs, h, rc, &err);
		respond_json(rs, 201, json_pack("{s:s, s:I}", "path", r->path, "bytes",
						(json_int_t)rq->body_len));
	} else if (r->op == SESSION_GET) {
		if ((rc = download_answer(t, h, r->path, rs, &err)))
			return file_error(rs, h, rc, &err);
	} else if (r->op == SESSION_LIST) {
		struct aj_file_info *e;
		size_t n;
		const char *dir = rq->query_dir ? rq->query_dir : ".";
		if ((rc = aj_session_list(h->s, dir, &e, &n, &err)))
			return file_error(rs, h, rc, &err);
		respond_json(rs, 200,
			     json_pack("{s:s, s:o}", "dir", dir, "entries", file_list_to_json(e, n)));
	} else {
		respond_method(rs, rq->method, r->allow);
	}
}

/* The background command routes reach the session here directly; a
 * stream holds it until it ends, and ends when it is deleted. */
struct proc_hold {
	struct session_table *t;
	struct hsession *h;
};

static json_t *proc_call_here(void *arg, json_t *req)
{
	struct proc_hold *p = arg;
	return sessions_deleted(p->t, p->h) ? NULL : proc_call_run(p->h->s, req);
}

static void proc_release(void *arg)
{
	struct proc_hold *p = arg;
	sessions_put(p->t, p->h);
	free(p);
}

static void session_proc(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, struct hsession *h,
			 const struct session_route *r)
{
	struct proc_hold *p = malloc(sizeof *p);
	if (!p)
		return respond_error(rs, 500, "internal", "out of memory");
	*p = (struct proc_hold){&local_of(svc)->sessions, h};
	sessions_hold(p->t, h);
	const struct proc_source src = {proc_call_here, proc_release, p};
	proc_route(svc, rq, rs, r, &src);
}

static int session_held(struct service *svc, const char *id, const struct key *key)
{
	struct hsession *h = sessions_get(&local_of(svc)->sessions, id, admission_use(&svc->adm, key));
	if (!h) /* one kept paused over a stop: its call opens it again */
		return local_session_is_kept(svc, key, id) ? 0 : -ENOENT;
	sessions_put(&local_of(svc)->sessions, h);
	return 0;
}

/* What the owner of a session an admin key closed is told it closed
 * because (410 session_closed), as for its idle timeout or lifetime. The
 * admin key is not named: which keys there are is the deployer's business;
 * the access log names it for the operator. */
#define OPERATOR_CLOSED "an operator closed it"

/* DELETE /v1/sessions/ID: the key's own session, deleted (or one of its
 * kept paused over a restart, dropped); else, for an admin key, another
 * key's open session ended. */
static void close_session(struct service *svc, const struct http_request *rq,
			  struct http_response *rs, const char *id)
{
	struct session_table *t = &local_of(svc)->sessions;
	if (!sessions_delete(t, id, admission_use(&svc->adm, rq->key)) ||
	    !local_session_drop_kept(svc, rq, id))
		return respond_json(rs, 204, NULL);
	/* The operator's way to end what a tenant left running (keys.h):
	 * ended, never used, and only here; every other route on another
	 * key's session answers an admin key 404, as any key. */
	if (rq->key->admin && !sessions_end(t, id, OPERATOR_CLOSED))
		return respond_json(rs, 204, NULL);
	respond_error(rs, 404, "not_found", "no such session");
}

static void session_call(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const struct session_route *r)
{
	if (r->op == SESSION_CLOSE)
		return close_session(svc, rq, rs, r->id);
	struct hsession *h =
		sessions_get(&local_of(svc)->sessions, r->id, admission_use(&svc->adm, rq->key));
	/* One paused when serve last stopped comes back at its first call. */
	if (!h && !(h = local_session_wake_kept(svc, rq, rs, r->id)) && rs->code)
		return;
	if (!h) {
		/* Another key's session answers the same: its id tells nothing. */
		respond_error(rs, 404, "not_found", "no such session");
		return;
	}
	if (r->op == SESSION_RUN || r->op == SESSION_EXEC)
		session_run(svc, rq, rs, h, r->op == SESSION_EXEC);
	else if (r->op == SESSION_EGRESS)
		session_egress(&local_of(svc)->sessions, rq, rs, h);
	else if (r->op == SESSION_PROC)
		session_proc(svc, rq, rs, h, r);
	else if (r->op == SESSION_PAUSE)
		local_session_pause(rs, h);
	else if (r->op == SESSION_RESUME)
		local_session_resume(rs, h);
	else if (r->op == SESSION_FORK)
		local_session_fork(svc, rq, rs, h);
	else if (r->op == SESSION_CHECKPOINT)
		local_session_checkpoint(svc, rq, rs, h);
	else
		session_files(&local_of(svc)->sessions, rq, rs, h, r);
	sessions_put(&local_of(svc)->sessions, h);
}

/* A trial sandbox of every tier: tier_probe.c's, never a request's. */
static json_t *tiers(struct service *svc, struct aj_error *err)
{
	json_t *a = json_array();
	for (int t = 0; a && t < AJ_TIER_COUNT; t++) {
		struct aj_config cfg = svc->cfg.sandbox;
		cfg.tier = (enum aj_tier)t;
		struct aj_error why = {0};
		int rc = aj_check(cfg.tier, &cfg, &why);
		json_array_append_new(a, json_pack("{s:s, s:b, s:s?}", "tier",
						   aj_tier_name(cfg.tier), "available", rc == 0,
						   "reason", rc ? why.message : NULL));
	}
	json_t *o = json_pack("{s:s, s:o, s:o}", "serving", aj_tier_name(svc->cfg.sandbox.tier),
			      "limits", limits_to_json(&svc->cfg.sandbox.limits), "tiers", a);
	if (!o)
		error_set(err, -ENOMEM, "out of memory");
	return o;
}

static void gauges(struct service *svc, struct metrics_gauges *g)
{
	g->sessions_open = sessions_open(&local_of(svc)->sessions);
}

static int open_backend(struct service *svc, struct aj_error *err)
{
	struct local_state *s = calloc(1, sizeof *s);
	if (!s) {
		error_set(err, -ENOMEM, "serve: out of memory");
		return 1;
	}
	if (local_open(&s->local, &svc->cfg.sandbox, err)) {
		char why[sizeof err->message];
		snprintf(why, sizeof why, "%s", err->message);
		error_set(err, err->code, "serve: the %s tier cannot run here: %s",
			     aj_tier_name(svc->cfg.sandbox.tier), why);
		free(s);
		return EXIT_SANDBOX;
	}
	sessions_init(&s->sessions);
	svc->backend_state = s;
	if (local_checkpoints_open(svc, err))
		return EXIT_USAGE;
	/* Recorded runs in serve's memory: lost when it stops. */
	if (local_store_open(&svc->runs, svc->cfg.keep_runs_sec, svc->cfg.runs_budget, err))
		return 1;
	return 0;
}

static struct aj_sandbox *mcp_sandbox(struct service *svc)
{
	return local_of(svc)->local.entries[0].sb;
}

static int start(struct service *svc)
{
	(void)svc;
	return 0;
}

static void stop(struct service *svc)
{
	local_runs_wait(&local_of(svc)->local);
}

static void close_backend(struct service *svc)
{
	struct local_state *s = local_of(svc);
	if (!s)
		return;
	/* Paused sessions outlive the stop, in the store, for their keys. */
	local_sessions_keep_paused(svc);
	sessions_close_all(&s->sessions);
	if (s->ckpts_open)
		ckpt_store_close(&s->ckpts);
	local_close(&s->local);
	free(s);
	svc->backend_state = NULL;
}

const struct backend_ops local_backend = {
	.open = open_backend,
	.mcp_sandbox = mcp_sandbox,
	.start = start,
	.stop = stop,
	.close = close_backend,
	.run = local_backend_run,
	.run_streaming = local_backend_run_streaming,
	.run_recorded = local_run_recorded,
	.session_open = session_open,
	.session_list = local_session_list,
	.session_held = session_held,
	.checkpoints = local_checkpoints,
	.session_call = session_call,
	.tiers = tiers,
	/* A probe starts a sandbox of every tier: once a minute at most. */
	.tiers_max_age_sec = 60,
	.gauges = gauges,
};
