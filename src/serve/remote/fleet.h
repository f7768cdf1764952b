/* With a queue, how many runs serve admits at once: what the live workers
 * of its tier offer. Each worker's heartbeat holds its run slots (queue.h);
 * a thread sums them every second into admission's bound, capped by an
 * explicit --concurrency, so the fleet, not serve's own CPUs, sizes it. A
 * dead worker's slots go when its heartbeat expires (3 s). */
#ifndef AJ_SERVE_FLEET_H
#define AJ_SERVE_FLEET_H

#include <pthread.h>
#include <stdbool.h>

#include "../admit/admit.h"
#include "queue.h"

struct fleet {
	struct queue *q;
	enum aj_tier tier;
	struct admission *adm;
	unsigned cap;         /* the deployer's --concurrency, or no bound */
	unsigned unknown_cap; /* the bound while Redis cannot say */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop, started;
	unsigned slots, workers; /* the last count */
	bool known;              /* whether Redis answered the last count */
};

/* Counts once (so the first request sees the fleet), then every second
 * until fleet_stop. */
int fleet_start(struct fleet *f, struct queue *q, enum aj_tier tier, struct admission *adm,
		unsigned cap, unsigned unknown_cap);
void fleet_stop(struct fleet *f);
/* The last count: the live workers' slots summed, and how many workers. */
void fleet_counts(struct fleet *f, unsigned *slots, unsigned *workers);

#endif
