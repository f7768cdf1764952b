/* E2B's control plane (its OpenAPI's /sandboxes routes), each call through
 * the v1 API as the caller's key:
 *
 *   POST   /sandboxes, /v2/sandboxes      create: POST /v1/sessions with the
 *                                          envVars and the egress rules asked
 *                                          for, 201 with the sandbox's own
 *                                          access token
 *   GET    /sandboxes/ID                   info
 *   GET    /sandboxes, /v2/sandboxes       list_sandboxes (metadata filter, state,
 *                                          limit, nextToken; X-Next-Token)
 *   DELETE /sandboxes/ID                   kill: DELETE /v1/sessions/ID
 *   POST   /sandboxes/ID/timeout           a new end, from now
 *   POST   /sandboxes/ID/refreshes         the same (older SDKs)
 *   POST   /v2/sandboxes/ID/connect,       the sandbox again (its end moved
 *          /sandboxes/ID/connect,          on, never back), resumed first if
 *          /sandboxes/ID/resume            it was paused
 *   POST   /sandboxes/ID/pause             POST /v1/sessions/ID/pause: 204, or
 *                                          409 when it is paused already
 *   POST   /sandboxes/ID/fork              POST /v1/sessions/ID/fork: each copy
 *                                          a sandbox of its own, with the
 *                                          original's template, metadata and
 *                                          contexts
 *   POST   /sandboxes/ID/snapshots, GET    snapshots.c: checkpoints
 *          /snapshots, DELETE /templates/ID
 *   metrics, network                       501, named: not yet
 *
 * A create's network.rules header transforms become the session's secrets
 * (rules_secrets): E2B's "inject this header for that host" is agentjail's
 * header secret, put in by the egress proxy outside the sandbox.
 *
 * Errors are E2B's: {"code": status, "message"}. Another key's sandbox
 * answers as none. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../../core/internal.h"
#include "../admit/service.h"
#include "common.h"
#include "control.h"
#include "network_rules.h"
#include "snapshots.h"
#include "v1_client.h"

/* E2B's default timeout for a sandbox, in seconds. */
#define E2B_DEFAULT_TIMEOUT_SEC 300
/* The templates a create may name: each is the deployer's sandbox. */
static const char *const templates[] = {"base", "code-interpreter-v1", "code-interpreter", NULL};

static double now_unix(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_t *rfc3339(double t)
{
	time_t s = (time_t)t;
	struct tm tm;
	char buf[40];
	gmtime_r(&s, &tm);
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
	size_t n = strlen(buf);
	snprintf(buf + n, sizeof buf - n, ".%03dZ", (int)((t - (double)s) * 1000.0));
	return json_string(buf);
}

/* A "timeout" in seconds (absent: def), within the session's lifetime:
 * 0, or -1 with the 400. */
static int timeout_of(const struct service *svc, json_t *o, double def, double *out,
		      struct http_response *rs)
{
	json_t *t = json_object_get(o, "timeout");
	double v = t ? json_number_value(t) : def;
	double most = svc->cfg.sandbox.session.lifetime_sec;
	if ((t && !json_is_number(t)) || !(v > 0) || (most > 0 && v > most)) {
		e2b_error(rs, 400, "timeout: %g s is not within 1 s and this deployment's session "
			  "lifetime of %g s", v, most);
		return -1;
	}
	*out = v;
	return 0;
}

/* allowOut's entries (a host, an address or a CIDR each) as the deployer's
 * rules that name them: E2B's allow-list narrows what this deployment
 * allows, never widens it. 0, or -1 with the 400. */
static int allow_out(const struct aj_config *base, json_t *list, json_t *hosts, json_t *cidrs,
		     struct http_response *rs)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		const char *want = json_string_value(e);
		if (!want) {
			e2b_error(rs, 400, "network.allowOut: item %zu is not a string", i);
			return -1;
		}
		bool found = false;
		char h[300];
		for (uint32_t r = 0; r < base->allow_host_count; r++) {
			e2b_rule_host(base->allow_hosts[r], h, sizeof h);
			if (!strcmp(h, want)) {
				json_array_append_new(hosts, json_string(base->allow_hosts[r]));
				found = true;
			}
		}
		for (uint32_t r = 0; r < base->allow_cidr_count; r++) {
			e2b_rule_host(base->allow_cidrs[r], h, sizeof h);
			/* An address names the /32 (or /128) rule of itself. */
			size_t n = strlen(want);
			if (!strcmp(h, want) || (!strncmp(h, want, n) && (!strcmp(h + n, "/32") ||
									   !strcmp(h + n, "/128")))) {
				json_array_append_new(cidrs, json_string(base->allow_cidrs[r]));
				found = true;
			}
		}
		if (!found) {
			e2b_error(rs, 400, "network.allowOut: %.200s is not among the destinations "
				  "this deployment allows (its egress rules: the sandbox may only "
				  "narrow them)", want);
			return -1;
		}
	}
	return 0;
}

/* E2B's create body as v1 POST /v1/sessions terms: 0, or -1 with the 400. */
static int session_terms(const struct service *svc, const struct key *key, json_t *o,
			 json_t *terms, struct http_response *rs)
{
	json_t *env = json_object_get(o, "envVars");
	if (env && !json_is_null(env)) {
		if (!json_is_object(env)) {
			e2b_error(rs, 400, "envVars: expected an object of strings");
			return -1;
		}
		json_object_set(terms, "env", env);
	}
	json_t *net = json_object_get(o, "network");
	json_t *allow = json_object_get(net, "allowOut"), *deny = json_object_get(net, "denyOut");
	/* Fields of E2B's network this deployment cannot honour: refused,
	 * named, never quietly dropped (a SOCKS proxy the caller relies on
	 * for its traffic's route, say). */
	static const char *const net_unsupported[] = {"egressProxy", NULL};
	for (size_t k = 0; net_unsupported[k]; k++)
		if (json_object_get(net, net_unsupported[k]) &&
		    !json_is_null(json_object_get(net, net_unsupported[k]))) {
			e2b_error(rs, 400, "network.%s is not supported by agentjail (docs/e2b.md)",
				  net_unsupported[k]);
			return -1;
		}
	if (e2b_rules_secrets(&svc->cfg.sandbox, key ? key->secrets : NULL,
			      json_object_get(net, "rules"), terms, rs))
		return -1;
	json_t *internet = json_object_get(o, "allow_internet_access");
	size_t i;
	json_t *e;
	json_array_foreach(deny, i, e) {
		/* "Deny everything but allowOut" is what this deployment does. */
		const char *d = json_string_value(e);
		if (!d || (strcmp(d, "0.0.0.0/0") && strcmp(d, "::/0"))) {
			e2b_error(rs, 400, "network.denyOut: only 0.0.0.0/0 (everything not in "
				  "allowOut) is supported: agentjail's egress rules allow, never "
				  "deny");
			return -1;
		}
	}
	if (json_is_false(internet) || (json_array_size(deny) && !allow)) {
		json_object_set_new(terms, "allow_hosts", json_array());
		json_object_set_new(terms, "allow_cidrs", json_array());
	} else if (allow) {
		if (!json_is_array(allow)) {
			e2b_error(rs, 400, "network.allowOut: expected an array");
			return -1;
		}
		json_t *hosts = json_array(), *cidrs = json_array();
		json_object_set_new(terms, "allow_hosts", hosts);
		json_object_set_new(terms, "allow_cidrs", cidrs);
		if (allow_out(&svc->cfg.sandbox, allow, hosts, cidrs, rs))
			return -1;
	}
	static const char *const unsupported[] = {"autoPause", "mcp", "volumeMounts", "iam", NULL};
	for (size_t k = 0; unsupported[k]; k++) {
		json_t *v = json_object_get(o, unsupported[k]);
		if (v && !json_is_null(v) && !json_is_false(v) &&
		    !(json_is_array(v) && !json_array_size(v))) {
			e2b_error(rs, 400, "%s is not supported by agentjail (docs/e2b.md)",
				  unsupported[k]);
			return -1;
		}
	}
	return 0;
}

/* The sandbox as create and connect answer it. */
static json_t *sandbox_json(const struct e2b_sandbox *sb)
{
	/* One token for both of E2B's: the SDKs send the traffic one on the
	 * code interpreter's context calls, which then need it as every
	 * other call of the sandbox does. */
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:n}", "templateID",
			 sb->template_id, "alias", sb->template_id, "sandboxID", sb->id, "clientID",
			 "agentjail", "envdVersion", E2B_ENVD_VERSION, "envdAccessToken", sb->token,
			 "trafficAccessToken", sb->token, "domain");
}

/* GET /sandboxes/ID's and the list's: the sandbox's facts. */
static json_t *info_json(const struct service *svc, const struct e2b_sandbox *sb)
{
	const struct aj_limits *l = &svc->cfg.sandbox.limits;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:i, s:i, s:i, s:O, s:s, s:s}",
			      "templateID", sb->template_id, "alias", sb->template_id, "sandboxID",
			      sb->id, "clientID", "agentjail", "startedAt",
			      rfc3339(sb->started_unix), "endAt", rfc3339(sb->end_unix), "cpuCount",
			      1, "memoryMB", (int)l->memory_mb, "diskSizeMB", (int)l->disk_mb,
			      "metadata", sb->metadata, "state", sb->paused ? "paused" : "running",
			      "envdVersion",
			      E2B_ENVD_VERSION);
	return o;
}

static bool template_known(const char *t)
{
	for (size_t i = 0; templates[i]; i++)
		if (!strcmp(templates[i], t))
			return true;
	return false;
}

static void create(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	json_t *o = e2b_body_object(rq, rs), *terms = json_object();
	if (!o)
		goto out;
	struct e2b_sandbox sb = {0};
	const char *tpl = json_string_value(json_object_get(o, "templateID"));
	if (!tpl)
		tpl = "base";
	char snap[80];
	int known = template_known(tpl) ? 1 : e2b_snapshot_of(svc, rq, rs, tpl, snap, sizeof snap);
	if (known < 0)
		goto out;
	if (!known) /* a snapshot of the key's: a sandbox with its state */
		json_object_set_new(terms, "from_checkpoint", json_string(snap));
	else if (!template_known(tpl)) {
		e2b_error(rs, 404, "template '%.60s' not found: this agentjail serve offers base, "
			  "code-interpreter-v1 and code-interpreter, each the deployer's sandbox, "
			  "and the key's snapshots (docs/e2b.md)", tpl);
		goto out;
	}
	snprintf(sb.template_id, sizeof sb.template_id, "%s", tpl);
	json_t *md = json_object_get(o, "metadata");
	const char *k;
	json_t *v;
	json_object_foreach(md, k, v) {
		if (!json_is_string(v)) {
			e2b_error(rs, 400, "metadata: %.60s: values are strings", k);
			goto out;
		}
	}
	if (md && !json_is_null(md) && !json_is_object(md)) {
		e2b_error(rs, 400, "metadata: expected an object of strings");
		goto out;
	}
	double timeout;
	if (timeout_of(svc, o, E2B_DEFAULT_TIMEOUT_SEC, &timeout, rs) ||
	    session_terms(svc, rq->key, o, terms, rs))
		goto out;
	struct http_response v1;
	v1_call(svc, rq->key, "POST", "/v1/sessions", terms, NULL, &v1);
	terms = NULL; /* v1_call's now */
	if (v1.code != 201) {
		v1_refusal(rs, &v1, "the sandbox could not be made");
		goto out;
	}
	json_t *b = v1_body(&v1);
	v1_free(&v1);
	snprintf(sb.id, sizeof sb.id, "%s", json_string_value(json_object_get(b, "id")) ?: "");
	json_decref(b);
	sb.key = rq->key;
	sb.metadata = json_is_object(md) ? md : NULL;
	sb.started_unix = now_unix();
	sb.end_unix = sb.started_unix + timeout;
	int rc = e2b_sandboxes_add(e2b_of(svc)->sandboxes, &sb);
	if (rc) {
		char path[80];
		snprintf(path, sizeof path, "/v1/sessions/%s", sb.id);
		v1_call(svc, rq->key, "DELETE", path, NULL, NULL, &v1);
		v1_free(&v1);
		e2b_error(rs, 500, "the sandbox could not be recorded: %s", strerror(-rc));
		goto out;
	}
	respond_json(rs, 201, sandbox_json(&sb));
out:
	json_decref(o);
	json_decref(terms);
}

/* The caller's sandbox id, if its session is still open: 0, or -1 with the
 * 404 answered (a session that closed by itself is forgotten). */
static int live_sandbox(struct service *svc, const struct http_request *rq, struct http_response *rs,
		const char *id, struct e2b_sandbox *out)
{
	struct e2b *e = e2b_of(svc);
	if (e2b_sandboxes_get(e->sandboxes, id, rq->key, out)) {
		e2b_error(rs, 404, "sandbox %.40s not found", id);
		return -1;
	}
	int rc = svc->backend->session_held(svc, id, rq->key);
	if (rc == -ENOENT || rc == -ESHUTDOWN) {
		e2b_sandboxes_remove(e->sandboxes, id, rq->key);
		json_decref(out->metadata);
		e2b_error(rs, 404, "sandbox %.40s not found: its session has ended", id);
		return -1;
	}
	return 0;
}

static void kill_e2b_sandbox(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const char *id)
{
	if (e2b_sandboxes_remove(e2b_of(svc)->sandboxes, id, rq->key))
		return e2b_error(rs, 404, "sandbox %.40s not found", id);
	char path[80];
	snprintf(path, sizeof path, "/v1/sessions/%s", id);
	struct http_response v1;
	v1_call(svc, rq->key, "DELETE", path, NULL, NULL, &v1);
	v1_free(&v1);
	respond_json(rs, 204, NULL);
}

/* A paused sandbox's session brought back (connect's): 0, or -1 with the
 * refusal answered. */
static int session_resume(struct service *svc, const struct http_request *rq,
			  struct http_response *rs, const char *id)
{
	char path[80];
	snprintf(path, sizeof path, "/v1/sessions/%s/resume", id);
	struct http_response v1;
	v1_call(svc, rq->key, "POST", path, NULL, NULL, &v1);
	if (v1.code != 200) {
		v1_refusal(rs, &v1, "the sandbox could not be resumed");
		return -1;
	}
	v1_free(&v1);
	e2b_sandboxes_set_paused(e2b_of(svc)->sandboxes, id, rq->key, false);
	return 0;
}

static void pause_e2b_sandbox(struct service *svc, const struct http_request *rq,
			      struct http_response *rs, const char *id)
{
	struct e2b_sandbox sb;
	if (live_sandbox(svc, rq, rs, id, &sb))
		return;
	json_decref(sb.metadata);
	char path[80];
	snprintf(path, sizeof path, "/v1/sessions/%s/pause", id);
	struct http_response v1;
	v1_call(svc, rq->key, "POST", path, NULL, NULL, &v1);
	if (v1.code == 409) {
		v1_free(&v1);
		return e2b_error(rs, 409, "sandbox %.40s is paused already", id);
	}
	if (v1.code != 200)
		return v1_refusal(rs, &v1, "the sandbox could not be paused");
	v1_free(&v1);
	e2b_sandboxes_set_paused(e2b_of(svc)->sandboxes, id, rq->key, true);
	respond_json(rs, 204, NULL);
}

/* {"count", "timeout"} -> [{"sandbox": ...}] (E2B's fork): each copy a
 * session of the key's with the original's state, recorded as a sandbox
 * of its own with a token of its own. */
static void fork_e2b_sandbox(struct service *svc, const struct http_request *rq,
			     struct http_response *rs, const char *id)
{
	json_t *o = e2b_body_object(rq, rs), *req = NULL, *copies = NULL;
	struct e2b_sandbox sb = {0};
	if (!o)
		return;
	double timeout;
	json_t *count = json_object_get(o, "count");
	if (timeout_of(svc, o, E2B_DEFAULT_TIMEOUT_SEC, &timeout, rs) ||
	    live_sandbox(svc, rq, rs, id, &sb))
		goto out;
	char path[80];
	snprintf(path, sizeof path, "/v1/sessions/%s/fork", id);
	req = json_pack("{s:o}", "count",
			count && !json_is_null(count) ? json_incref(count) : json_integer(1));
	struct http_response v1;
	v1_call(svc, rq->key, "POST", path, req, NULL, &v1);
	req = NULL; /* v1_call's now */
	if (v1.code != 201) {
		v1_refusal(rs, &v1, "the sandbox could not be forked");
		goto out;
	}
	json_t *b = v1_body(&v1);
	v1_free(&v1);
	copies = json_array();
	struct e2b_sandbox copy = sb;
	copy.contexts = e2b_sandboxes_contexts(e2b_of(svc)->sandboxes, id, rq->key);
	copy.started_unix = now_unix();
	copy.end_unix = copy.started_unix + timeout;
	copy.paused = false;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(b, "sessions"), i, v) {
		snprintf(copy.id, sizeof copy.id, "%s", json_string_value(v) ?: "");
		if (e2b_sandboxes_add(e2b_of(svc)->sandboxes, &copy))
			json_array_append_new(copies, json_pack("{s:{s:i, s:s}}", "error", "code",
								500, "message",
								"the copy could not be recorded"));
		else
			json_array_append_new(copies, json_pack("{s:o}", "sandbox",
								sandbox_json(&copy)));
	}
	json_decref(copy.contexts);
	json_decref(b);
	respond_json(rs, 201, copies);
	copies = NULL;
out:
	json_decref(sb.metadata);
	json_decref(copies);
	json_decref(req);
	json_decref(o);
}

/* timeout, refreshes and connect: the sandbox's end moved to now + the
 * body's seconds (connect: never earlier than it was). */
static void set_end(struct service *svc, const struct http_request *rq, struct http_response *rs,
		    const char *id, const char *field, bool connect)
{
	json_t *o = e2b_body_object(rq, rs);
	if (!o)
		return;
	struct e2b_sandbox sb;
	if (live_sandbox(svc, rq, rs, id, &sb))
		goto out;
	json_t *alias = json_object_get(o, field);
	if (alias && strcmp(field, "timeout"))
		json_object_set(o, "timeout", alias);
	double t;
	if (!timeout_of(svc, o, E2B_DEFAULT_TIMEOUT_SEC, &t, rs)) {
		double end = now_unix() + t;
		if (!connect || end > sb.end_unix) {
			e2b_sandboxes_set_end(e2b_of(svc)->sandboxes, id, rq->key, end);
			sb.end_unix = end;
		}
		if (connect && sb.paused && session_resume(svc, rq, rs, id))
			; /* answered */
		else if (connect)
			respond_json(rs, 200, sandbox_json(&sb));
		else
			respond_json(rs, 204, NULL);
	}
	json_decref(sb.metadata);
out:
	json_decref(o);
}

static void info(struct service *svc, const struct http_request *rq, struct http_response *rs,
		 const char *id)
{
	struct e2b_sandbox sb;
	if (live_sandbox(svc, rq, rs, id, &sb))
		return;
	respond_json(rs, 200, info_json(svc, &sb));
	json_decref(sb.metadata);
}

static int hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* %XX decoded in place, for as many rounds as the SDKs encoded (they
 * encode each key and value, then the pairs, then the query: the server
 * took one round off), at most three. */
static void url_decode(char *s)
{
	for (int round = 0; round < 3 && strchr(s, '%'); round++) {
		char *w = s;
		for (const char *r = s; *r; r++) {
			if (*r == '%' && hex(r[1]) >= 0 && hex(r[2]) >= 0) {
				*w++ = (char)(hex(r[1]) * 16 + hex(r[2]));
				r += 2;
			} else {
				*w++ = *r == '+' ? ' ' : *r;
			}
		}
		*w = '\0';
	}
}

/* Whether sb's metadata holds every key=value of the filter q
 * ("k1=v1&k2=v2", URL-encoded as the SDKs send it, decoded once by the
 * server). */
static bool metadata_matches(const struct e2b_sandbox *sb, const char *q)
{
	char *copy = strdup(q ? q : ""), *save = NULL;
	bool ok = copy != NULL;
	for (char *kv = copy ? strtok_r(copy, "&", &save) : NULL; kv && ok;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			continue;
		*eq = '\0';
		url_decode(kv);
		url_decode(eq + 1);
		const char *have = json_string_value(json_object_get(sb->metadata, kv));
		ok = have && !strcmp(have, eq + 1);
	}
	free(copy);
	return ok;
}

static void list_sandboxes(struct service *svc, const struct http_request *rq, struct http_response *rs,
		 bool v2)
{
	const char *state = http_query(rq, "state");
	const char *md = http_query(rq, "metadata");
	const char *lim = http_query(rq, "limit"), *next = http_query(rq, "nextToken");
	long limit = lim ? strtol(lim, NULL, 10) : 100;
	long from = next ? strtol(next, NULL, 10) : 0;
	if (limit < 1 || limit > 1000 || from < 0)
		return e2b_error(rs, 400, "limit: 1 to 1000; nextToken: a token a list gave");
	json_t *out = json_array();
	/* The states asked for ("running,paused"; none: both). */
	bool running = !state || strstr(state, "running"), paused = !state || strstr(state, "paused");
	struct e2b_sandbox *a = NULL;
	size_t n = 0;
	if (e2b_sandboxes_list(e2b_of(svc)->sandboxes, rq->key, &a, &n)) {
		json_decref(out);
		return e2b_error(rs, 500, "out of memory");
	}
	long seen = 0;
	for (size_t i = 0; i < n; i++) {
		/* A sandbox whose session agentjail closed (idle, its lifetime,
		 * a failed sandbox) is forgotten, never listed. */
		int held = svc->backend->session_held(svc, a[i].id, rq->key);
		if (held == -ENOENT || held == -ESHUTDOWN) {
			e2b_sandboxes_remove(e2b_of(svc)->sandboxes, a[i].id, rq->key);
			json_decref(a[i].metadata);
			continue;
		}
		if ((a[i].paused ? paused : running) && metadata_matches(&a[i], md) &&
		    seen++ >= from &&
		    (long)json_array_size(out) < (v2 ? limit : LONG_MAX))
			json_array_append_new(out, info_json(svc, &a[i]));
		json_decref(a[i].metadata);
	}
	free(a);
	if (v2 && seen > from + (long)json_array_size(out)) {
		rs->header_name = "X-Next-Token";
		snprintf(rs->header_value, sizeof rs->header_value, "%ld",
			 from + (long)json_array_size(out));
	}
	const char *hn = rs->header_name;
	char hv[sizeof rs->header_value];
	memcpy(hv, rs->header_value, sizeof hv);
	respond_json(rs, 200, out);
	rs->header_name = hn;
	memcpy(rs->header_value, hv, sizeof hv);
}

/* The sandbox id in path after prefix, and what follows it ("" or
 * "/timeout"), or NULL. */
static const char *split_id(const char *path, const char *prefix, char *id, size_t n)
{
	size_t p = strlen(prefix);
	if (strncmp(path, prefix, p) || !path[p])
		return NULL;
	const char *rest = strchr(path + p, '/');
	size_t len = rest ? (size_t)(rest - path - p) : strlen(path + p);
	if (!len || len >= n)
		return NULL;
	memcpy(id, path + p, len);
	id[len] = '\0';
	return rest ? rest : "";
}

void e2b_control(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	const char *p = rq->path, *m = rq->method;
	bool v2 = !strncmp(p, "/v2", 3);
	const char *base = v2 ? p + 3 : p;
	if (!strcmp(p, "/snapshots") || !strncmp(p, "/templates/", 11))
		return e2b_snapshots(svc, rq, rs);
	if (!strcmp(base, "/sandboxes")) {
		if (!strcmp(m, "POST"))
			return create(svc, rq, rs);
		if (!strcmp(m, "GET"))
			return list_sandboxes(svc, rq, rs, v2);
		return respond_method(rs, m, "GET, POST");
	}
	char id[40];
	const char *rest = split_id(base, "/sandboxes/", id, sizeof id);
	if (!rest)
		return e2b_error(rs, 404, "no such route: %.200s", p);
	if (!*rest) {
		if (!strcmp(m, "GET"))
			return info(svc, rq, rs, id);
		if (!strcmp(m, "DELETE"))
			return kill_e2b_sandbox(svc, rq, rs, id);
		return respond_method(rs, m, "GET, DELETE");
	}
	if (strcmp(m, "POST") && strcmp(rest, "/metrics"))
		return respond_method(rs, m, "POST");
	if (!strcmp(rest, "/timeout"))
		return set_end(svc, rq, rs, id, "timeout", false);
	if (!strcmp(rest, "/refreshes"))
		return set_end(svc, rq, rs, id, "duration", false);
	if (!strcmp(rest, "/connect") || !strcmp(rest, "/resume"))
		return set_end(svc, rq, rs, id, "timeout", true);
	if (!strcmp(rest, "/pause"))
		return pause_e2b_sandbox(svc, rq, rs, id);
	if (!strcmp(rest, "/fork"))
		return fork_e2b_sandbox(svc, rq, rs, id);
	if (!strcmp(rest, "/snapshots"))
		return e2b_snapshot_create(svc, rq, rs, id);
	static const char *const later[] = {"/metrics", "/network", NULL};
	for (size_t i = 0; later[i]; i++)
		if (!strcmp(rest, later[i]))
			return e2b_error(rs, 501, "sandbox %s (%s) is not supported by agentjail yet "
					 "(docs/e2b.md)", rest + 1, p);
	e2b_error(rs, 404, "no such route: %.200s", p);
}
