/* The Docker Engine API in JSON (see api.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

int docker_socket_path(const char *configured, char *out, size_t n, struct aj_error *err)
{
	const char *path = configured;
	if (!path || !*path) {
		const char *host = getenv("DOCKER_HOST");
		if (host && *host) {
			if (strncmp(host, "unix://", 7) != 0)
				return error_set(err, -EPROTONOSUPPORT,
						 "docker: DOCKER_HOST=%s: only unix:// sockets are "
						 "supported (a TCP engine would take the program's "
						 "code and results over the network)",
						 host);
			path = host + 7;
		} else {
			path = DOCKER_DEFAULT_SOCKET;
		}
	}
	if (path[0] != '/')
		return error_set(err, -EINVAL, "docker: socket path must be absolute: %s", path);
	if ((size_t)snprintf(out, n, "%s", path) >= n)
		return error_set(err, -ENAMETOOLONG, "docker: socket path too long: %s", path);
	return 0;
}

/* The daemon's error replies are {"message": "..."}. */
static const char *reply_message(json_t *reply, const char *raw)
{
	const char *m = json_string_value(json_object_get(reply, "message"));
	return m ? m : raw;
}

int docker_call(struct http_conn *c, const char *method, const char *path, json_t *body,
		const char *what, int *status, json_t **reply, struct aj_error *err)
{
	char *text = NULL;
	if (reply)
		*reply = NULL;
	if (status)
		*status = 0;
	if (body && !(text = json_dumps(body, JSON_COMPACT)))
		return error_set(err, -ENOMEM, "docker: %s: out of memory", what);
	struct http_reply r;
	struct aj_error e = {0};
	int rc = http_call(c, method, path, text, text ? strlen(text) : 0, DOCKER_CALL_MS, &r, &e);
	free(text);
	if (rc)
		return error_set(err, rc, "%s (%s)", e.message, what);
	if (status)
		*status = r.status;
	json_t *j = r.len ? json_loadb(r.body, r.len, 0, NULL) : NULL;
	if (r.status < 200 || r.status > 299) {
		/* Trim the daemon's message to one line for ours. */
		char msg[300];
		snprintf(msg, sizeof msg, "%s", reply_message(j, r.body));
		msg[strcspn(msg, "\n")] = 0;
		rc = error_set(err, r.status == 404 ? -ENOENT : r.status == 409 ? -EBUSY : -EPROTO,
			       "docker: %s: HTTP %d: %s", what, r.status, msg);
		json_decref(j);
		j = NULL;
	} else if (r.len && !j) {
		rc = error_set(err, -EPROTO, "docker: %s: the reply is not JSON: %.80s", what,
			       r.body);
	}
	http_reply_free(&r);
	if (reply && !rc)
		*reply = j;
	else
		json_decref(j);
	return rc;
}

int docker_version(const char *socket_path, char *out, size_t n, struct aj_error *err)
{
	struct http_conn c;
	int rc = http_connect(&c, socket_path, DOCKER_CALL_MS, err);
	if (rc)
		return rc;
	json_t *v = NULL;
	rc = docker_call(&c, "GET", "/version", NULL, "version", NULL, &v, err);
	http_close(&c);
	if (rc)
		return rc;
	const char *ver = json_string_value(json_object_get(v, "Version"));
	const char *api = json_string_value(json_object_get(v, "ApiVersion"));
	snprintf(out, n, "%s (API %s)", ver ? ver : "?", api ? api : "?");
	json_decref(v);
	return 0;
}
