/* connect_rpc.h. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "connect_rpc.h"

static const struct {
	const char *code;
	int status;
} codes[] = {{"canceled", 499},         {"unknown", 500},           {"invalid_argument", 400},
	     {"deadline_exceeded", 504}, {"not_found", 404},         {"already_exists", 409},
	     {"permission_denied", 403}, {"resource_exhausted", 429}, {"failed_precondition", 400},
	     {"aborted", 409},          {"out_of_range", 400},      {"unimplemented", 501},
	     {"internal", 500},         {"unavailable", 503},       {"data_loss", 500},
	     {"unauthenticated", 401}};

int connect_http_status(const char *code)
{
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (!strcmp(codes[i].code, code))
			return codes[i].status;
	return 500;
}

const char *connect_code_of_http(int status)
{
	switch (status) {
	case 400:
		return "invalid_argument";
	case 401:
		return "unauthenticated";
	case 403:
		return "permission_denied";
	case 404:
	case 410:
		return "not_found";
	case 409:
		return "already_exists";
	case 413:
	case 429:
		return "resource_exhausted";
	case 501:
		return "unimplemented";
	case 503:
		return "unavailable";
	case 504:
		return "deadline_exceeded";
	default:
		return "internal";
	}
}

bool connect_is_stream(const struct http_request *rq)
{
	return rq->content_type &&
	       !strncasecmp(rq->content_type, CONNECT_STREAM_TYPE, strlen(CONNECT_STREAM_TYPE));
}

int connect_envelope(char **buf, size_t *len, size_t *cap, int flags, json_t *msg)
{
	char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	if (!text)
		return -1;
	size_t n = strlen(text);
	if (*len + 5 + n > *cap) {
		size_t c = (*len + 5 + n) * 2;
		char *b = realloc(*buf, c);
		if (!b) {
			free(text);
			return -1;
		}
		*buf = b;
		*cap = c;
	}
	unsigned char *p = (unsigned char *)*buf + *len;
	p[0] = (unsigned char)flags;
	p[1] = (unsigned char)(n >> 24);
	p[2] = (unsigned char)(n >> 16);
	p[3] = (unsigned char)(n >> 8);
	p[4] = (unsigned char)n;
	memcpy(p + 5, text, n);
	*len += 5 + n;
	free(text);
	return 0;
}

int connect_end(char **buf, size_t *len, size_t *cap, const char *code, const char *message)
{
	json_t *m = code ? json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", message)
			 : json_object();
	return connect_envelope(buf, len, cap, CONNECT_END_STREAM, m);
}

void connect_unary(struct http_response *rs, json_t *msg)
{
	respond_json(rs, 200, msg);
}

void connect_error(const struct http_request *rq, struct http_response *rs, const char *code,
		   const char *fmt, ...)
{
	char message[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	free(rs->body);
	*rs = (struct http_response){0};
	if (!connect_is_stream(rq)) {
		respond_json(rs, connect_http_status(code),
			     json_pack("{s:s, s:s}", "code", code, "message", message));
		return;
	}
	size_t len = 0, cap = 0;
	if (connect_end(&rs->body, &len, &cap, code, message)) {
		respond_error(rs, 500, "internal", "out of memory");
		return;
	}
	rs->code = 200;
	rs->len = len;
	rs->content_type = CONNECT_STREAM_TYPE;
}

json_t *connect_request(const struct http_request *rq, struct http_response *rs)
{
	const char *p = rq->body;
	size_t n = rq->body_len;
	if (connect_is_stream(rq)) {
		const unsigned char *u = (const unsigned char *)p;
		size_t len = n >= 5 ? ((size_t)u[1] << 24 | (size_t)u[2] << 16 | (size_t)u[3] << 8 |
				       (size_t)u[4])
				    : 0;
		if (n < 5 || len != n - 5 || (u[0] & 0x01)) {
			connect_error(rq, rs, "invalid_argument",
				      "expected one uncompressed envelope of JSON");
			return NULL;
		}
		p += 5;
		n = len;
	}
	/* The caps every JSON body meets before it is parsed (json_caps.h). */
	struct http_request inner = *rq;
	inner.body = p;
	inner.body_len = n;
	if (request_json_caps(&inner, rs))
		return NULL;
	json_error_t e;
	json_t *msg = json_loadb(n ? p : "{}", n ? n : 2, 0, &e);
	if (!json_is_object(msg)) {
		json_decref(msg);
		connect_error(rq, rs, "invalid_argument", "the message is not a JSON object");
		return NULL;
	}
	return msg;
}
