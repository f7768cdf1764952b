/* A session call's own limits (call_limits.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/internal.h"
#include "call_limits.h"

int call_limits_parse(json_t *limits, double session_wall_sec, double *sec,
		      struct aj_error *err)
{
	*sec = 0;
	if (!limits)
		return 0;
	if (!json_is_object(limits))
		return error_set(err, -EINVAL, "limits: expected an object");
	const char *k;
	json_t *v;
	json_object_foreach(limits, k, v) {
		if (strcmp(k, "timeout_sec"))
			return error_set(err, -EINVAL,
					 "limits.%.64s: a session call takes only timeout_sec; the "
					 "session's other limits hold for each of its calls",
					 k);
		double t = json_number_value(v);
		if (!json_is_number(v) || !(t > 0) || !isfinite(t))
			return error_set(err, -EINVAL,
					 "limits.timeout_sec: expected a positive number of seconds");
		/* Never past the session's: a call may only be shorter. */
		if (t > session_wall_sec)
			return error_set(err, -EINVAL,
					 "limits.timeout_sec: %g is more than this session allows "
					 "(%g)",
					 t, session_wall_sec);
		/* Equal to the session's: the sandbox's own clock keeps it. */
		*sec = t < session_wall_sec ? t : 0;
	}
	return 0;
}

static void *timer(void *arg)
{
	struct call_deadline *d = arg;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	double end = (double)until.tv_sec + until.tv_nsec / 1e9 + d->sec;
	until.tv_sec = (time_t)end;
	until.tv_nsec = (long)((end - floor(end)) * 1e9);
	pthread_mutex_lock(&d->mu);
	while (!d->over)
		if (pthread_cond_timedwait(&d->cv, &d->mu, &until) == ETIMEDOUT && !d->over) {
			d->fired = true;
			aj_cancel_fire(d->cancel);
			break;
		}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int call_deadline_start(struct call_deadline *d, struct aj_cancel *cancel, double sec)
{
	*d = (struct call_deadline){.cancel = cancel, .sec = sec};
	if (!sec || !cancel)
		return 0;
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	/* The wall clock set back does not stretch a call. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cv, &ca);
	pthread_condattr_destroy(&ca);
	int rc = pthread_create(&d->thread, NULL, timer, d);
	if (rc) {
		pthread_cond_destroy(&d->cv);
		pthread_mutex_destroy(&d->mu);
		return -rc;
	}
	d->running = true;
	return 0;
}

void call_deadline_end(struct call_deadline *d, struct aj_result *res)
{
	if (!d->running)
		return;
	pthread_mutex_lock(&d->mu);
	d->over = true;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	d->running = false;
	if (d->fired && res->status == AJ_STATUS_KILLED) {
		/* The Python binding's words for its own deadline, in place of
		 * the cancel's (status.c's): what the session adds after them
		 * (its interpreter ended) stays. */
		static const char cancelled[] = "cancelled by the caller; the run was stopped";
		char *old = res->message;
		const char *rest = old && !strncmp(old, cancelled, strlen(cancelled))
					   ? old + strlen(cancelled)
					   : "";
		res->status = AJ_STATUS_TIMEOUT;
		res->message = NULL;
		result_set_message(res, "the call's timeout of %g s passed; the run was stopped%s",
				   d->sec, rest);
		free(old);
	}
}
