/* Two small things threads of every layer do, written once: start a
 * thread nobody joins, and read a counter under its lock. Header-only, so
 * that the microvm guest, which compiles only a few of src/core's files,
 * takes them too. */
#ifndef AJ_CORE_THREAD_H
#define AJ_CORE_THREAD_H

#include <pthread.h>
#include <stddef.h>
#include <time.h>

/* Starts fn(arg) on a detached thread (stack: 0 for the default, else
 * that many bytes): 0, or pthread_create's error, and no thread. */
static inline int thread_start_detached(void *(*fn)(void *), void *arg, size_t stack)
{
	pthread_t t;
	pthread_attr_t a;
	int rc = pthread_attr_init(&a);
	if (rc)
		return rc;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (stack)
		pthread_attr_setstacksize(&a, stack);
	rc = pthread_create(&t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return rc;
}

/* ms from now on clock: a deadline for pthread_cond_timedwait on a
 * condition variable of that clock. */
static inline struct timespec thread_deadline(clockid_t clock, unsigned ms)
{
	struct timespec t;
	clock_gettime(clock, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* *v, read under lock. */
static inline unsigned locked_read(pthread_mutex_t *lock, const unsigned *v)
{
	pthread_mutex_lock(lock);
	unsigned n = *v;
	pthread_mutex_unlock(lock);
	return n;
}

#endif
