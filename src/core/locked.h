/* A figure another thread changes, read under the lock that guards it: the
 * pool's count of ready items, a test server's connection counts, serve's
 * admission's concurrency. */
#ifndef AJ_CORE_LOCKED_H
#define AJ_CORE_LOCKED_H

#include <pthread.h>

unsigned read_locked(pthread_mutex_t *mu, const unsigned *value);

#endif
