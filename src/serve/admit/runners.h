/* The threads of a backend's recorded runs (runs_begin.h starts them):
 * counted, so that serve's stop can wait until none is left. Apart from
 * runs_begin.h so that a backend's own state (local.h) can hold one. */
#ifndef AJ_SERVE_RUNNERS_H
#define AJ_SERVE_RUNNERS_H

#include <pthread.h>

struct runners {
	pthread_mutex_t lock;
	pthread_cond_t done;
	unsigned n;
};
#define RUNNERS_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}

/* The last thing a runner's thread does (runs_begin.c). */
void runners_exit(struct runners *rn);
/* Waits until no runner of rn is left. */
void runners_wait(struct runners *rn);

#endif
