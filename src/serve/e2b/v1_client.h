/* The E2B API speaks to sandboxes only through agentjail's own v1 API
 * (api_v1.h), as a client inside serve would: a request of its making
 * handed to the same routes, under the caller's key. So every rule the v1
 * API keeps (a key's sessions and admission, the deployer's terms, the
 * session's limits) holds for E2B's calls too, and both backends (this
 * machine, the queue's workers) serve them with nothing of E2B's own. The
 * routes are the handler e2b_open was given (api_v1.c's, from main.c). */
#ifndef AJ_SERVE_E2B_V1_CLIENT_H
#define AJ_SERVE_E2B_V1_CLIENT_H

#include <jansson.h>

#include "../http/respond.h"

struct service;
struct key;

/* method path under key, with body (JSON, or NULL; its reference taken)
 * and accept (NULL: JSON): the answer in rs, as the v1 API gives it (rs->body JSON, or a
 * stream: rs->stream_read set; the caller calls rs->stream_done). */
void v1_call(struct service *svc, const struct key *key, const char *method, const char *path,
	     json_t *body, const char *accept, struct http_response *rs);
/* The same with a raw body (a file's bytes). */
void v1_call_raw(struct service *svc, const struct key *key, const char *method,
		 const char *path, const void *body, size_t len, struct http_response *rs);
/* rs's JSON body (a new reference), or NULL when it has none. */
json_t *v1_body(const struct http_response *rs);
/* The v1 error's message (its "error"."message"), or "" (owned by the
 * caller's parse: copied into buf). */
const char *v1_error_message(const struct http_response *rs, char *buf, size_t n);
/* A v1 refusal (v1, freed) as E2B's error in rs: the same status and
 * Retry-After, "what: " before its words. */
void v1_refusal(struct http_response *rs, struct http_response *v1, const char *what);
/* Frees rs's body (a stream's end is the caller's, by stream_done). */
void v1_free(struct http_response *rs);

#endif
