/* The background command routes (proc_call.h) as a front answers them, for
 * both backends: the request read, a spawn admitted as an exec call is
 * (a queue place, the key's rate), the request sent to the session
 * through the backend's source, its answer or its event stream. */
#ifndef AJ_SERVE_PROC_ROUTE_H
#define AJ_SERVE_PROC_ROUTE_H

#include "proc_events.h"
#include "../http/route.h"

struct service;

/* Route r (SESSION_PROC) on the session src reaches; src->done is called
 * once, now or when the stream ends. */
void proc_route(struct service *svc, const struct http_request *rq, struct http_response *rs,
		const struct session_route *r, const struct proc_source *src);

#endif
