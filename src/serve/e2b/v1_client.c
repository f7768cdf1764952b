/* v1_client.h: the request made here, the v1 routes' answer kept whole. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "v1_client.h"

void v1_call_raw(struct service *svc, const struct key *key, const char *method,
		 const char *path, const void *body, size_t len, struct http_response *rs)
{
	memset(rs, 0, sizeof *rs);
	struct http_request rq = {.method = method,
				  .path = path,
				  .body = body ? body : "",
				  .body_len = body ? len : 0,
				  .key = key,
				  .content_type = "application/octet-stream"};
	e2b_of(svc)->v1(svc, &rq, rs);
}

void v1_call(struct service *svc, const struct key *key, const char *method, const char *path,
	     json_t *body, const char *accept, struct http_response *rs)
{
	memset(rs, 0, sizeof *rs);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	bool had_body = body != NULL;
	json_decref(body);
	if (had_body && !text) {
		respond_error(rs, 500, "internal", "out of memory");
		return;
	}
	struct http_request rq = {.method = method,
				  .path = path,
				  .body = text ? text : "",
				  .body_len = text ? strlen(text) : 0,
				  .key = key,
				  .accept = accept,
				  .content_type = "application/json"};
	e2b_of(svc)->v1(svc, &rq, rs);
	free(text);
}

json_t *v1_body(const struct http_response *rs)
{
	if (!rs->body || !rs->len)
		return NULL;
	return json_loadb(rs->body, rs->len, 0, NULL);
}

const char *v1_error_message(const struct http_response *rs, char *buf, size_t n)
{
	json_t *b = v1_body(rs);
	const char *m = json_string_value(json_object_get(json_object_get(b, "error"), "message"));
	snprintf(buf, n, "%s", m ? m : "");
	json_decref(b);
	return buf;
}

void v1_free(struct http_response *rs)
{
	free(rs->body);
	rs->body = NULL;
	rs->len = 0;
}

/* A v1 failure as E2B's error, the same status and words. */
void v1_refusal(struct http_response *rs, struct http_response *v1, const char *what)
{
	char m[400];
	v1_error_message(v1, m, sizeof m);
	int code = v1->code;
	unsigned retry = v1->retry_after;
	v1_free(v1);
	e2b_error(rs, code, "%s: %s", what, m[0] ? m : "refused");
	rs->retry_after = retry;
}
