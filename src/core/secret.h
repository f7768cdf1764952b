/* Secrets the code can use but never see (issue 39, docs/secrets.md): what a
 * secret is (aj_config.secrets, a JSON array), its checks, and the pure
 * pieces the egress proxy's interceptor applies to a request and a response
 * (no I/O: the fuzzer drives them).
 *
 *   {"name": "GH", "value": "...", "hosts": ["api.github.com:443"],
 *    "header": "Authorization", "format": "Bearer {value}",
 *    "placeholder": false, "plain_http": false,
 *    "requests": ["GET /repos/acme/"]}
 *
 * A value never appears in anything this file writes: an error names the
 * secret and the field, never what it holds. */
#ifndef AJ_SECRET_H
#define AJ_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress_rule.h"

#define SECRET_NAME_MAX 32
#define SECRET_HEADER_MAX 64
#define SECRET_PLACEHOLDER_PREFIX "AJ_SECRET_"

struct secret_request_rule {
	char method[16];   /* "GET"; "*" for any */
	char *prefix;      /* "/repos/acme/": the path starts with it */
};

struct secret {
	char name[SECRET_NAME_MAX + 1];
	char placeholder_text[sizeof SECRET_PLACEHOLDER_PREFIX + SECRET_NAME_MAX]; /* AJ_SECRET_GH */
	char *value;
	size_t value_len;
	struct egress_host_rule *hosts;
	char **host_text;
	uint32_t n_hosts;
	char header[SECRET_HEADER_MAX + 1];   /* "" with placeholder */
	char *format;                          /* with header: "Bearer {value}" */
	bool placeholder, plain_http;
	struct secret_request_rule *requests;
	uint32_t n_requests;
};

struct secret_set {
	struct secret *s;
	uint32_t n;
};

/* Parses and checks the JSON text (NULL or "" is none): 0, or -EINVAL with
 * why naming the item and field (never a value). */
int secret_set_parse(const char *json, struct secret_set *out, char *why, size_t n);
/* A copy holding only the named secrets (each must be in src, else -EPERM
 * with why naming it). 0, -EPERM or -ENOMEM. */
int secret_set_keep(const struct secret_set *src, const char *const *names, uint32_t n_names,
		    struct secret_set *out, char *why, size_t n);
/* Frees what a set holds, wiping the values first. */
void secret_set_free(struct secret_set *set);

/* Whether the secret is for host:port. */
bool secret_for_host(const struct secret *s, const char *host, uint16_t port);

/* The header value a header secret sets ("Bearer " + value), malloc'd;
 * NULL on ENOMEM. */
char *secret_header_value(const struct secret *s, size_t *len);

/* Whether a request (method, origin-form path) may go to the secret's
 * hosts under its request rules (none: any). false with why. */
bool secret_request_allowed(const struct secret *s, const char *method, const char *path,
			    size_t path_len, char *why, size_t n);

/* The request head an intercepted connection sends upstream, rewritten:
 * head[0..len) is a whole origin-form request head the interceptor parsed
 * (request line, headers, the empty line). Of the secrets apply[0..n)
 * (those for this host, already allowed): a header secret's header
 * replaces every same-named header the program sent; a placeholder
 * secret's AJ_SECRET_NAME is swapped for its value in every header value.
 * Hop-by-hop headers (Connection, Keep-Alive, Proxy-*, TE, Upgrade) are
 * dropped and "Connection: close" added: one request per connection.
 * malloc'd, its length in *out_len; used[i] says whether secret i was put
 * in. NULL on ENOMEM. */
char *secret_rewrite_head(const char *head, size_t len, const struct secret *const *apply,
			  uint32_t n, bool *used, size_t *out_len);

/* Masks every whole occurrence of the values of apply[0..n) in
 * buf[0..len) with '*' of the same length (a response never shows the
 * program a value it echoes, and its length framing stays right). */
void secret_mask(char *buf, size_t len, const struct secret *const *apply, uint32_t n);
/* How many bytes at the end of buf[0..len) a stream masker must keep back
 * until more come: the longest tail that is the start of a value (shorter
 * than the value), so that a value split across reads is still masked and
 * everything else goes on at once (a streamed answer's last event is not
 * held for the next). */
size_t secret_tail_hold(const char *buf, size_t len, const struct secret *const *apply,
			uint32_t n);

#endif
