/* POST /v1/sessions/ID/pause, /resume, /fork and /checkpoint on this
 * machine's sessions, /v1/checkpoints, and sessions kept paused over
 * serve's restart (docs/checkpoints.md): the library's aj_session_pause,
 * _resume, _fork and _checkpoint, the store (ckpt_store.c), and their
 * answers. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/cli.h"
#include "../../core/internal.h"
#include "../admit/call_secrets.h"
#include "../admit/narrow.h"
#include "local_state.h"
#include "session_state.h"

/* What a pause or fork carried, as JSON: its size, files, what it could
 * not carry. */
static json_t *carried_json(const struct aj_checkpoint_info *info)
{
	return json_pack("{s:I, s:i, s:i, s:s}", "bytes", (json_int_t)info->bytes, "files",
			 (int)info->files, "left_out", (int)info->left_out, "note", info->note);
}

static void state_refused(struct http_response *rs, struct hsession *h, int rc,
		    const struct aj_error *err)
{
	if (rc == -ESHUTDOWN)
		respond_error(rs, 410, "session_closed", "the session is closed, because %s",
			      aj_session_closed_reason(h->s) ? aj_session_closed_reason(h->s)
							     : "it was deleted");
	else if (rc == -EALREADY)
		respond_error(rs, 409, "already_paused", "%s", err->message);
	else if (rc == -EDQUOT)
		respond_error(rs, 429, "session_limit", "%s", err->message);
	else if (rc == -EMFILE)
		respond_error(rs, 503, "session_limit", "%s", err->message);
	else if (rc == -EFBIG)
		respond_error(rs, 413, "state_too_large", "%s", err->message);
	else
		respond_error(rs, 500, "checkpoint_failed", "%s", err->message);
	if (rc == -EDQUOT || rc == -EMFILE)
		rs->retry_after = 5;
}

void local_session_pause(struct http_response *rs, struct hsession *h)
{
	struct aj_checkpoint_info info;
	struct aj_error err = {0};
	int rc = aj_session_pause(h->s, &info, &err);
	if (rc)
		return state_refused(rs, h, rc, &err);
	json_t *o = carried_json(&info);
	if (o)
		json_object_set_new(o, "paused", json_true());
	respond_json(rs, 200, o);
}

void local_session_resume(struct http_response *rs, struct hsession *h)
{
	struct aj_error err = {0};
	bool was = aj_session_paused(h->s);
	int rc = aj_session_resume(h->s, &err);
	if (rc)
		return state_refused(rs, h, rc, &err);
	respond_json(rs, 200, json_pack("{s:b, s:b}", "paused", false, "resumed", was));
}

void local_session_fork(struct service *svc, const struct http_request *rq,
			struct http_response *rs, struct hsession *h)
{
	static const char *const allowed[] = {"count", NULL};
	json_t *o = rq->body_len ? request_body(rq, rs, allowed) : json_object();
	if (!o)
		return;
	json_t *count = json_object_get(o, "count");
	json_int_t n = count ? json_integer_value(count) : 1;
	if ((count && !json_is_integer(count)) || n < 1 || n > AJ_MAX_FORK) {
		json_decref(o);
		return respond_error(rs, 400, "bad_request", "count: a whole number of copies from 1 "
				     "to %d",
				     AJ_MAX_FORK);
	}
	json_decref(o);
	struct hsession **made = calloc((size_t)n, sizeof *made);
	struct aj_checkpoint_info info;
	struct aj_error err = {0};
	int rc = made ? sessions_fork(&local_of(svc)->sessions, h, (unsigned)n, made, &info, &err)
		      : error_set(&err, -ENOMEM, "fork: out of memory");
	if (rc) {
		free(made);
		return state_refused(rs, h, rc, &err);
	}
	json_t *ids = json_array();
	for (json_int_t i = 0; i < n; i++)
		json_array_append_new(ids, json_string(made[i]->id));
	free(made);
	json_t *answer = carried_json(&info);
	if (answer)
		json_object_set_new(answer, "sessions", ids);
	else
		json_decref(ids);
	respond_json(rs, 201, answer);
}

/* ---- checkpoints (ckpt_store.h) ---- */

json_t *local_session_json(const struct aj_config *cfg, const struct hsession *h)
{
	const struct aj_session_limits *sl = &cfg->session;
	/* "secrets": the names the session's sandbox has (the server's, the
	 * key's, the request's), never a value. */
	return json_pack("{s:s, s:s, s:o, s:{s:f, s:f, s:i, s:i}, s:s, s:o}", "id", h->id, "tier",
			 aj_tier_name(cfg->tier), "limits", limits_to_json(&cfg->limits), "session",
			 "idle_sec", sl->idle_sec, "lifetime_sec", sl->lifetime_sec, "cpu_sec",
			 (int)sl->cpu_sec, "transfer_mb", (int)sl->transfer_mb, "workspace",
			 AJ_SESSION_WORKSPACE, "secrets", secret_names_json(cfg->secrets));
}

/* A key's name in the store: its hash's hex, not its name (a key made at
 * each start is named "default" every time, and must not find the last
 * one's checkpoints). */
struct owner {
	char s[2 * 32 + 1];
};

static struct owner store_owner_of(const struct key *k)
{
	struct owner o;
	for (int i = 0; i < 32; i++)
		snprintf(o.s + 2 * i, 3, "%02x", k->hash[i]);
	return o;
}

/* No store: the reason it could not be opened, as the answer. */
static bool store_missing(struct service *svc, struct http_response *rs)
{
	struct local_state *ls = local_of(svc);
	if (ls->ckpts_open)
		return false;
	respond_error(rs, 503, "checkpoints_unavailable", "this server keeps no checkpoints: %s",
		      ls->ckpt_why);
	return true;
}

void local_session_checkpoint(struct service *svc, const struct http_request *rq,
			      struct http_response *rs, struct hsession *h)
{
	if (store_missing(svc, rs))
		return;
	static const char *const allowed[] = {"name", NULL};
	json_t *o = rq->body_len ? request_body(rq, rs, allowed) : json_object();
	if (!o)
		return;
	json_t *n = json_object_get(o, "name");
	const char *name = json_string_value(n);
	/* A name is a label to find it by (E2B's snapshot names): short,
	 * printable, no path or markup in it. */
	if (n && (!name || !*name || strlen(name) > 64 ||
		  strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
			  strlen(name))) {
		json_decref(o);
		return respond_error(rs, 400, "bad_request", "name: 1 to 64 of letters, digits, "
				     "'.', '_' and '-'");
	}
	json_t *rec = NULL;
	struct aj_error err = {0};
	struct owner me = store_owner_of(rq->key);
	int rc = ckpt_store_save(&local_of(svc)->ckpts, me.s, h->s, h->id, name, &rec, &err);
	json_decref(o);
	if (rc == -EDQUOT)
		return respond_error(rs, 507, "checkpoint_quota", "%s", err.message);
	if (rc)
		return state_refused(rs, h, rc, &err);
	respond_json(rs, 201, rec);
}

void local_checkpoints(struct service *svc, const struct http_request *rq,
		       struct http_response *rs)
{
	if (store_missing(svc, rs))
		return;
	struct ckpt_store *st = &local_of(svc)->ckpts;
	struct owner me = store_owner_of(rq->key);
	const char *id = rq->path[15] == '/' ? rq->path + 16 : NULL;
	if (!id) {
		if (strcmp(rq->method, "GET"))
			return respond_method(rs, rq->method, "GET");
		json_t *o = ckpt_store_list(st, me.s);
		return o ? respond_json(rs, 200, o) : respond_error(rs, 500, "internal", "out of memory");
	}
	if (!strcmp(rq->method, "GET")) {
		json_t *o = ckpt_store_get(st, me.s, id);
		/* Another key's id is looked up in this key's directory: the
		 * same 404 as an id nobody has. */
		return o ? respond_json(rs, 200, o)
			 : respond_error(rs, 404, "not_found", "no such checkpoint");
	}
	if (!strcmp(rq->method, "DELETE"))
		return ckpt_store_delete(st, me.s, id)
			       ? respond_error(rs, 404, "not_found", "no such checkpoint")
			       : respond_json(rs, 204, NULL);
	respond_method(rs, rq->method, "GET, DELETE");
}

struct restore_from {
	struct ckpt_store *st;
	const char *owner, *id;
	bool paused; /* a session kept over a stop, not a checkpoint */
	struct aj_checkpoint_info info;
};

static int open_restored(void *arg, const struct aj_config *cfg, struct aj_session **out,
			 struct aj_error *err)
{
	struct restore_from *r = arg;
	return r->paused ? ckpt_store_paused_open(r->st, r->owner, r->id, cfg, out, err)
			 : ckpt_store_restore(r->st, r->owner, r->id, cfg, out, &r->info, err);
}

void local_session_restore(struct service *svc, const struct http_request *rq,
			   struct http_response *rs, const struct session_opening *o)
{
	if (store_missing(svc, rs))
		return;
	struct owner me = store_owner_of(rq->key);
	struct restore_from r = {.st = &local_of(svc)->ckpts, .owner = me.s,
				.id = o->from_checkpoint};
	const struct session_make m = {o->cfg, o->terms, NULL, open_restored, &r};
	struct hsession *h;
	struct aj_error err = {0};
	int rc = sessions_create(&local_of(svc)->sessions, &m,
				 admission_use(&svc->adm, rq->key), &h, &err);
	if (rc == -ENOENT)
		return respond_error(rs, 404, "not_found", "no such checkpoint");
	if (rc == -EBADMSG || rc == -EPROTO)
		return respond_error(rs, 422, "checkpoint_refused", "%s", err.message);
	if (rc == -EDQUOT || rc == -EMFILE) {
		respond_error(rs, rc == -EDQUOT ? 429 : 503, "session_limit", "%s", err.message);
		rs->retry_after = 5;
		return;
	}
	if (rc)
		return respond_error(rs, 503, "sandbox_unavailable", "%s", err.message);
	json_t *body = local_session_json(o->cfg, h);
	if (body) {
		json_object_set_new(body, "from_checkpoint", json_string(o->from_checkpoint));
		json_object_set_new(body, "restored", carried_json(&r.info));
	}
	respond_json(rs, 201, body);
	sessions_put(&local_of(svc)->sessions, h);
}

/* terms' limits no wider than base's: each number over base's own is
 * base's (every limit is a most: more is wider). */
static void clamp_limits(json_t *terms, const struct aj_limits *base)
{
	json_t *mine = json_object_get(terms, "limits"), *today = limits_to_json(base);
	const char *k;
	json_t *v;
	json_object_foreach(mine, k, v) {
		json_t *most = json_object_get(today, k);
		if (json_is_number(v) && json_is_number(most) &&
		    json_number_value(v) > json_number_value(most))
			json_object_set(mine, k, most);
	}
	json_decref(today);
}

/* terms' allow lists keep only the entries base's rules still admit
 * (each tried alone): a rule the deployer has since dropped is gone, and
 * nothing is added. */
static void clamp_egress(json_t *terms, const struct aj_config *base)
{
	static const char *const lists[] = {"allow_hosts", "allow_cidrs"};
	for (size_t l = 0; l < 2; l++) {
		json_t *mine = json_object_get(terms, lists[l]);
		if (!json_is_array(mine))
			continue;
		json_t *kept = json_array();
		size_t i;
		json_t *v;
		json_array_foreach(mine, i, v) {
			json_t *one = json_pack("{s:[O], s:[]}", lists[l], v, lists[1 - l]);
			struct run_terms t;
			struct aj_error err;
			const char *why;
			if (one && !terms_narrow(base, one, &t, &why, &err))
				json_array_append(kept, v);
			json_decref(one);
		}
		json_object_set_new(terms, lists[l], kept);
	}
}

struct hsession *local_session_wake_kept(struct service *svc, const struct http_request *rq,
					 struct http_response *rs, const char *id)
{
	struct local_state *ls = local_of(svc);
	json_t *terms = NULL;
	struct owner me = store_owner_of(rq->key);
	if (!ls->ckpts_open || ckpt_store_paused(&ls->ckpts, me.s, id, &terms))
		return NULL;
	/* Opened again under the terms in force now: the deployer's limits
	 * and rules today, narrowed by the body that opened it (a limit it
	 * asked for that is wider than today's becomes today's). */
	clamp_limits(terms, &svc->cfg.sandbox.limits);
	clamp_egress(terms, &svc->cfg.sandbox);
	struct run_terms t;
	struct terms_lists lists;
	struct aj_config cfg;
	struct aj_error err = {0};
	const char *why;
	struct hsession *h = NULL;
	if (terms_narrow(&svc->cfg.sandbox, terms, &t, &why, &err)) {
		respond_error(rs, 409, "session_not_restorable", "the session kept over the "
			      "server's restart asks for what this server no longer allows: %s",
			      err.message);
		json_decref(terms);
		return NULL;
	}
	/* Its secrets: the server's and the key's as they are now (the
	 * request's were never written down), narrowed to the names its
	 * POST .../egress kept, if it narrowed them. */
	char *secrets = NULL;
	json_t *kept = json_object_get(terms, "secrets_kept");
	if (call_secrets_join(&svc->cfg.sandbox, rq->key, NULL, &secrets, &err)) {
		respond_error(rs, 409, "session_not_restorable", "the session kept over the "
			      "server's restart cannot have its secrets: %s", err.message);
		json_decref(terms);
		return NULL;
	}
	if (json_is_array(kept)) {
		char *narrowed = secrets_text_keep(secrets ? secrets : svc->cfg.sandbox.secrets,
						   kept);
		call_secrets_free(secrets);
		if (!(secrets = narrowed)) {
			respond_error(rs, 503, "session_limit", "out of memory");
			json_decref(terms);
			return NULL;
		}
	}
	t.secrets = secrets;
	terms_apply(&svc->cfg.sandbox, &t, &cfg, &lists);
	struct restore_from r = {.st = &ls->ckpts, .owner = me.s, .id = id,
				.paused = true};
	const struct session_make m = {&cfg, terms, id, open_restored, &r};
	int rc = sessions_create(&ls->sessions, &m, admission_use(&svc->adm, rq->key), &h, &err);
	call_secrets_free(secrets);
	json_decref(terms);
	if (rc == -ENOENT)
		return NULL;
	if (rc) {
		respond_error(rs, rc == -EDQUOT ? 429 : 503, "session_limit", "the session kept "
			      "over the server's restart could not be opened again: %s", err.message);
		if (rc == -EDQUOT || rc == -EMFILE)
			rs->retry_after = 5;
		return NULL;
	}
	ckpt_store_paused_done(&ls->ckpts, me.s, id);
	return h;
}

bool local_session_is_kept(struct service *svc, const struct key *key, const char *id)
{
	struct local_state *ls = local_of(svc);
	json_t *terms = NULL;
	struct owner me = store_owner_of(key);
	if (!ls->ckpts_open || ckpt_store_paused(&ls->ckpts, me.s, id, &terms))
		return false;
	json_decref(terms);
	return true;
}

int local_session_drop_kept(struct service *svc, const struct http_request *rq, const char *id)
{
	if (!local_session_is_kept(svc, rq->key, id))
		return -ENOENT;
	struct owner me = store_owner_of(rq->key);
	ckpt_store_paused_done(&local_of(svc)->ckpts, me.s, id);
	return 0;
}

static void keep_one(struct hsession *h, void *arg)
{
	struct ckpt_store *st = arg;
	if (!aj_session_paused(h->s) || !h->terms)
		return;
	struct aj_error err = {0};
	struct owner o = store_owner_of(h->owner->key);
	if (ckpt_store_keep_paused(st, o.s, h->id, h->s, h->terms, &err))
		fprintf(stderr, "agentjail serve: paused session %s is not kept: %s\n", h->id,
			err.message);
}

void local_sessions_keep_paused(struct service *svc)
{
	struct local_state *ls = local_of(svc);
	if (ls && ls->ckpts_open)
		sessions_each(&ls->sessions, keep_one, &ls->ckpts);
}

int local_checkpoints_open(struct service *svc, struct aj_error *err)
{
	struct local_state *ls = local_of(svc);
	const struct serve_config *c = &svc->cfg;
	char dir[PATH_MAX - 200];
	const char *path = c->checkpoint_dir;
	if (!path) {
		if (cli_state_dir(true, dir, sizeof dir - 16)) {
			snprintf(ls->ckpt_why, sizeof ls->ckpt_why, "no --checkpoint-dir, and no "
				 "HOME to keep them under");
			return 0;
		}
		strcat(dir, "/checkpoints");
		path = dir;
	}
	struct aj_error why = {0};
	if (ckpt_store_open(&ls->ckpts, path, c->checkpoint_ttl_sec, c->checkpoint_quota_mb,
			    &why)) {
		/* A directory the deployer named must work; the default may
		 * not, and then only checkpoints are refused, saying why. */
		if (c->checkpoint_dir) {
			error_set(err, why.code, "serve: %s", why.message);
			return -1;
		}
		snprintf(ls->ckpt_why, sizeof ls->ckpt_why, "%s", why.message);
		return 0;
	}
	ls->ckpts_open = true;
	return 0;
}
