/* The queue backend. A run goes to any worker of the tier. A session
 * lives on the worker that opened it, Redis says which (agentjail:session:ID) and whose, so any serve replica
 * can route a call to it; the key's open sessions are counted in Redis
 * too. The answers are those of the local backend (local_api.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/internal.h"
#include "../../cli/cli.h"
#include "../admit/narrow.h"
#include "remote.h"
#include "remote_procs.h"
#include "remote_runs.h"
#include "remote_state.h"
#include "../runs/run_tail.h"
#include "../admit/call_body.h"
#include "remote_hooks.h"
#include "store.h"
#include "../admit/service.h"
#include "../runs/sse.h"
#include "../http/wire.h"

static void queue_down(struct http_response *rs, const char *why)
{
	/* Never the queue's URL: it names the Redis that holds every key's
	 * runs, which a client has no business with. */
	respond_error(rs, 503, "queue_unavailable", "%s",
		      why ? why : "the queue (Redis) cannot be reached");
	rs->retry_after = 5;
}

/* A run goes to any worker of the tier; whether it may have started is
 * the caller's to learn when it is lost. A queued run is not cancelled. */
static int queue_send(struct service *svc, json_t *req, double run_sec, struct run_fate *fate,
		      struct aj_result *res, struct aj_error *err)
{
	json_t *reply = NULL;
	bool taken = true;
	enum remote_failure f =
		req ? remote_call(&remote_of(svc)->queue, svc->cfg.sandbox.tier, NULL, fate->id, req,
				  svc->cfg.max_wait_sec, run_sec, &reply, &taken, err)
		    : REMOTE_REDIS;
	int rc = 0;
	if (f == REMOTE_OK) {
		result_from_json(json_object_get(reply, "result"), res, NULL);
	} else {
		result_init(res);
		result_sandbox_error(res, "%s", err->message);
		rc = f == REMOTE_NO_WORKER ? -EAGAIN : f == REMOTE_REFUSED ? -EINVAL : -EIO;
		/* A worker whose deployer allows fewer egress rules, or sets a
		 * variable the request adds: told apart from narrower limits,
		 * so the answer names which. */
		const char *why = json_string_value(json_object_get(reply, "code"));
		if (f == REMOTE_REFUSED && why && !strcmp(why, "bad_egress"))
			rc = -EPERM;
		if (f == REMOTE_REFUSED && why && !strcmp(why, "bad_env"))
			rc = -EILSEQ;
		/* A language this worker does not run: a worker without
		 * languages refuses the op ("unknown op 'run_language'"). */
		if (f == REMOTE_REFUSED && why &&
		    (!strcmp(why, "bad_language") || !strcmp(why, "bad_request")))
			rc = -ENOEXEC;
		/* Lost: no result will come. Not a sandbox's failure nor the
		 * service's refusal, but a third answer: whether the code may
		 * have run is what its caller needs to decide on a retry. */
		if (f == REMOTE_LOST || f == REMOTE_UNKNOWN) {
			fate->may_have_started = f == REMOTE_UNKNOWN || taken;
			metrics_lost(&svc->metrics, fate->may_have_started);
			fprintf(stderr, "agentjail serve: run %s lost (%s): %s\n", fate->id,
				fate->may_have_started ? "it may have started" : "it never started",
				err->message);
			rc = -ECONNRESET;
		}
	}
	json_decref(reply);
	return rc;
}

/* The wall time a run may take under t (NULL: the deployer's). */
static double run_sec(struct service *svc, const struct run_terms *t)
{
	return t ? t->limits.wall_sec : svc->cfg.sandbox.limits.wall_sec;
}

static int queue_run(struct service *svc, const struct run_terms *t, const char *code,
		     size_t len, struct aj_cancel *cancel, struct run_fate *fate,
		     struct aj_result *res, struct aj_error *err)
{
	(void)cancel;
	json_t *req = queue_run_request(svc, t, code, len);
	int rc = queue_send(svc, req, run_sec(svc, t), fate, res, err);
	json_decref(req);
	return rc;
}

/* A worker's chunks reach serve only through a record (the worker writes
 * its events there as they happen): this run gets one of its own, owned
 * by no key (RUNS_NO_OWNER: none reads or lists it), and a tail here
 * hands its events to stream while this thread waits for the worker's
 * answer, which is queue_run's. When no record can be made (Redis down,
 * the budget of such records held), the run goes as queue_run's, its
 * output whole in the answer. */
static int queue_run_streaming(struct service *svc, const struct run_terms *t,
			       const char *code, size_t len, struct aj_cancel *cancel,
			       const struct aj_stream *stream,
			       struct run_fate *fate, struct aj_result *res, struct aj_error *err)
{
	(void)cancel;
	struct run_store *st = &svc->runs;
	json_t *req = queue_run_request(svc, t, code, len);
	struct run_info info = {0};
	struct aj_error rerr = {0};
	bool recorded = req && !st->ops->create(st, fate->id, RUNS_NO_OWNER, &info, &rerr);
	struct run_tail *tail = NULL;
	if (recorded) {
		json_object_set_new(req, "record", json_true());
		json_object_set_new(req, "keep_sec", json_real(RUNS_NO_OWNER_KEEP_SEC));
		tail = run_tail_start(st, fate->id, RUNS_NO_OWNER, stream);
	}
	int rc = queue_send(svc, req, run_sec(svc, t), fate, res, err);
	json_decref(req);
	if (recorded) {
		/* The worker ended the record when it answered; otherwise it
		 * ends here, so that the tail comes to its end. */
		json_t *end = run_failure_json(rc == -ECONNRESET ? "run_lost" : "not_run", fate->id,
					       rc == -ECONNRESET, fate->may_have_started,
					       err->message);
		if (rc && end)
			st->ops->finish(st, fate->id, end);
		json_decref(end);
	}
	run_tail_stop(tail);
	return rc;
}

/* The key's sessions that are still open (closed and vanished ones are
 * dropped from its set on the way). -1 when Redis cannot say. */
static long open_sessions(struct service *svc, const char *owner, struct aj_error *err)
{
	redisContext *c = queue_get(&remote_of(svc)->queue, 5.0, err);
	if (!c)
		return -1;
	redisReply *m = queue_cmd(c, err, "SMEMBERS agentjail:key:%s:sessions", owner);
	if (!m) {
		queue_put(&remote_of(svc)->queue, c, true);
		return -1;
	}
	long n = 0;
	for (size_t i = 0; i < m->elements; i++) {
		redisReply *h = queue_cmd(c, err, "HMGET agentjail:session:%s worker closed",
					  m->element[i]->str);
		bool open = h && h->elements == 2 && h->element[0]->type == REDIS_REPLY_STRING &&
			    h->element[1]->type == REDIS_REPLY_NIL;
		if (h)
			freeReplyObject(h);
		if (open) {
			n++;
		} else {
			redisReply *x = queue_cmd(c, err, "SREM agentjail:key:%s:sessions %s", owner,
						  m->element[i]->str);
			if (x)
				freeReplyObject(x);
		}
	}
	freeReplyObject(m);
	queue_put(&remote_of(svc)->queue, c, false);
	return n;
}

static void session_open(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const struct session_opening *o)
{
	/* The worker applies t to its own deployer's config. */
	const struct run_terms *t = o->t;
	if (o->from_checkpoint)
		return respond_error(rs, 501, "not_offered", "from_checkpoint: checkpoints are not "
				     "kept by a server with --queue yet: its sessions live on "
				     "workers");
	struct aj_error err = {0};
	long held = open_sessions(svc, rq->key->name, &err);
	if (held < 0)
		return queue_down(rs, err.message);
	if ((unsigned long)held >= rq->key->sessions) {
		respond_error(rs, 429, "session_limit",
			      "key '%s' holds %ld open session(s), its limit; close one first",
			      rq->key->name, held);
		rs->retry_after = 5;
		return;
	}
	json_t *req = json_pack("{s:s, s:s}", "op", "session_open", "owner", rq->key->name);
	if (!req || terms_to_json(&svc->cfg.sandbox, t, req)) {
		json_decref(req);
		respond_error(rs, 500, "internal", "out of memory");
		return;
	}
	json_t *reply = NULL;
	bool taken;
	enum remote_failure f = remote_call(&remote_of(svc)->queue, svc->cfg.sandbox.tier, NULL, NULL, req,
					    svc->cfg.max_wait_sec, 60.0, &reply, &taken, &err);
	json_decref(req);
	if (f == REMOTE_OK) {
		const struct aj_session_limits *sl = &svc->cfg.sandbox.session;
		respond_json(rs, 201,
			     json_pack("{s:O, s:s, s:O, s:{s:f, s:f, s:i, s:i}, s:s, s:O}", "id",
				       json_object_get(reply, "id"), "tier",
				       aj_tier_name(svc->cfg.sandbox.tier), "limits",
				       json_object_get(reply, "limits"), "session", "idle_sec",
				       sl->idle_sec, "lifetime_sec", sl->lifetime_sec, "cpu_sec",
				       (int)sl->cpu_sec, "transfer_mb", (int)sl->transfer_mb,
				       "workspace", AJ_SESSION_WORKSPACE, "worker",
				       json_object_get(reply, "worker")));
	} else if (f == REMOTE_REFUSED) {
		const char *code = json_string_value(json_object_get(reply, "code"));
		bool bad = code && (!strcmp(code, "bad_limits") || !strcmp(code, "bad_egress") ||
				    !strcmp(code, "bad_env"));
		respond_error(rs, bad ? 400 : 503,
			      code ? code : "refused", "%s", err.message);
	} else if (f == REMOTE_NO_WORKER) {
		respond_error(rs, 503, "no_worker", "%s", err.message);
		rs->retry_after = 5;
	} else {
		queue_down(rs, err.message);
	}
	json_decref(reply);
}

/* The session's worker, if the key owns it: 0; -ENOENT (404), -ESHUTDOWN
 * with *closed the reason (410), or -EIO. */
static int lookup(struct service *svc, const char *id, const char *owner, char *worker, size_t n,
		  char **closed, struct aj_error *err)
{
	*closed = NULL;
	redisContext *c = queue_get(&remote_of(svc)->queue, 5.0, err);
	if (!c)
		return -EIO;
	redisReply *h = queue_cmd(c, err, "HMGET agentjail:session:%s worker owner closed", id);
	if (!h) {
		queue_put(&remote_of(svc)->queue, c, true);
		return -EIO;
	}
	int rc = 0;
	if (h->elements != 3 || h->element[0]->type != REDIS_REPLY_STRING ||
	    h->element[1]->type != REDIS_REPLY_STRING || strcmp(h->element[1]->str, owner))
		rc = -ENOENT; /* another key's session answers as none at all */
	else if (h->element[2]->type == REDIS_REPLY_STRING)
		rc = -ESHUTDOWN, *closed = strdup(h->element[2]->str);
	if (!rc || rc == -ESHUTDOWN)
		snprintf(worker, n, "%s", h->element[0]->str);
	freeReplyObject(h);
	queue_put(&remote_of(svc)->queue, c, false);
	return rc;
}

static int session_held(struct service *svc, const char *id, const struct key *key)
{
	char worker[128], *closed = NULL;
	struct aj_error err = {0};
	int rc = lookup(svc, id, key->name, worker, sizeof worker, &closed, &err);
	free(closed);
	return rc;
}

static void forget(struct service *svc, const char *id, const char *owner)
{
	struct aj_error err;
	redisContext *c = queue_get(&remote_of(svc)->queue, 5.0, &err);
	if (!c)
		return;
	redisReply *r = queue_cmd(c, &err, "DEL agentjail:session:%s", id);
	if (r)
		freeReplyObject(r);
	if ((r = queue_cmd(c, &err, "SREM agentjail:key:%s:sessions %s", owner, id)))
		freeReplyObject(r);
	queue_put(&remote_of(svc)->queue, c, false);
}

/* A session call (run_id: a run's id, else NULL): REMOTE_OK with *reply;
 * otherwise the answer is in rs. */
static int call(struct service *svc, struct http_response *rs, const char *worker,
		const char *run_id, json_t *req, double run_sec, json_t **reply)
{
	struct aj_error err = {0};
	bool taken;
	enum remote_failure f = remote_call(&remote_of(svc)->queue, svc->cfg.sandbox.tier, worker, run_id, req,
					    SESSION_TAKE_SEC, run_sec, reply, &taken, &err);
	if (f == REMOTE_OK)
		return 0;
	if (f == REMOTE_REFUSED) {
		const char *code = json_string_value(json_object_get(*reply, "code"));
		if (code && (!strcmp(code, "closed") || !strcmp(code, "not_found")))
			respond_error(rs, 410, "session_closed", "the session is closed, because %s",
				      !strcmp(code, "closed") ? err.message
							      : "its worker no longer holds it");
		else if (code && !strcmp(code, "file_error"))
			respond_file_error(rs, -(int)json_integer_value(json_object_get(*reply, "errno")),
					   err.message);
		else
			/* Too large for the worker's own limit (a command's
			 * stdin): a 413, as here. */
			respond_error(rs, code && !strcmp(code, "too_large") ? 413 : 400,
				      code ? code : "refused", "%s", err.message);
	} else if (f == REMOTE_LOST && run_id) {
		/* The session went with its worker (410), and the run with it:
		 * its caller learns, as for any lost run, whether it may have
		 * started. */
		metrics_lost(&svc->metrics, taken);
		char msg[1100];
		snprintf(msg, sizeof msg, "the session is closed, because %s", err.message);
		respond_run_failure(rs, 410, "session_closed", run_id, true, taken, msg);
	} else if (f == REMOTE_LOST) {
		respond_error(rs, 410, "session_closed", "the session is closed, because %s",
			      err.message);
	} else {
		queue_down(rs, err.message);
	}
	json_decref(*reply);
	*reply = NULL;
	return -1;
}

/* A call on the session, code (.../runs) or a command (.../exec): read
 * here against the server's limits, and by the worker against the
 * session's own (it may have been narrowed at its open). */
static void session_run(struct service *svc, const struct http_request *rq,
			struct http_response *rs, const char *id, const char *worker, bool exec)
{
	struct call_body b;
	if (call_body_read(rq, rs, exec, &svc->cfg.sandbox, &b))
		return;
	if (accepts_sse(rq)) {
		/* Recorded by its worker, and the answer a reader of the record. */
		char rid[33];
		serve_id_new(rid);
		if (!queue_session_recorded(svc, rq, rs, rid, id, worker, &b) &&
		    sse_answer(rs, &svc->runs, rid, rq->key->name, 0, svc->cfg.idle_sec))
			respond_error(rs, 500, "internal", "out of memory (the run %s goes on)", rid);
		call_body_clear(&b);
		return;
	}
	struct key_use *u = admission_use(&svc->adm, rq->key);
	double t0 = now_ms() / 1e3;
	if (service_admit(svc, u, rs)) {
		call_body_clear(&b);
		return;
	}
	json_t *req = call_body_request(&b, id);
	json_t *reply = NULL;
	char run_id[33];
	serve_id_new(run_id);
	int rc = call(svc, rs, worker, run_id, req, svc->cfg.sandbox.limits.wall_sec, &reply);
	admit_finish(&svc->adm, u);
	if (!rc) {
		struct aj_result res;
		result_from_json(json_object_get(reply, "result"), &res, NULL);
		respond_run(svc, rs, run_id, &res, t0);
	}
	json_decref(reply);
	json_decref(req);
	call_body_clear(&b);
}

/* Keep only the named rules, on the worker that holds the session (which
 * checks them against the session's own, as the local backend does). */
static void session_egress(struct service *svc, const struct http_request *rq,
			   struct http_response *rs, const char *id, const char *worker)
{
	static const char *const allowed[] = {"allow_hosts", "allow_cidrs", NULL};
	json_t *o = request_body(rq, rs, allowed);
	if (!o)
		return;
	json_t *req = json_pack("{s:s, s:s, s:O?, s:O?}", "op", "egress", "session", id,
				"allow_hosts", json_object_get(o, "allow_hosts"), "allow_cidrs",
				json_object_get(o, "allow_cidrs"));
	json_t *reply = NULL;
	if (!req)
		respond_error(rs, 500, "internal", "out of memory");
	else if (!call(svc, rs, worker, NULL, req, 30.0, &reply))
		respond_json(rs, 200, egress_kept_json(o));
	json_decref(reply);
	json_decref(req);
	json_decref(o);
}

static void session_files(struct service *svc, const struct http_request *rq,
			  struct http_response *rs, const char *worker,
			  const struct session_route *r)
{
	const char *id = r->id, *path = r->path;
	json_t *req = NULL, *reply = NULL;
	if (r->op == SESSION_PUT) {
		char *b64 = base64_encode(rq->body, rq->body_len, NULL);
		req = json_pack("{s:s, s:s, s:s, s:s}", "op", "put", "session", id, "path", path,
				"data", b64 ? b64 : "");
		free(b64);
		if (!call(svc, rs, worker, NULL, req, 60.0, &reply))
			respond_json(rs, 201, json_pack("{s:s, s:I}", "path", path, "bytes",
							(json_int_t)rq->body_len));
	} else if (r->op == SESSION_GET) {
		req = json_pack("{s:s, s:s, s:s}", "op", "get", "session", id, "path", path);
		if (!call(svc, rs, worker, NULL, req, 60.0, &reply)) {
			json_t *d = json_object_get(reply, "data");
			unsigned char *data = NULL;
			size_t len = 0;
			if (base64_decode(json_string_value(d) ?: "", json_string_length(d), &data,
					  &len)) {
				respond_error(rs, 500, "session_error", "the worker's file is garbled");
			} else {
				rs->code = 200;
				rs->body = (char *)data;
				rs->len = len;
				rs->content_type = "application/octet-stream";
			}
		}
	} else if (r->op == SESSION_LIST) {
		const char *dir = rq->query_dir ? rq->query_dir : ".";
		req = json_pack("{s:s, s:s, s:s}", "op", "list", "session", id, "path", dir);
		if (!call(svc, rs, worker, NULL, req, 60.0, &reply))
			respond_json(rs, 200, json_pack("{s:s, s:O}", "dir", dir, "entries",
							json_object_get(reply, "entries")));
	} else {
		respond_method(rs, rq->method, r->allow);
	}
	json_decref(req);
	json_decref(reply);
}

static void session_call(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const struct session_route *r)
{
	const char *id = r->id;
	bool del = r->op == SESSION_CLOSE;
	char worker[128];
	char *closed;
	struct aj_error err = {0};
	int rc = lookup(svc, id, rq->key->name, worker, sizeof worker, &closed, &err);
	if (rc == -EIO)
		return queue_down(rs, err.message);
	if (rc == -ENOENT) {
		respond_error(rs, 404, "not_found", "no such session");
		return;
	}
	if (rc == -ESHUTDOWN) {
		if (del) {
			forget(svc, id, rq->key->name);
			respond_json(rs, 204, NULL);
		} else {
			respond_error(rs, 410, "session_closed", "the session is closed, because %s",
				      closed);
		}
		free(closed);
		return;
	}
	if (del) {
		json_t *req = json_pack("{s:s, s:s}", "op", "close", "session", id), *reply = NULL;
		if (!call(svc, rs, worker, NULL, req, 30.0, &reply))
			respond_json(rs, 204, NULL);
		else if (rs->code == 410) {
			/* Its worker is gone: the session is too; forget it. */
			free(rs->body);
			rs->body = NULL;
			forget(svc, id, rq->key->name);
			respond_json(rs, 204, NULL);
		}
		json_decref(req);
		json_decref(reply);
	} else if (r->op == SESSION_RUN || r->op == SESSION_EXEC) {
		session_run(svc, rq, rs, id, worker, r->op == SESSION_EXEC);
	} else if (r->op == SESSION_EGRESS) {
		session_egress(svc, rq, rs, id, worker);
	} else if (r->op == SESSION_PROC) {
		remote_session_proc(svc, rq, rs, id, worker, r);
	} else if (r->op == SESSION_PAUSE || r->op == SESSION_RESUME || r->op == SESSION_FORK ||
		   r->op == SESSION_CHECKPOINT) {
		/* A paused session's state would live on its worker, and a fork's
		 * copies on others: not carried over the queue yet. */
		respond_error(rs, 501, "not_offered",
			      "pause, resume, fork and checkpoint are not offered with a queue "
			      "(--queue) yet: "
			      "a session's state stays on its worker; serve without --queue offers "
			      "them");
	} else {
		session_files(svc, rq, rs, worker, r);
	}
}

/* The workers alive in Redis. Not the queue's URL: it names a host of the
 * deployer's network, which a key has no use for. */
static json_t *tiers(struct service *svc, struct aj_error *err)
{
	json_t *workers = remote_workers(&remote_of(svc)->queue, err);
	if (!workers) {
		error_set(err, -ECONNREFUSED, "the queue (Redis) cannot be reached");
		return NULL;
	}
	return json_pack("{s:s, s:o, s:o}", "serving", aj_tier_name(svc->cfg.sandbox.tier),
			 "limits", limits_to_json(&svc->cfg.sandbox.limits), "workers", workers);
}

static void gauges(struct service *svc, struct metrics_gauges *g)
{
	unsigned slots;
	fleet_counts(&remote_of(svc)->fleet, &slots, &g->workers);
}

/* The fleet sizes admission (fleet.h), not this machine's CPUs: the
 * deployer's --concurrency, when given, stays a cap over it; without one,
 * while Redis cannot say, only the connections bound it. */
/* A recorded run the store ended lost (remote_store_on_lost). */
static void count_lost_run(void *arg, bool may_have_started)
{
	struct service *svc = arg;
	metrics_lost(&svc->metrics, may_have_started);
}

/* A cancel marked in Redis by this replica (remote_store_on_cancel). */
static void call_off_run(void *arg, const char *id)
{
	queue_run_call_off(arg, id);
}

static int open_backend(struct service *svc, struct aj_error *err)
{
	struct remote_state *s = calloc(1, sizeof *s);
	if (!s) {
		error_set(err, -ENOMEM, "serve: out of memory");
		return 1;
	}
	if (queue_init(&s->queue, svc->cfg.queue_url, err)) {
		char why[sizeof err->message];
		snprintf(why, sizeof why, "%s", err->message);
		error_set(err, err->code, "serve: %s", why);
		free(s);
		return EXIT_USAGE;
	}
	svc->backend_state = s;
	struct aj_error down = {0};
	redisContext *c = queue_get(&s->queue, 2.0, &down);
	if (!c)
		fprintf(stderr, "agentjail serve: %s (runs get 503 until it answers)\n",
			down.message);
	queue_put(&s->queue, c, false);
	/* Recorded runs in Redis beside the queue: the workers write them,
	 * and they outlive this serve. */
	if (remote_store_open(&svc->runs, &s->queue, svc->cfg.keep_runs_sec, svc->cfg.runs_budget,
			      err))
		return 1;
	return 0;
}

/* MCP's tools/call goes through the queue like any run. */
static struct aj_sandbox *mcp_sandbox(struct service *svc)
{
	(void)svc;
	return NULL;
}

static int start(struct service *svc)
{
	/* A record's run waits for its turn here (up to --max-wait), then for
	 * a worker to take it (--max-wait; a session's call SESSION_TAKE_SEC):
	 * past both and a margin, its serve has given up on it too. */
	double turn = svc->cfg.max_wait_sec + 5.0;
	remote_store_give_up(&svc->runs, turn + svc->cfg.max_wait_sec, turn + SESSION_TAKE_SEC);
	/* Lost recorded runs are counted where their record ends: by a
	 * reader too, and once. */
	remote_store_on_lost(&svc->runs, count_lost_run, svc);
	/* A run cancelled while it waits here for its turn leaves the queue
	 * at once. */
	remote_store_on_cancel(&svc->runs, call_off_run, svc);
	/* Webhooks come from Redis's schedule: whoever ended the record,
	 * whichever replica is up. */
	remote_hooks_start(svc);
	return fleet_start(&remote_of(svc)->fleet, &remote_of(svc)->queue, svc->cfg.sandbox.tier, &svc->adm,
			   svc->cfg.concurrency_set ? svc->cfg.concurrency : (unsigned)-1,
			   svc->cfg.concurrency_set ? svc->cfg.concurrency : SERVE_MAX_CONNECTIONS);
}

static void stop(struct service *svc)
{
	queue_runs_wait();
	fleet_stop(&remote_of(svc)->fleet);
}

static void close_backend(struct service *svc)
{
	struct remote_state *s = remote_of(svc);
	if (!s)
		return;
	queue_destroy(&s->queue);
	free(s);
	svc->backend_state = NULL;
}

const struct backend_ops remote_backend = {
	.open = open_backend,
	.mcp_sandbox = mcp_sandbox,
	.start = start,
	.stop = stop,
	.close = close_backend,
	.run = queue_run,
	.run_streaming = queue_run_streaming,
	.run_recorded = queue_run_recorded,
	.session_open = session_open,
	/* No session_list (api_v1.c's 501): Redis keeps each session's
	 * worker, key and end, not what it was opened with, which only its
	 * worker knows (a queue round trip a session). */
	.session_held = session_held,
	.session_call = session_call,
	.tiers = tiers,
	/* A probe reads Redis only: a request waits for one begun after it,
	 * shared with the requests that came meanwhile. */
	.tiers_max_age_sec = 0,
	.gauges = gauges,
};
