/* What the E2B wing's files share (common.h): its state, its path
 * mapping and its control plane's error shape. The bottom of the wing:
 * it calls none of its other files. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "../admit/service.h"
#include "common.h"

struct e2b *e2b_of(struct service *svc)
{
	return svc->e2b;
}

const char *e2b_path(const char *path, char *out, size_t n)
{
	size_t h = strlen(E2B_HOME);
	int len;
	if (!strncmp(path, E2B_HOME, h) && (!path[h] || path[h] == '/'))
		len = snprintf(out, n, "%s%s", AJ_SESSION_WORKSPACE, path + h);
	else
		len = snprintf(out, n, "%s", path);
	/* Never a path cut short: it would name another file. */
	return len >= 0 && (size_t)len < n && strlen(path) <= E2B_PATH_MAX ? out : NULL;
}

void e2b_error(struct http_response *rs, int status, const char *fmt, ...)
{
	char m[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	free(rs->body);
	rs->body = NULL;
	respond_json(rs, status, json_pack("{s:i, s:s}", "code", status, "message", m));
}

/* The body as an object, or NULL with the 400 answered. */
json_t *e2b_body_object(const struct http_request *rq, struct http_response *rs)
{
	if (!rq->body_len)
		return json_object();
	if (request_json_caps(rq, rs))
		return NULL;
	json_t *o = json_loadb(rq->body, rq->body_len, 0, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		e2b_error(rs, 400, "the body is not a JSON object");
		return NULL;
	}
	return o;
}
