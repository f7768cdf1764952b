/* GET /v1/sessions on this machine (session_list.c): the local backend's
 * session_list op. */
#ifndef AJ_SERVE_LOCAL_SESSION_LIST_H
#define AJ_SERVE_LOCAL_SESSION_LIST_H

#include <stdbool.h>

#include "../admit/service.h"
#include "../http/respond.h"

/* 200 {"sessions": [...]}: rq->key's open sessions, newest first; with
 * all (an admin key's, checked by the route), every key's, each naming
 * its key. */
void local_session_list(struct service *svc, const struct http_request *rq,
			struct http_response *rs, bool all);

#endif
