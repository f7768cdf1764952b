/* E2B's control plane: /sandboxes and /v2/sandboxes (control.c). */
#ifndef AJ_SERVE_E2B_CONTROL_H
#define AJ_SERVE_E2B_CONTROL_H

#include "common.h"

void e2b_control(struct service *svc, const struct http_request *rq, struct http_response *rs);

#endif
