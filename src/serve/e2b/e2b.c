/* e2b.h: the wing's routes, its state and its sweep. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/internal.h"
#include "../admit/service.h"
#include "../http/keys.h"
#include "connect_rpc.h"
#include "common.h"
#include "control.h"
#include "e2b.h"
#include "execute.h"
#include "files.h"
#include "process.h"
#include "v1_client.h"

#define PROCESS_PREFIX "/process.Process/"
#define FILESYSTEM_PREFIX "/filesystem.Filesystem/"

int e2b_open(struct service *svc, e2b_v1_fn v1)
{
	struct e2b *e = calloc(1, sizeof *e);
	if (!e || !(e->sandboxes = e2b_sandboxes_new())) {
		free(e);
		return -ENOMEM;
	}
	e->v1 = v1;
	svc->e2b = e;
	return 0;
}

void e2b_close(struct service *svc)
{
	struct e2b *e = svc->e2b;
	if (!e)
		return;
	e2b_sandboxes_free(e->sandboxes);
	free(e);
	svc->e2b = NULL;
}

void e2b_sweep(struct service *svc)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct e2b_sandbox *gone = NULL;
	size_t n = 0;
	if (!svc->e2b || e2b_sandboxes_expired(svc->e2b->sandboxes, (double)ts.tv_sec, &gone, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		/* Its E2B timeout passed: the session closes, as kill would. */
		char path[80];
		snprintf(path, sizeof path, "/v1/sessions/%s", gone[i].id);
		struct http_response v1;
		v1_call(svc, gone[i].key, "DELETE", path, NULL, NULL, &v1);
		v1_free(&v1);
		json_decref(gone[i].metadata);
	}
	free(gone);
}

static bool control_path(const char *path)
{
	return !strncmp(path, "/sandboxes", 10) || !strncmp(path, "/v2/sandboxes", 13) ||
	       !strcmp(path, "/snapshots") || !strncmp(path, "/templates/", 11);
}

bool e2b_is(const char *path)
{
	return control_path(path) || !strcmp(path, "/health") || !strcmp(path, "/files") ||
	       !strcmp(path, "/execute") || !strncmp(path, "/contexts", 9) ||
	       !strncmp(path, PROCESS_PREFIX, strlen(PROCESS_PREFIX)) ||
	       !strncmp(path, FILESYSTEM_PREFIX, strlen(FILESYSTEM_PREFIX));
}

bool e2b_needs_key(const char *method, const char *path)
{
	(void)method;
	/* envd's health alone answers without the sandbox's token (the SDKs
	 * call it without one). The code interpreter's context calls carry
	 * the token as E2B-Traffic-Access-Token: a restart forgets state. */
	return strcmp(path, "/health") != 0;
}

size_t e2b_body_limit(const struct service *svc, const char *method, const char *path)
{
	/* A file goes up as the body, as large as a transfer may be; code as
	 * large as code may be; every other call is a small object. */
	if (!strcmp(method, "POST") && !strcmp(path, "/files"))
		return ((size_t)svc->cfg.sandbox.session.transfer_mb << 20) + SERVE_SMALL_BODY;
	if (!strcmp(method, "POST") &&
	    (!strcmp(path, "/execute") || !strcmp(path, PROCESS_PREFIX "SendInput")))
		return svc->cfg.max_body;
	return svc->cfg.max_body > SERVE_SMALL_BODY ? SERVE_SMALL_BODY : svc->cfg.max_body;
}

const struct key *e2b_sandbox_key(struct service *svc, const char *id, const char *token,
				  const char **name)
{
	const struct key *k = svc->e2b ? e2b_sandboxes_key(svc->e2b->sandboxes, id, token) : NULL;
	*name = k ? k->name : NULL;
	return k;
}

/* A data-plane call: the sandbox its E2b-Sandbox-Id names, the caller's. */
static void data_plane(struct service *svc, const struct http_request *rq,
		       struct http_response *rs)
{
	const char *p = rq->path;
	if (!strcmp(p, "/health")) {
		/* envd's: the sandbox answers (agentjail's own is /v1/health). */
		return respond_json(rs, 204, NULL);
	}
	const char *id = http_header(rq, "E2b-Sandbox-Id");
	bool rpc = !strncmp(p, PROCESS_PREFIX, strlen(PROCESS_PREFIX)) ||
		   !strncmp(p, FILESYSTEM_PREFIX, strlen(FILESYSTEM_PREFIX));
	struct e2b_call c = {.svc = svc, .rq = rq, .rs = rs};
	if (!id || !rq->key ||
	    e2b_sandboxes_get(svc->e2b->sandboxes, id, rq->key, &c.sb)) {
		/* Another key's sandbox answers as an unknown one. */
		if (rpc)
			return connect_error(rq, rs, "not_found", "sandbox %.40s not found",
					     id ? id : "(no E2b-Sandbox-Id header)");
		return e2b_error(rs, 404, "sandbox %.40s not found",
				 id ? id : "(no E2b-Sandbox-Id header)");
	}
	if (!strncmp(p, PROCESS_PREFIX, strlen(PROCESS_PREFIX))) {
		if (strcmp(rq->method, "POST"))
			respond_method(rs, rq->method, "POST");
		else
			e2b_process(&c, p + strlen(PROCESS_PREFIX));
	} else if (rpc) {
		if (strcmp(rq->method, "POST"))
			respond_method(rs, rq->method, "POST");
		else
			e2b_filesystem(&c, p + strlen(FILESYSTEM_PREFIX));
	} else if (!strcmp(p, "/files")) {
		e2b_files(&c);
	} else if (!strcmp(p, "/execute") || !strncmp(p, "/contexts", 9)) {
		e2b_code(&c);
	} else {
		e2b_error(rs, 501, "%s %s is not supported by agentjail yet (docs/e2b.md)",
			  rq->method, p);
	}
	json_decref(c.sb.metadata);
}

void e2b_reword(const char *path, struct http_response *rs)
{
	json_t *b = rs->body ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
	const char *m = json_string_value(json_object_get(json_object_get(b, "error"), "message"));
	char message[600];
	snprintf(message, sizeof message, "%s",
		 rs->code == 401 ? "a valid key is required: X-API-KEY (E2B_API_KEY: an agentjail "
				   "key), or a sandbox's own access token for its calls"
		 : m		 ? m
				 : "refused");
	json_decref(b);
	free(rs->body);
	rs->body = NULL;
	int status = rs->code;
	bool rpc = !strncmp(path, PROCESS_PREFIX, strlen(PROCESS_PREFIX)) ||
		   !strncmp(path, FILESYSTEM_PREFIX, strlen(FILESYSTEM_PREFIX));
	if (status == 401 && !control_path(path)) {
		/* A sandbox's call without its token: as for an unknown sandbox,
		 * whether or not the id names one (nothing tells a wrong token
		 * from a sandbox that has ended). */
		status = 404;
		snprintf(message, sizeof message, "sandbox not found (or the access token is not "
			 "its own): it may have ended");
	}
	unsigned retry = rs->retry_after;
	const char *allow = rs->allow;
	respond_json(rs, status,
		     rpc ? json_pack("{s:s, s:s}", "code", connect_code_of_http(status), "message",
				     message)
			 : json_pack("{s:i, s:s}", "code", status, "message", message));
	rs->retry_after = retry;
	rs->allow = allow;
}

void e2b_handle(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	if (atomic_load(&svc->draining))
		return e2b_error(rs, 503, "the server is shutting down");
	if (control_path(rq->path))
		e2b_control(svc, rq, rs);
	else
		data_plane(svc, rq, rs);
}
