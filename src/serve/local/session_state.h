/* The local backend's pause, resume and fork of a session (session_state.c). */
#ifndef AJ_SERVE_LOCAL_SESSION_STATE_H
#define AJ_SERVE_LOCAL_SESSION_STATE_H

#include "../admit/service.h"
#include "../http/respond.h"
#include "sessions.h"

void local_session_pause(struct http_response *rs, struct hsession *h);
void local_session_resume(struct http_response *rs, struct hsession *h);
/* {"count": n} (1 without a body): n sessions of h's key, each a copy. */
void local_session_fork(struct service *svc, const struct http_request *rq,
			struct http_response *rs, struct hsession *h);

#endif
