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

/* POST .../checkpoint: 201 with the checkpoint's record. */
void local_session_checkpoint(struct service *svc, const struct http_request *rq,
			      struct http_response *rs, struct hsession *h);
/* GET /v1/checkpoints[/ID], DELETE /v1/checkpoints/ID. */
void local_checkpoints(struct service *svc, const struct http_request *rq,
		       struct http_response *rs);
/* POST /v1/sessions' answer for h, opened under cfg. */
json_t *local_session_json(const struct aj_config *cfg, const struct hsession *h);
/* POST /v1/sessions with from_checkpoint: the session from it. */
void local_session_restore(struct service *svc, const struct http_request *rq,
			   struct http_response *rs, const struct session_opening *o);
/* The session id the key held paused when serve stopped, opened again
 * under today's terms (with a reference), or NULL: none (or it could not
 * be: rs then says why, else rs is untouched). */
struct hsession *local_session_wake_kept(struct service *svc, const struct http_request *rq,
					 struct http_response *rs, const char *id);
/* Whether key holds session id paused over a stop. */
bool local_session_is_kept(struct service *svc, const struct key *key, const char *id);
/* DELETE of a session paused over a stop: 0, or -ENOENT: none. */
int local_session_drop_kept(struct service *svc, const struct http_request *rq, const char *id);
/* At serve's stop: each paused session kept in the store. */
void local_sessions_keep_paused(struct service *svc);
/* Opens the store (--checkpoint-dir, or the default): 0, or -1 with err
 * when a directory the deployer named cannot be used. */
int local_checkpoints_open(struct service *svc, struct aj_error *err);

#endif
