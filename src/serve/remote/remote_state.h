/* The remote backend's state (remote_api.c makes it in its open op): the
 * Redis queue's connections and what the workers offer. Private to
 * remote/: the service holds it only as an opaque pointer (service.h). */
#ifndef AJ_SERVE_REMOTE_STATE_H
#define AJ_SERVE_REMOTE_STATE_H

#include "../admit/service.h"
#include "fleet.h"
#include "queue.h"

struct remote_state {
	struct queue queue;
	struct fleet fleet;
};

static inline struct remote_state *remote_of(const struct service *svc)
{
	return svc->backend_state;
}

#endif
