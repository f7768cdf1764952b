#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "../../core/internal.h"
#include "admit.h"
#include "../../core/thread.h"

int admission_init(struct admission *a, const struct keyring *kr, unsigned concurrency,
		   unsigned queue_size, double max_wait_sec)
{
	*a = (struct admission){.concurrency = concurrency,
				.queue_size = queue_size,
				.max_wait_sec = max_wait_sec,
				.key_count = kr->count};
	a->uses = calloc(kr->count ? kr->count : 1, sizeof *a->uses);
	if (!a->uses)
		return -ENOMEM;
	double now = now_ms() / 1e3;
	for (size_t i = 0; i < kr->count; i++)
		a->uses[i] = (struct key_use){.key = &kr->keys[i],
					      .tokens = kr->keys[i].runs_per_minute,
					      .refilled_at = now};
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	/* Waits are timed against CLOCK_MONOTONIC: setting the clock neither
	 * releases nor strands a queued run. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->changed, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

void admission_destroy(struct admission *a)
{
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->changed);
	free(a->uses);
	a->uses = NULL;
}

struct key_use *admission_use(struct admission *a, const struct key *k)
{
	for (size_t i = 0; i < a->key_count; i++)
		if (a->uses[i].key == k)
			return &a->uses[i];
	return NULL;
}

/* The bucket holds at most a minute's runs and refills evenly: a key may
 * burst to its whole minute, then goes at its rate. */
static void refill(struct key_use *u, double now)
{
	double rate = u->key->runs_per_minute / 60.0;
	u->tokens = fmin((double)u->key->runs_per_minute, u->tokens + (now - u->refilled_at) * rate);
	u->refilled_at = now;
}

enum admit_verdict admit_enter(struct admission *a, struct key_use *u, unsigned *retry_after)
{
	enum admit_verdict v = ADMIT_OK;
	pthread_mutex_lock(&a->lock);
	double now = now_ms() / 1e3;
	refill(u, now);
	if (a->draining) {
		v = ADMIT_DRAINING;
		*retry_after = 5;
	} else if (a->waiting >= a->queue_size &&
		   !(a->running < a->concurrency && u->running < u->key->concurrency)) {
		/* Full only when the run could not start at once either. */
		v = ADMIT_QUEUE_FULL;
		*retry_after = 1;
	} else if (u->tokens < 1.0) {
		v = ADMIT_RATE;
		double rate = u->key->runs_per_minute / 60.0;
		*retry_after = (unsigned)ceil((1.0 - u->tokens) / rate);
		if (*retry_after < 1)
			*retry_after = 1;
	} else {
		u->tokens -= 1.0;
		a->waiting++;
		u->waiting++;
	}
	pthread_mutex_unlock(&a->lock);
	return v;
}

enum admit_verdict admit_start(struct admission *a, struct key_use *u, struct admit_ticket *t,
			       unsigned *retry_after)
{
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	double end = (double)deadline.tv_sec + (double)deadline.tv_nsec / 1e9 + a->max_wait_sec;
	deadline.tv_sec = (time_t)end;
	deadline.tv_nsec = (long)((end - floor(end)) * 1e9);

	pthread_mutex_lock(&a->lock);
	while (!(a->running < a->concurrency && u->running < u->key->concurrency)) {
		if (t && t->called_off) {
			/* Its place is the next run's now, not when its turn
			 * would have come. */
			a->waiting--;
			u->waiting--;
			pthread_cond_broadcast(&a->changed);
			pthread_mutex_unlock(&a->lock);
			return ADMIT_CALLED_OFF;
		}
		if (pthread_cond_timedwait(&a->changed, &a->lock, &deadline) == ETIMEDOUT &&
		    !(a->running < a->concurrency && u->running < u->key->concurrency)) {
			a->waiting--;
			u->waiting--;
			/* With no slot at all (a queue whose workers are all
			 * gone) the wait was for a worker, and the answer says so. */
			enum admit_verdict v = a->concurrency ? ADMIT_WAITED : ADMIT_NO_WORKER;
			pthread_cond_broadcast(&a->changed);
			pthread_mutex_unlock(&a->lock);
			*retry_after = 5;
			return v;
		}
	}
	a->waiting--;
	u->waiting--;
	a->running++;
	u->running++;
	pthread_mutex_unlock(&a->lock);
	return ADMIT_OK;
}

void admit_call_off(struct admission *a, struct admit_ticket *t)
{
	/* Set and told under the lock the waiter checks it under: it is
	 * either seen before the wait or wakes the wait. */
	pthread_mutex_lock(&a->lock);
	t->called_off = true;
	pthread_cond_broadcast(&a->changed);
	pthread_mutex_unlock(&a->lock);
}

void admit_finish(struct admission *a, struct key_use *u)
{
	pthread_mutex_lock(&a->lock);
	a->running--;
	u->running--;
	pthread_cond_broadcast(&a->changed);
	pthread_mutex_unlock(&a->lock);
}

void admit_abandon(struct admission *a, struct key_use *u)
{
	pthread_mutex_lock(&a->lock);
	a->waiting--;
	u->waiting--;
	pthread_cond_broadcast(&a->changed);
	pthread_mutex_unlock(&a->lock);
}

void admission_set_concurrency(struct admission *a, unsigned concurrency)
{
	pthread_mutex_lock(&a->lock);
	if (a->concurrency != concurrency) {
		a->concurrency = concurrency;
		pthread_cond_broadcast(&a->changed);
	}
	pthread_mutex_unlock(&a->lock);
}

unsigned admission_concurrency(struct admission *a)
{
	return locked_read(&a->lock, &a->concurrency);
}

void admission_drain(struct admission *a)
{
	pthread_mutex_lock(&a->lock);
	a->draining = true;
	while (a->running || a->waiting)
		pthread_cond_wait(&a->changed, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

void admission_counts(struct admission *a, unsigned *running, unsigned *waiting)
{
	pthread_mutex_lock(&a->lock);
	*running = a->running;
	*waiting = a->waiting;
	pthread_mutex_unlock(&a->lock);
}
