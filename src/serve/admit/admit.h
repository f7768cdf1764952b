/* Admission: which runs start now, which wait, and which are turned away.
 *
 * Runs at once are bounded by the server's concurrency and by each key's;
 * a run that cannot start yet waits in a bounded queue, and one that finds
 * the queue full, or its key over its runs per minute, is refused at once
 * with how long to wait (HTTP 429, Retry-After): back-pressure a client can
 * act on, instead of a socket that hangs. */
#ifndef AJ_SERVE_ADMIT_H
#define AJ_SERVE_ADMIT_H

#include <pthread.h>
#include <stdbool.h>

#include "../http/keys.h"

/* What admission knows of one key. */
struct key_use {
	const struct key *key;
	unsigned running;
	unsigned waiting;
	double tokens;       /* runs it may start now (a bucket of runs_per_minute) */
	double refilled_at;  /* monotonic seconds */
	unsigned sessions;   /* open, counted by sessions.c */
};

struct admission {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	unsigned concurrency; /* runs at once, whatever the key; with a queue,
			       * the live workers' slots (admission_set_concurrency) */
	unsigned queue_size;  /* runs waiting, whatever the key */
	double max_wait_sec;  /* the longest a run waits in the queue */
	unsigned running;
	unsigned waiting;
	bool draining;        /* shutting down: nothing new is admitted */
	struct key_use *uses; /* one per key of the keyring, in its order */
	size_t key_count;
};

enum admit_verdict {
	ADMIT_OK = 0,
	ADMIT_QUEUE_FULL, /* 429 */
	ADMIT_RATE,       /* 429: the key's runs per minute */
	ADMIT_DRAINING,   /* 503: the server is shutting down */
	ADMIT_WAITED,     /* 503: no slot came free within max_wait_sec */
	ADMIT_NO_WORKER,  /* 503: the wait ended with no worker offering a slot */
	ADMIT_VERDICTS,
	/* Not a refusal: the caller called its wait off (admit_call_off). */
	ADMIT_CALLED_OFF = ADMIT_VERDICTS,
};

/* A wait for a turn that its caller may call off: a recorded run
 * cancelled while it waits leaves the queue at once, its place free for
 * the next, instead of holding it until its turn comes. */
struct admit_ticket {
	bool called_off; /* under the admission's lock */
};

int admission_init(struct admission *a, const struct keyring *kr, unsigned concurrency,
		   unsigned queue_size, double max_wait_sec);
void admission_destroy(struct admission *a);
struct key_use *admission_use(struct admission *a, const struct key *k);

/* Takes a place in the queue and one of the key's runs per minute, or
 * refuses (*retry_after: whole seconds to wait). */
enum admit_verdict admit_enter(struct admission *a, struct key_use *u, unsigned *retry_after);
/* Waits for the run's turn (server and key both under their concurrency);
 * ADMIT_OK with the run counted as running, or ADMIT_WAITED (or
 * ADMIT_CALLED_OFF, when t was called off: t may be NULL) having left the
 * queue. */
enum admit_verdict admit_start(struct admission *a, struct key_use *u, struct admit_ticket *t,
			       unsigned *retry_after);
/* Calls t's wait off: it leaves the queue now (or, its turn already come,
 * changes nothing). */
void admit_call_off(struct admission *a, struct admit_ticket *t);
/* The run is over (after admit_start said ADMIT_OK). */
void admit_finish(struct admission *a, struct key_use *u);
/* Leaves the queue without running (after admit_enter, not admit_start). */
void admit_abandon(struct admission *a, struct key_use *u);

/* A new bound on runs at once (the fleet grew or shrank): runs waiting
 * start if it grew; runs over it finish, and no new one starts until it
 * is under. */
void admission_set_concurrency(struct admission *a, unsigned concurrency);
unsigned admission_concurrency(struct admission *a);

/* Stops admitting, then waits until nothing runs or waits. */
void admission_drain(struct admission *a);
void admission_counts(struct admission *a, unsigned *running, unsigned *waiting);

#endif
