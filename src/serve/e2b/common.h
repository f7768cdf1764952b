/* What the E2B wing's files share (e2b.h is its face to serve): its
 * state, one data-plane call, the path mapping, the control plane's error
 * shape (common.c). */
#ifndef AJ_SERVE_E2B_COMMON_H
#define AJ_SERVE_E2B_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../http/respond.h"
#include "sandboxes.h"

struct service;

/* The version of envd this API answers as: the SDKs gate features on it
 * (stdin false 0.3.0, CloseStdin 0.5.2, octet-stream uploads 0.5.7,
 * metadata 0.6.2). */
#define E2B_ENVD_VERSION "0.6.13"
/* E2B's home directory, which is agentjail's workspace here. */
#define E2B_HOME "/home/user"

/* The v1 API's handler, which the wing calls for everything it does
 * (v1_client.h): handed in by the layer above that holds both. */
typedef void (*e2b_v1_fn)(struct service *svc, const struct http_request *rq,
			  struct http_response *rs);

struct e2b {
	struct e2b_sandboxes *sandboxes;
	e2b_v1_fn v1; /* the v1 API's routes (api_v1.c's api_handle, given by main.c) */
};

/* One data-plane call: the request, its answer, the sandbox it is for
 * (a copy; its metadata reference released by e2b_handle). */
struct e2b_call {
	struct service *svc;
	const struct http_request *rq;
	struct http_response *rs;
	struct e2b_sandbox sb;
};

struct e2b *e2b_of(struct service *svc);
/* The longest path the wing takes (Linux's PATH_MAX): a longer one is
 * refused, never cut. */
#define E2B_PATH_MAX 4096
/* An E2B path as the sandbox's: E2B's home (/home/user) is the workspace,
 * a relative path is the workspace's; out (n bytes) holds it. NULL when
 * path is longer than E2B_PATH_MAX or does not fit. */
const char *e2b_path(const char *path, char *out, size_t n);
/* The request's body as a JSON object (none: {}), or NULL with the 400
 * answered. */
json_t *e2b_body_object(const struct http_request *rq, struct http_response *rs);
/* {"code": status, "message"}: the control plane's error shape. */
void e2b_error(struct http_response *rs, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
