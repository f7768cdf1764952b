/* See locked.h. */
#include "locked.h"

unsigned read_locked(pthread_mutex_t *mu, const unsigned *value)
{
	pthread_mutex_lock(mu);
	unsigned n = *value;
	pthread_mutex_unlock(mu);
	return n;
}
