#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fleet.h"
#include "remote.h"

#define FLEET_PERIOD_SEC 1

static void count(struct fleet *f)
{
	unsigned slots, workers;
	struct aj_error err = {0};
	bool known = remote_slots(f->q, f->tier, &slots, &workers, &err) == 0;
	pthread_mutex_lock(&f->lock);
	bool changed = known != f->known || slots != f->slots || workers != f->workers;
	f->known = known;
	f->slots = known ? slots : 0;
	f->workers = known ? workers : 0;
	pthread_mutex_unlock(&f->lock);
	/* While Redis cannot say, runs are not held back on a count nobody
	 * has: they go on and get Redis's own error (503 queue_unavailable)
	 * at once, instead of waiting out --max-wait for workers that may be
	 * there. */
	unsigned bound = known ? (slots < f->cap ? slots : f->cap) : f->unknown_cap;
	admission_set_concurrency(f->adm, bound);
	if (changed) {
		if (known)
			fprintf(stderr,
				"agentjail serve: %u %s worker(s) offer %u run slot(s); admitting "
				"%u at once\n",
				workers, aj_tier_name(f->tier), slots, bound);
		else
			fprintf(stderr, "agentjail serve: cannot count the workers: %s\n",
				err.message);
	}
}

static void *loop(void *arg)
{
	struct fleet *f = arg;
	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec += FLEET_PERIOD_SEC;
		pthread_cond_timedwait(&f->wake, &f->lock, &t);
		if (f->stop)
			break;
		pthread_mutex_unlock(&f->lock);
		count(f);
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int fleet_start(struct fleet *f, struct queue *q, enum aj_tier tier, struct admission *adm,
		unsigned cap, unsigned unknown_cap)
{
	*f = (struct fleet){.q = q, .tier = tier, .adm = adm, .cap = cap,
			    .unknown_cap = unknown_cap};
	pthread_mutex_init(&f->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	/* Timed against CLOCK_MONOTONIC: setting the clock neither stalls nor
	 * hurries the count. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->wake, &ca);
	pthread_condattr_destroy(&ca);
	f->workers = (unsigned)-1; /* so the first count is logged, whatever it finds */
	count(f);
	int rc = pthread_create(&f->thread, NULL, loop, f);
	f->started = rc == 0;
	return -rc;
}

void fleet_stop(struct fleet *f)
{
	if (!f->started)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	f->started = false;
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->lock);
}

void fleet_counts(struct fleet *f, unsigned *slots, unsigned *workers)
{
	pthread_mutex_lock(&f->lock);
	*slots = f->slots;
	*workers = f->workers;
	pthread_mutex_unlock(&f->lock);
}
