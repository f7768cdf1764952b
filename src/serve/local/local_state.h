/* The local backend's state (local_api.c makes it in its open op): the
 * sandboxes and the sessions of this machine. Private to local/: the
 * service holds it only as an opaque pointer (service.h). */
#ifndef AJ_SERVE_LOCAL_STATE_H
#define AJ_SERVE_LOCAL_STATE_H

#include "../admit/service.h"
#include "ckpt_store.h"
#include "local.h"
#include "sessions.h"

struct local_state {
	struct local local;
	struct session_table sessions;
	/* Checkpoints and the sessions paused over a stop; ckpt_why says
	 * why there is no store (checkpoints then answer 503, naming it). */
	struct ckpt_store ckpts;
	bool ckpts_open;
	char ckpt_why[sizeof(struct aj_error){0}.message];
};

static inline struct local_state *local_of(const struct service *svc)
{
	return svc->backend_state;
}

#endif
