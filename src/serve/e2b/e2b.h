/* An E2B-compatible API on serve's listener (docs/e2b.md): code written for
 * E2B's SDKs runs unchanged when E2B_API_URL and E2B_SANDBOX_URL point at
 * serve and E2B_API_KEY is an agentjail key.
 *
 *   control plane   /sandboxes..., /v2/sandboxes... with X-API-KEY
 *   data plane      envd's routes (/health, /files, /process.Process/...,
 *                   /filesystem.Filesystem/...) and the code interpreter's
 *                   (/execute, /contexts), told apart by E2b-Sandbox-Id and
 *                   authorised by the sandbox's own X-Access-Token
 *
 * An E2B sandbox is an agentjail session of the same id, and every call
 * goes through the v1 API (v1_client.h): the wing adds E2B's shapes and
 * words, never a power of its own. */
#ifndef AJ_SERVE_E2B_H
#define AJ_SERVE_E2B_H

#include <stdbool.h>
#include <stddef.h>

#include "../http/respond.h"
#include "common.h"

struct service;
struct key;

/* The wing's state into svc (svc->e2b), its calls going to v1: 0, or
 * -ENOMEM. */
int e2b_open(struct service *svc, e2b_v1_fn v1);
void e2b_close(struct service *svc);
/* Closes the sandboxes whose E2B timeout has passed (serve's main loop,
 * each second). */
void e2b_sweep(struct service *svc);

/* Whether path is one of the wing's. */
bool e2b_is(const char *path);
/* Whether it needs a key (all but envd's /health). */
bool e2b_needs_key(const char *method, const char *path);
/* Its body cap. */
size_t e2b_body_limit(const struct service *svc, const char *method, const char *path);
/* The key owning sandbox id if token is its access token, else NULL. */
const struct key *e2b_sandbox_key(struct service *svc, const char *id, const char *token,
				  const char **name);
void e2b_handle(struct service *svc, const struct http_request *rq, struct http_response *rs);
/* A v1 error answer on one of the wing's paths in E2B's words: {"code":
 * status, "message"}, or a Connect error's {"code": name, "message"}. */
void e2b_reword(const char *path, struct http_response *rs);

#endif
