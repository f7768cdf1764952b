/* E2B's network.rules (issue 39, docs/e2b.md) as agentjail's secrets: "put
 * this header into HTTPS requests to that host" is a header secret the
 * egress proxy puts in, outside the sandbox. */
#ifndef AJ_SERVE_E2B_NETWORK_RULES_H
#define AJ_SERVE_E2B_NETWORK_RULES_H

#include <jansson.h>
#include <stddef.h>

#include "agentjail.h"
#include "../http/respond.h"

/* The host or address of an egress rule, without its ports. */
void e2b_rule_host(const char *rule, char *out, size_t n);

/* network.rules ({"api.example.com": [{"transform": {"headers":
 * {"Authorization": "Bearer ..."}}}]}) as terms' "secrets": each header a
 * secret named E2B_<n> for the deployer's host rules naming that host. A
 * value may name one of the key's or the server's secrets as E2B names a
 * project secret, ${e2b.secrets.NAME}: that secret's value goes in its
 * place, only for a host that secret is for. key_secrets: the key's
 * secrets' JSON text (NULL: none). 0, or -1 with the 400 (never quoting a
 * value). */
int e2b_rules_secrets(const struct aj_config *base, const char *key_secrets, json_t *rules,
		      json_t *terms, struct http_response *rs);

#endif
