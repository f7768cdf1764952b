/* The routes of the JSON API (api.c), handed to the server by main.c. */
#ifndef AJ_SERVE_API_V1_H
#define AJ_SERVE_API_V1_H

#include <stdbool.h>
#include <stddef.h>

#include "http/respond.h"

struct service;

void api_handle(struct service *svc, const struct http_request *rq, struct http_response *rs);
/* Which routes need a key (all but health). */
bool api_needs_key(const char *method, const char *path);
/* The largest body a route takes, decided from its method and path. */
size_t api_body_limit(const struct service *svc, const char *method, const char *path);
/* The largest body POST /v1/sessions/ID/exec takes: a request's (c's
 * max_body), or a transfer's worth of stdin in base64 and a small
 * object's room beside it, whichever is larger. */
struct serve_config;
size_t api_exec_body_limit(const struct serve_config *c);
/* Before a body is read (http.h's may_buffer): 0 to read it, or -1 with
 * the answer in rs (404: a session transfer to a session the key does not
 * hold). */
int api_may_buffer(struct service *svc, const struct http_request *head,
		   struct http_response *rs);

#endif
