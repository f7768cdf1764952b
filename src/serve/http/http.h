/* The HTTP server (http.c). It knows no route and no service: main.c
 * gives it a config and the handlers at start, each called with the
 * handlers' ctx, so the server never calls the routes by name. */
#ifndef AJ_SERVE_HTTP_H
#define AJ_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "agentjail.h"
#include "respond.h"

struct key;

struct http_config {
	const char *host;          /* a numeric address */
	unsigned port;             /* 0: any free one, set here once bound */
	unsigned idle_sec;         /* a connection silent this long is closed */
	unsigned head_sec;         /* a request head must arrive within this of the
				    * accept, or of the previous answer's end */
	unsigned body_sec;         /* a body must arrive within this of its head */
	unsigned max_connections;
	unsigned per_ip_connections; /* 0: no limit (behind a proxy) */
	size_t mcp_body;           /* /mcp's body cap */
	size_t body_budget;        /* bytes of bodies in memory at once */
	size_t key_body_budget;    /* of those, one key's */
	enum aj_tier tier;         /* named in the access log */
	/* TLS (libmicrohttpd's, through GnuTLS) with this certificate chain
	 * and key, both PEM, checked (tls.h); NULL: plain HTTP. */
	const char *tls_cert_pem, *tls_key_pem;
};

enum http_event {
	HTTP_ANSWERED,    /* an answer will go out, with its code */
	HTTP_AUTH_FAILED, /* a request without a valid key */
};

struct http_handlers {
	void *ctx; /* every handler's first argument */
	/* The JSON API: every path but /mcp. */
	void (*api)(void *ctx, const struct http_request *rq, struct http_response *rs);
	bool (*needs_key)(const char *method, const char *path);
	size_t (*body_limit)(void *ctx, const char *method, const char *path);
	/* /mcp: always keyed, its body capped at mcp_body. */
	void (*mcp)(void *ctx, const struct http_request *rq, struct http_response *rs);
	/* The key whose token this is (its name in *name), or NULL. */
	const struct key *(*authenticate)(void *ctx, const char *token, size_t len,
					  const char **name);
	/* The key that owns sandbox id, if token is its own access token
	 * (the E2B API's data plane), or NULL. NULL: no such sandboxes. */
	const struct key *(*sandbox_key)(void *ctx, const char *id, const char *token,
					 const char **name);
	void (*count)(void *ctx, enum http_event ev, int code);
	/* A refusal the server makes itself (no key, too large, over a body
	 * budget, too slow), rs's v1 error, rewritten in the words of path's
	 * API; NULL: as it is. */
	void (*reword)(void *ctx, const char *path, struct http_response *rs);
	/* Whether the server is shutting down (answers then close). */
	bool (*draining)(void *ctx);
	/* Called with the request's head (method, path, key; no body yet)
	 * before a byte of a body is read or any memory reserved for it: 0 to
	 * read it, or -1 with the answer in rs (a session transfer to a
	 * session the key does not hold: 404). NULL: every body is read. */
	int (*may_buffer)(void *ctx, const struct http_request *head, struct http_response *rs);
};

/* The HTTP server under cfg (kept; its port set when 0), answering through
 * h (kept): serves until http_stop. */
int http_start(struct http_config *cfg, const struct http_handlers *h, struct aj_error *err);
void http_stop(void);
/* Waits (at most timeout_sec) until no request is between its headers and
 * the end of its answer: the answers of the last runs reach their clients. */
void http_quiesce(double timeout_sec);

#endif
