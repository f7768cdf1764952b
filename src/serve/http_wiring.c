/* http_wiring.h: each handler the server calls, on the service. */
#include "../cli/cli.h"
#include "api_v1.h"
#include "e2b/e2b.h"
#include "http_wiring.h"
#include "mcp_http.h"
#include "admit/service.h"
#include "ui/ui.h"

/* The E2B-compatible API's paths are its own (e2b.h); every other one is
 * the v1 API's. */
static void route_api(void *ctx, const struct http_request *rq, struct http_response *rs)
{
	if (ui_is(rq->path))
		ui_handle(rq, rs);
	else if (e2b_is(rq->path))
		e2b_handle(ctx, rq, rs);
	else
		api_handle(ctx, rq, rs);
}

static bool route_needs_key(const char *method, const char *path)
{
	/* The console's files are no secret: the page asks for the key. */
	if (ui_is(path))
		return false;
	return e2b_is(path) ? e2b_needs_key(method, path) : api_needs_key(method, path);
}

static size_t route_body_limit(void *ctx, const char *method, const char *path)
{
	return e2b_is(path) ? e2b_body_limit(ctx, method, path) : api_body_limit(ctx, method, path);
}

static void reword_refusal(void *ctx, const char *path, struct http_response *rs)
{
	(void)ctx;
	if (e2b_is(path))
		e2b_reword(path, rs);
}

static const struct key *sandbox_key(void *ctx, const char *id, const char *token,
				     const char **name)
{
	return e2b_sandbox_key(ctx, id, token, name);
}

static void route_mcp(void *ctx, const struct http_request *rq, struct http_response *rs)
{
	mcp_http_handle(ctx, rq, rs);
}

static const struct key *wired_key(void *ctx, const char *token, size_t len,
				      const char **name)
{
	struct service *svc = ctx;
	const struct key *k = keys_find(&svc->keys, token, len);
	*name = k ? k->name : NULL;
	return k;
}

static void wired_count(void *ctx, enum http_event ev, int code)
{
	struct service *svc = ctx;
	if (ev == HTTP_AUTH_FAILED) {
		metrics_auth_failure(&svc->metrics);
		return;
	}
	metrics_http(&svc->metrics, code);
	/* Whatever was too large, a body or the code in it, nothing ran: a
	 * refusal, never a sandbox's failure. */
	if (code == 413)
		metrics_too_large(&svc->metrics);
}

static bool draining(void *ctx)
{
	struct service *svc = ctx;
	return atomic_load(&svc->draining);
}

static int may_buffer(void *ctx, const struct http_request *head, struct http_response *rs)
{
	return api_may_buffer(ctx, head, rs);
}

void http_wiring(struct service *svc, struct http_config *cfg, struct http_handlers *h)
{
	const struct serve_config *c = &svc->cfg;
	*cfg = (struct http_config){.host = c->host,
				    .port = c->port,
				    .idle_sec = c->idle_sec,
				    .head_sec = c->head_sec,
				    .body_sec = c->request_sec,
				    .max_connections = c->max_connections,
				    .per_ip_connections = c->per_ip_connections,
				    .mcp_body = c->max_body,
				    .body_budget = c->body_budget,
				    .key_body_budget = c->key_body_budget,
				    .tier = c->sandbox.tier};
	*h = (struct http_handlers){.ctx = svc,
				    .api = route_api,
				    .needs_key = route_needs_key,
				    .sandbox_key = sandbox_key,
				    .reword = reword_refusal,
				    .body_limit = route_body_limit,
				    .mcp = route_mcp,
				    .authenticate = wired_key,
				    .count = wired_count,
				    .draining = draining,
				    .may_buffer = may_buffer};
}

int http_wiring_budgets(struct serve_config *c)
{
	/* A command's body holds the most: code's cap and a transfer's worth
	 * of stdin (api_exec_body_limit). */
	size_t largest = api_exec_body_limit(c) + 1;
	size_t key_min = largest > ((size_t)SERVE_DEFAULT_KEY_BODY_BUDGET_MB << 20)
				 ? ((largest >> 20) + 1) << 20
				 : (size_t)SERVE_DEFAULT_KEY_BODY_BUDGET_MB << 20;
	if (!c->key_body_budget)
		c->key_body_budget = key_min;
	if (!c->body_budget)
		c->body_budget = c->key_body_budget > ((size_t)SERVE_DEFAULT_BODY_BUDGET_MB << 20)
					 ? c->key_body_budget
					 : (size_t)SERVE_DEFAULT_BODY_BUDGET_MB << 20;
	if (c->key_body_budget < largest || c->body_budget < c->key_body_budget) {
		cli_error("serve: --key-body-budget-mb must hold the largest body a route "
			  "takes (%zu MiB: --max-body-kb and --transfer-mb, in base64), and --body-budget-mb "
			  "one key's budget", (largest >> 20) + 1);
		return -1;
	}
	return 0;
}
