/* The secrets a run or session gets (issue 39, docs/secrets.md): the
 * server's own (--secrets), its key's (the keys file's "secrets") and the
 * request's ("secrets" in POST /v1/runs and POST /v1/sessions), joined into
 * one aj_config.secrets array. This file owns that join, its checks, the
 * names a session shows, and narrowing a session's secrets by name.
 *
 * A value never leaves this file in anything it writes: an error names the
 * source, the secret and the field (src/core/secret.c words them), never a
 * value; the joined text is wiped before it is freed. */
#ifndef AJ_SERVE_CALL_SECRETS_H
#define AJ_SERVE_CALL_SECRETS_H

#include <jansson.h>
#include <stdbool.h>

#include "agentjail.h"
#include "../http/keys.h"
#include "../http/respond.h"

struct service;

/* Every key's secrets joined with the server's (base->secrets) and checked
 * as a sandbox would check them (a name given twice, too many, no egress
 * rule to send one on), so a wrong keys file stops serve at start, naming
 * the key. queue: serve sends runs to workers through Redis, and a key's
 * secrets would travel there: refused. 0, or -EINVAL with err. */
int keys_secrets_check(const struct keyring *kr, const struct aj_config *base, bool queue,
		       struct aj_error *err);

/* The secrets of one call: base's, key's and the body's "secrets" (absent
 * or null: none) joined. 0 with *text the joined array (malloc'd; free it
 * with call_secrets_free), or NULL when key and body give none (base's
 * own then hold, as they are); -EINVAL with err ("secrets: ...", a name
 * given twice named with whose it is). */
int call_secrets_join(const struct aj_config *base, const struct key *key, json_t *body,
		      char **text, struct aj_error *err);
/* call_secrets_join for a route: the refusals answered in rs (400
 * bad_secrets; 501 not_offered with --queue, whose requests travel through
 * Redis). 0, or -1 with rs set. */
int call_secrets(struct service *svc, const struct key *key, json_t *body, char **text,
		 struct http_response *rs);
/* Wipes the body's "secrets" values and takes the field out of it (a body
 * that is kept, or just freed: jansson frees its strings unwiped). */
void call_secrets_forget(json_t *body);
/* Wipes and frees a joined text (NULL: nothing). */
void call_secrets_free(char *text);
/* The names of a secrets array's text (NULL: none) as a JSON array of
 * strings: what a session's answer shows, never a value. */
json_t *secret_names_json(const char *text);
/* text with only the secrets named in names (a JSON array of strings;
 * names not in text are left out): malloc'd ("[]" when none is left: not
 * NULL, which would mean the deployer's own), or NULL when out of memory.
 * A kept session's secrets after a restart, narrowed as its POST
 * .../egress narrowed them. */
char *secrets_text_keep(const char *text, json_t *names);

/* POST /v1/sessions/ID/egress's "secrets": the names to keep, through
 * aj_session_secrets_keep. 0 (absent: nothing changes), -EINVAL naming the
 * field, or the library's answer (-EPERM naming a secret the session does
 * not have: nothing changes). */
int secrets_session_keep(struct aj_session *s, json_t *body, struct aj_error *err);

#endif
