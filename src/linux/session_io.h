/* The supervisor's side of one call into a jail session (session_io.c). */
#ifndef AJ_SESSION_IO_H
#define AJ_SESSION_IO_H

#include "../core/session_call.h"
#include "jail.h"

/* One call: fills res and ans. 0, or -EPIPE when the session's sandbox is
 * gone or would not stop (res says so; the caller ends the session). */
int jail_session_call(struct jail_session *js, const struct aj_limits *l,
		      const struct session_call *c, struct aj_result *res,
		      struct session_answer *ans);

#endif
