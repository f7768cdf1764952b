/* The background command routes on the queue backend: each request goes to
 * the worker that holds the session, which runs it there as the local
 * backend does here (admit/proc_call.h); an event stream is a series of
 * such reads. */
#ifndef AJ_SERVE_REMOTE_PROCS_H
#define AJ_SERVE_REMOTE_PROCS_H

#include "../admit/service.h"
#include "../http/route.h"

void remote_session_proc(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const char *session, const char *worker,
			 const struct session_route *r);

#endif
