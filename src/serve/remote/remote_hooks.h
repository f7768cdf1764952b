/* The queue backend's completion webhooks, scheduled in Redis so that any
 * serve replica, a restarted one too, delivers them (remote_hooks.c). */
#ifndef AJ_SERVE_REMOTE_HOOKS_H
#define AJ_SERVE_REMOTE_HOOKS_H

#include "../admit/service.h"

/* Makes svc's delivery threads take the due webhooks of Redis's records
 * (webhooks_set_source). */
void remote_hooks_start(struct service *svc);

#endif
