/* The HTTP server (http.c). It knows no route: main.c gives it the
 * handlers at start, so the server never calls the routes by name. */
#ifndef AJ_SERVE_HTTP_H
#define AJ_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "agentjail.h"
#include "respond.h"

struct service;

struct http_handlers {
	/* The JSON API: every path but /mcp. */
	void (*api)(struct service *svc, const struct http_request *rq, struct http_response *rs);
	bool (*api_needs_key)(const char *method, const char *path);
	size_t (*api_body_limit)(const struct service *svc, const char *method, const char *path);
	/* /mcp: always keyed, its body capped at max_body. */
	void (*mcp)(struct service *svc, const struct http_request *rq, struct http_response *rs);
};

/* The HTTP server over svc, answering through h (kept): serves until
 * http_stop. */
int http_start(struct service *svc, const struct http_handlers *h, struct aj_error *err);
void http_stop(struct service *svc);
/* Waits (at most timeout_sec) until no request is between its headers and
 * the end of its answer: the answers of the last runs reach their clients. */
void http_quiesce(double timeout_sec);

#endif
