/* Sessions on the docker tier: one container for the session's life, with
 * boot.py (PID 1) in its session mode keeping a session interpreter
 * (src/core/repl.py) running and relaying its streams in frames. The
 * ops of tier.h; the theory of operation is at the top of session.c. */
#ifndef AJ_DOCKER_SESSION_H
#define AJ_DOCKER_SESSION_H

#include "../core/session_call.h"

struct egress_proxy;

int docker_session_open(void *state, const struct aj_config *cfg, struct egress_proxy *egress,
			void **session,
			struct aj_error *err);
int docker_session_call(void *session, const struct aj_config *cfg,
			const struct session_call *call, struct aj_result *res,
			struct session_answer *ans);
/* tier_ops.session_oom_kills: 1 when the engine logged an OOM kill in
 * the container since since_ms, else 0. */
uint64_t docker_session_oom_kills(void *session, double since_ms);
/* tier_ops.session_nudge (boot_session_nudge). */
void docker_session_nudge(void *session);
/* tier_ops.session_freeze: the engine's pause or unpause. */
int docker_session_freeze(void *session, bool frozen, struct aj_error *err);
void docker_session_close(void *session);

#endif
