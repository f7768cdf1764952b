/* The pool filled by a thread: see pool.h. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool.h"
#include "thread.h"

static void *slot(struct pool *p, unsigned i)
{
	return p->items + (size_t)i * p->ops->item_size;
}

/* Under the lock: waits for a take, a kick or the stop, at most ms (0: no
 * bound). */
static void wait_for(struct pool *p, unsigned ms)
{
	if (!ms) {
		pthread_cond_wait(&p->cv, &p->mu);
		return;
	}
	struct timespec until = thread_deadline(CLOCK_REALTIME, ms);
	pthread_cond_timedwait(&p->cv, &p->mu, &until);
}

/* Under the lock: drops item i, which the caller destroys outside it. */
static void remove_at(struct pool *p, unsigned i, void *out)
{
	const size_t size = p->ops->item_size;
	memcpy(out, slot(p, i), size);
	memmove(slot(p, i), slot(p, i + 1), (size_t)(p->count - i - 1) * size);
	p->count--;
}

static void *filler_main(void *arg)
{
	struct pool *p = arg;
	const struct pool_ops *o = p->ops;
	/* The item in the making (without it, no filler: runs make their
	 * own, as when a make fails). */
	void *item = malloc(o->item_size);
	pthread_mutex_lock(&p->mu);
	while (item && !p->stopping) {
		if (o->idle) {
			pthread_mutex_unlock(&p->mu);
			o->idle(p->ctx);
			pthread_mutex_lock(&p->mu);
			if (p->stopping)
				break;
		}
		/* The oldest first: it is the first to age or die. */
		if (p->count && o->usable && !o->usable(p->ctx, slot(p, 0))) {
			remove_at(p, 0, item);
			pthread_mutex_unlock(&p->mu);
			o->destroy(p->ctx, item);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		unsigned want = o->size;
		if (o->wanted) {
			pthread_mutex_unlock(&p->mu);
			want = o->wanted(p->ctx);
			pthread_mutex_lock(&p->mu);
			want = want < o->size ? want : o->size;
		}
		if (p->stopping)
			break;
		if (p->count >= want) {
			wait_for(p, o->wake_ms);
			continue;
		}
		p->making = true;
		pthread_mutex_unlock(&p->mu);
		int rc = o->make(p->ctx, item);
		pthread_mutex_lock(&p->mu);
		p->making = false;
		/* Whatever came of it, a pool_take_wait waits no more. */
		pthread_cond_broadcast(&p->made);
		if (rc) {
			/* Runs make their own meanwhile; again in a while. */
			wait_for(p, o->retry_ms);
			continue;
		}
		if (!p->stopping && p->count < o->size) {
			memcpy(slot(p, p->count++), item, o->item_size);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		o->destroy(p->ctx, item);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	free(item);
	return NULL;
}

void pool_init(struct pool *p, const struct pool_ops *ops, void *ctx, void *items)
{
	memset(p, 0, sizeof *p);
	p->ops = ops;
	p->ctx = ctx;
	p->items = items;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_cond_init(&p->made, NULL);
}

int pool_start(struct pool *p)
{
	int rc = 0;
	pthread_mutex_lock(&p->mu);
	if (!p->running && !p->stopping) {
		sigset_t all, old;
		sigfillset(&all);
		if (p->ops->block_signals)
			pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = -pthread_create(&p->filler, NULL, filler_main, p);
		if (p->ops->block_signals)
			pthread_sigmask(SIG_SETMASK, &old, NULL);
		p->running = rc == 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

bool pool_take(struct pool *p, void *out)
{
	bool got = false;
	pthread_mutex_lock(&p->mu);
	while (p->count && !got) {
		remove_at(p, p->count - 1, out);
		got = !p->ops->usable || p->ops->usable(p->ctx, out);
		if (!got) {
			/* It aged or ended while it waited: never used. */
			pthread_mutex_unlock(&p->mu);
			p->ops->destroy(p->ctx, out);
			pthread_mutex_lock(&p->mu);
		}
	}
	pthread_cond_signal(&p->cv); /* refill */
	pthread_mutex_unlock(&p->mu);
	return got;
}

bool pool_take_wait(struct pool *p, void *out, unsigned ms)
{
	struct timespec until = thread_deadline(CLOCK_REALTIME, ms);
	pthread_mutex_lock(&p->mu);
	int rc = 0;
	while (!p->count && p->making && !p->stopping && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&p->made, &p->mu, &until);
	pthread_mutex_unlock(&p->mu);
	return pool_take(p, out);
}

void pool_kick(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

unsigned pool_ready(struct pool *p)
{
	return locked_read(&p->mu, &p->count);
}

void pool_destroy(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->cv);
	pthread_cond_broadcast(&p->made);
	bool running = p->running;
	pthread_mutex_unlock(&p->mu);
	if (running)
		pthread_join(p->filler, NULL);
	p->running = false;
	/* The filler is gone (and with it, by PDEATHSIG, what it started
	 * waits to be reaped): each item left is ended here. */
	while (p->count)
		p->ops->destroy(p->ctx, slot(p, --p->count));
	pthread_cond_destroy(&p->cv);
	pthread_cond_destroy(&p->made);
	pthread_mutex_destroy(&p->mu);
}
