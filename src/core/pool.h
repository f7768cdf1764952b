/* A pool of ready items kept full by a thread of its own: the gvisor
 * tier's started sandboxes, the microvm tier's restored VMs and warm
 * mode's next zygote. Making an item is slow (a sandbox's start, a VM's
 * restore, an interpreter's imports), so the filler makes them ahead,
 * outside the lock, and a run takes one that is ready or makes its own:
 * a run never waits for the pool, save where its owner asks to wait for
 * the item in the making (pool_take_wait). pthread and libc only. */
#ifndef AJ_POOL_H
#define AJ_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct pool_ops {
	size_t item_size;
	unsigned size;          /* items kept ready at most */
	/* Makes one item in *item, by the filler thread, outside the lock
	 * (what it starts is that thread's child: it dies with it). 0, or
	 * nonzero with nothing made and nothing left. */
	int (*make)(void *ctx, void *item);
	/* Ends an item nobody took, leaving nothing of it; outside the lock. */
	void (*destroy)(void *ctx, void *item);
	/* Whether an item that waited may still serve (not too old, still
	 * alive), under the lock; NULL: always. A take skips and destroys
	 * those that may not, and so does the filler with the oldest. */
	bool (*usable)(void *ctx, const void *item);
	/* How many items are wanted now, asked by the filler outside the lock
	 * each time it wakes (never above size); NULL: size. */
	unsigned (*wanted)(void *ctx);
	/* The owner's own work ahead, called by the filler each time it wakes,
	 * outside the lock; NULL: none. */
	void (*idle)(void *ctx);
	unsigned wake_ms;       /* the filler wakes at least this often; 0: on a take or kick */
	unsigned retry_ms;      /* the wait after a make that failed (a run makes its own) */
	/* The filler starts with every signal blocked: the application's
	 * signals are not its to take (warm's zygote resets its mask). */
	bool block_signals;
};

struct pool {
	const struct pool_ops *ops;
	void *ctx;
	unsigned char *items;   /* ops->size slots, the caller's; the oldest first */
	unsigned count;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_cond_t made;    /* an item made, or a make that failed, or the stop */
	pthread_t filler;
	bool running, stopping;
	bool making;            /* the filler is making an item now */
};

/* items: room for ops->size items, as long as p lives. No thread yet: a
 * take finds the pool empty until pool_start. */
void pool_init(struct pool *p, const struct pool_ops *ops, void *ctx, void *items);
/* Starts the filler (nothing if it runs already): 0, or -errno. */
int pool_start(struct pool *p);
/* Moves a ready, usable item into *out (the newest: it waited least);
 * false when none is ready. Wakes the filler to replace it. */
bool pool_take(struct pool *p, void *out);
/* As pool_take, but when none is ready and the filler is making one,
 * waits for it at most ms: for an item whose second making would cost as
 * much as the wait and leave one of the two unused (warm's next zygote). */
bool pool_take_wait(struct pool *p, void *out, unsigned ms);
/* Wakes the filler now (its wanted or idle may have changed). */
void pool_kick(struct pool *p);
/* How many items are ready (for tests). */
unsigned pool_ready(struct pool *p);
/* Stops the filler and destroys every item left: nothing of the pool
 * outlives it. */
void pool_destroy(struct pool *p);

#endif
