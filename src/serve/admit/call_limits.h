/* A session call's own limits: the "limits" of POST /v1/sessions/ID/runs,
 * as the Python Session.run(timeout=) has them. A call may only shorten
 * its wall clock (timeout_sec) under the session's; the session's other
 * limits hold for every call. The shorter deadline is kept here, outside
 * the sandbox: a timer fires the call's aj_cancel, and the call's result
 * says it timed out, in the Python binding's words. */
#ifndef AJ_SERVE_CALL_LIMITS_H
#define AJ_SERVE_CALL_LIMITS_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "agentjail.h"

/* limits (NULL: none) against the session's wall clock: 0 with *sec (0:
 * no deadline of the call's own), or -EINVAL with err naming the field:
 * not an object, a field other than timeout_sec, not a positive number,
 * more than session_wall_sec. */
int call_limits_parse(json_t *limits, double session_wall_sec, double *sec,
		      struct aj_error *err);

struct call_deadline {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct aj_cancel *cancel;
	double sec;
	bool running, over, fired;
};

/* Fires cancel once sec seconds have passed (sec 0: never; nothing
 * started). 0, or -errno when the timer cannot start. */
int call_deadline_start(struct call_deadline *d, struct aj_cancel *cancel, double sec);
/* The call returned: the timer is stopped; if it had fired and res was
 * killed, res is the call's timeout. */
void call_deadline_end(struct call_deadline *d, struct aj_result *res);

#endif
