/* The answers of the background command routes (proc_call.h), in the
 * shape both backends hand to the client: {"http": status, "body":
 * object}. */
#ifndef AJ_SERVE_PROC_ANSWER_H
#define AJ_SERVE_PROC_ANSWER_H

#include <jansson.h>
#include <stdint.h>

#include "agentjail.h"

/* An error answer of proc_call_run's shape, for a backend that could
 * not reach the session ({"http": status, "body": {"error"}}). */
json_t *proc_answer_error(int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An answer of status with body (NULL: {}). */
json_t *proc_answer(int status, json_t *body);
/* What the library refused (rc, err) on pid, as the answer a client can
 * act on: 404 for no such pid, 409 for a state it is in, 410 for a
 * closed session, 501 for what the tier does not offer. */
json_t *proc_refused(struct aj_session *s, uint32_t pid, int rc, const struct aj_error *err);

#endif
