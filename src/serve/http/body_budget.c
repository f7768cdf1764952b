/* The body budget (body_budget.h): one counter for the server and one per
 * key with bytes reserved, in a table with a row per body that may be in
 * flight (a key with nothing reserved gives its row back). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "body_budget.h"

struct key_row {
	const void *key;
	size_t used; /* 0: the row is free */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t used, cap_all, cap_key;
static struct key_row *rows;
static unsigned nrows;

int body_budget_init(size_t cap, size_t key_cap, unsigned slots)
{
	rows = calloc(slots ? slots : 1, sizeof *rows);
	if (!rows)
		return -ENOMEM;
	nrows = slots ? slots : 1;
	cap_all = cap;
	cap_key = key_cap;
	used = 0;
	return 0;
}

void body_budget_destroy(void)
{
	free(rows);
	rows = NULL;
	nrows = 0;
}

/* key's row, or a free one when it has none (NULL: no row is free). */
static struct key_row *row_of(const void *key)
{
	struct key_row *free_row = NULL;
	for (unsigned i = 0; i < nrows; i++) {
		if (rows[i].used && rows[i].key == key)
			return &rows[i];
		if (!rows[i].used && !free_row)
			free_row = &rows[i];
	}
	if (free_row)
		free_row->key = key;
	return free_row;
}

enum body_budget_verdict body_budget_reserve(const void *key, size_t n)
{
	enum body_budget_verdict v = BODY_BUDGET_OK;
	pthread_mutex_lock(&lock);
	struct key_row *r = row_of(key);
	/* The key's own first: a key over its share is told so (429, its own
	 * doing) even when the server is full too. */
	if (r && n > cap_key - r->used)
		v = BODY_BUDGET_KEY;
	else if (n > cap_all - used || !r)
		v = BODY_BUDGET_SERVER;
	else {
		used += n;
		r->used += n;
	}
	pthread_mutex_unlock(&lock);
	return v;
}

void body_budget_release(const void *key, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&lock);
	struct key_row *r = row_of(key);
	if (r)
		r->used -= n;
	used -= n;
	pthread_mutex_unlock(&lock);
}

size_t body_budget_cap(void)
{
	return cap_all;
}

size_t body_budget_key_cap(void)
{
	return cap_key;
}
