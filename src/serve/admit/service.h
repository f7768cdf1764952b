/* agentjail serve: the state one server holds, shared by its HTTP API
 * (api.c), its MCP endpoint (mcp_http.c), its backends (local_api.c,
 * remote_api.c) and its main loop (main.c).
 *
 * The files call downwards only: main.c wires http.c (the server) to the
 * routes (api.c, mcp_http.c) and the routes to one backend; the routes
 * reach the backend through its ops table (backend.h), and every layer
 * answers through respond.c, which knows no route. */
#ifndef AJ_SERVE_SERVICE_H
#define AJ_SERVE_SERVICE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>

#include "admit.h"
#include "agentjail.h"
#include "../http/keys.h"
#include "metrics.h"
#include "../runs/runs.h"

#define SERVE_DEFAULT_PORT 8910
#define SERVE_DEFAULT_QUEUE 64
#define SERVE_DEFAULT_MAX_WAIT_SEC 30.0
#define SERVE_DEFAULT_BODY_KB 8192
#define SERVE_DEFAULT_IDLE_SEC 30
#define SERVE_DEFAULT_REQUEST_SEC 60
#define SERVE_MAX_CONNECTIONS 512
#define SERVE_DEFAULT_HEAD_SEC 20
#define SERVE_DEFAULT_PER_IP 64
#define SERVE_DEFAULT_BODY_BUDGET_MB 64
#define SERVE_DEFAULT_KEY_BODY_BUDGET_MB 32
#define SERVE_SMALL_BODY ((size_t)64 << 10) /* routes that take a small object */
#define SERVE_DEFAULT_KEEP_RUNS_SEC 3600.0
#define SERVE_DEFAULT_RUNS_BUDGET ((size_t)256 << 20)
#define SERVE_MAX_WEBHOOK_ALLOW 16
#define CKPT_DEFAULT_TTL_SEC (7 * 24 * 3600.0)
#define CKPT_DEFAULT_QUOTA_MB 2048u

struct serve_config {
	struct aj_config sandbox;   /* the deployer's tier and limits */
	const char *host;           /* 127.0.0.1 unless told */
	unsigned port;
	unsigned concurrency;       /* runs at once; with a queue, a cap on the fleet's slots */
	bool concurrency_set;       /* --concurrency given (with a queue: the cap holds) */
	unsigned queue_size;        /* runs waiting beyond those */
	double max_wait_sec;        /* longest wait in the queue */
	size_t max_body;            /* bytes of a JSON request */
	unsigned idle_sec;          /* a connection silent this long is closed */
	unsigned request_sec;       /* a request body must arrive within this */
	unsigned max_connections;
	unsigned head_sec;          /* a request head must arrive within this */
	unsigned per_ip_connections; /* 0: no limit */
	size_t body_budget;         /* bytes of request bodies in memory at once */
	size_t key_body_budget;     /* ... of one key's requests */
	const char *keys_path;      /* NULL: one key, made at start, shown once */
	const char *origin;         /* /mcp: the one Origin allowed besides none */
	const char *queue_url;      /* redis://...: runs go to workers, not here */
	double keep_runs_sec;       /* a recorded run's events and result, after its end */
	size_t runs_budget;         /* bytes of recorded runs one key may hold */
	const char *webhook_allow[SERVE_MAX_WEBHOOK_ALLOW]; /* URL prefixes a webhook may have */
	unsigned webhook_allow_count;
	const char *access_log;     /* --access-log: FILE, -, off; NULL: stderr */
	const char *tls_cert, *tls_key; /* --tls-cert, --tls-key: PEM files; NULL: plain */
	const char *checkpoint_dir; /* NULL: the default (ckpt_store.h's caller) */
	double checkpoint_ttl_sec;
	unsigned checkpoint_quota_mb; /* per key */
};

struct mcp_http;
struct backend_ops;
struct tier_probe;
struct e2b;

struct service {
	struct serve_config cfg;
	struct keyring keys;
	struct admission adm;
	struct metrics metrics;
	struct mcp_http *mcp;
	struct e2b *e2b;            /* the E2B-compatible API's sandboxes (e2b/e2b.h) */
	struct tier_probe *tier_probe; /* GET /v1/tiers' cached verdict (tier_probe.h) */
	struct webhooks *webhooks;  /* completion webhooks' delivery (webhook.h) */
	/* Where runs happen, chosen once at start: local (this machine's
	 * sandboxes and sessions) or remote (the Redis queue's workers). Its
	 * state is its own, behind the ops table like curl's Curl_cftype:
	 * nothing above the backend reaches into it, so a front added later
	 * (another API) cannot come to depend on one backend's insides. */
	const struct backend_ops *backend;
	void *backend_state;
	struct run_store runs;      /* recorded runs: streamed and background
				     * (the backend's open chooses the store) */
	atomic_bool draining;
};

#include "answer.h"
#include "backend.h"
#include "../http/respond.h"

#endif
