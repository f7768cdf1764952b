/* API keys: who may call agentjail serve, and how much each may use.
 *
 * A key is a bearer token (aj_ + 43 base64url characters: 256 random bits)
 * shown once when it is made. The keys file keeps only its SHA-256, so a
 * copy of the file lets no one in; a slow password hash would add nothing
 * to a 256-bit secret and would hand every client a way to burn our CPU.
 *
 * The file is JSON, written by `agentjail keys add`:
 *   {"keys": [{"name": "alice", "sha256": "<64 hex>", "concurrency": 4,
 *              "runs_per_minute": 120, "sessions": 4,
 *              "webhook_secret": "ajwh_...", "metrics": true,
 *              "admin": true}]}
 *
 * "metrics" (false unless given: `agentjail keys add --metrics`) lets the
 * key read GET /metrics; every other key gets 403 there.
 *
 * "admin" (false unless given: `agentjail keys add --admin`) lets the key
 * list every key's open sessions (GET /v1/sessions?all=true; any other key
 * gets 403 there) and close one (DELETE /v1/sessions/ID). Nothing else:
 * every other call on another key's session, run or checkpoint answers it
 * 404, as for any key.
 *
 * "secrets" (optional, written by hand: docs/serve.md): the key's own
 * credentials, an array of aj_config.secrets' shape, which every run and
 * session of the key gets beside the server's --secrets; checked at load
 * by the core's parser, an error naming the key (never a value).
 *
 * The webhook secret signs the completion webhooks of the key's runs
 * (webhook.h). Unlike the key it is kept as it is, since serve needs it to
 * sign; a key from a file written before webhooks has none, and its runs'
 * webhooks are refused until `agentjail keys webhook-secret` makes one.
 */
#ifndef AJ_SERVE_KEYS_H
#define AJ_SERVE_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentjail.h"

#define KEY_NAME_MAX 64
#define KEY_TOKEN_LEN 46 /* "aj_" + 43 */
/* The E2B SDKs' shape, for their users' code and configs: "e2b_" and the
 * same 256 bits as 64 lowercase hex digits (agentjail keys add --e2b). */
#define KEY_E2B_TOKEN_LEN 68
#define KEY_TOKEN_MAX KEY_E2B_TOKEN_LEN
#define KEY_DEFAULT_CONCURRENCY 4
#define KEY_DEFAULT_RUNS_PER_MINUTE 600
#define KEY_DEFAULT_SESSIONS 4
#define KEY_MAX_LIMIT 100000
#define KEY_WEBHOOK_SECRET_LEN 48 /* "ajwh_" + 43 */
#define KEY_WEBHOOK_SECRET_MIN 32 /* a deployer's own: at least this many characters */
#define KEY_WEBHOOK_SECRET_MAX 128

struct key {
	char name[KEY_NAME_MAX + 1];
	unsigned char hash[32];
	uint32_t concurrency;     /* runs at once; more wait in the queue */
	uint32_t runs_per_minute; /* runs started in any 60 s */
	uint32_t sessions;        /* sessions open at once */
	char webhook_secret[KEY_WEBHOOK_SECRET_MAX + 1]; /* "": none */
	/* May read /metrics: server-wide counts (every key's runs, refusals,
	 * sessions) are the operator's, not any tenant's (issue 35). */
	bool metrics;
	/* May list every key's open sessions and close one: the operator's
	 * view of what the tenants hold, and the way to end what one left
	 * running. Never to use another key's session (its code, files and
	 * secrets are the tenant's): only GET /v1/sessions?all=true and
	 * DELETE /v1/sessions/ID look past the key's own. */
	bool admin;
	/* The key's secrets, compact JSON (call_secrets.h); NULL: none. Its
	 * values are the deployer's credentials: never logged, never
	 * answered, wiped when freed. */
	char *secrets;
};

struct keyring {
	struct key *keys;
	size_t count;
};

/* Reads the keys file; 0, or -errno with err naming the file and the entry. */
int keys_load(struct keyring *kr, const char *path, struct aj_error *err);
/* Writes kr to path (mode 0600, through a temporary file and rename). */
int keys_save(const struct keyring *kr, const char *path, struct aj_error *err);
void keys_free(struct keyring *kr);
/* Wipes and frees a text that may hold secrets' values (NULL: nothing). */
void key_secrets_free(char *text);

/* A new token (NUL-terminated, KEY_TOKEN_LEN chars, or KEY_E2B_TOKEN_LEN
 * in E2B's shape) from getrandom, and its hash into k->hash. */
int key_generate(struct key *k, bool e2b_shape, char token[KEY_TOKEN_MAX + 1]);
/* A new webhook secret (ajwh_ + 256 random bits, base64url) into
 * k->webhook_secret: 0, or -EIO. */
int key_webhook_secret_generate(struct key *k);
/* The key whose hash matches token, or NULL. Every key is compared, in
 * constant time, whatever matched earlier: the time taken tells nothing
 * about which key, or how much of one, was right. */
const struct key *keys_find(const struct keyring *kr, const char *token, size_t len);
/* 0 when name may name a key: 1 to 64 of [A-Za-z0-9._-]. */
int key_name_check(const char *name, struct aj_error *err);

#endif
