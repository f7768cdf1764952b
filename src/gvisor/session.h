/* Sessions on the gvisor tier: one sandbox for the session's life, with
 * boot.py in its session mode; the ops of tier.h. */
#ifndef AJ_GVISOR_SESSION_H
#define AJ_GVISOR_SESSION_H

#include "../core/internal.h"
#include "../core/run_request.h"
#include "../core/session_call.h"
#include "sandbox.h"

int gvisor_session_open(const struct gvisor_host *st, const struct aj_config *cfg,
			struct egress_proxy *egress, void **out, struct aj_error *err);
int gvisor_session_call(void *session, const struct aj_config *cfg,
			const struct session_call *call, struct aj_result *res,
			struct session_answer *ans);
void gvisor_session_close(void *session);
/* tier_ops.session_freeze: the sandbox's cgroup (runsc's sentry, gofer
 * and all) frozen or thawed. */
int gvisor_session_freeze(void *session, bool frozen, struct aj_error *err);

#endif
