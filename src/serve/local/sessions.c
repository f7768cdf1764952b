#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../api/api.h"
#include "../../core/internal.h"
#include "sessions.h"

void sessions_init(struct session_table *t)
{
	t->head = NULL;
	pthread_mutex_init(&t->lock, NULL);
}

static bool live(const struct hsession *h)
{
	return !h->deleted && !aj_session_closed_reason(h->s);
}

/* Under the lock: drops entries no call holds that are deleted, and
 * returns how many live ones owner (NULL: anyone) holds. */
static unsigned sweep(struct session_table *t, const struct key_use *owner,
		      struct hsession **dead)
{
	unsigned n = 0;
	for (struct hsession **p = &t->head; *p;) {
		struct hsession *h = *p;
		if (h->deleted && !h->refs) {
			*p = h->next;
			h->next = *dead;
			*dead = h;
			continue;
		}
		if (live(h) && (!owner || h->owner == owner))
			n++;
		p = &h->next;
	}
	return n;
}

static void close_dead(struct hsession *dead)
{
	while (dead) {
		struct hsession *next = dead->next;
		aj_session_close(dead->s);
		json_decref(dead->terms);
		free(dead);
		dead = next;
	}
}

/* Now, in epoch seconds with its fraction (sessions opened within one
 * second still sort by when). */
static double table_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* h (its library session set) into the table as owner's, held refs times. */
static void enlist(struct session_table *t, struct hsession *h, struct key_use *owner,
		   unsigned refs, const char *id, json_t *terms)
{
	snprintf(h->id, sizeof h->id, "%s", id ? id : aj_session_id(h->s));
	h->terms = json_incref(terms);
	h->owner = owner;
	h->refs = refs;
	h->created = h->used = table_clock();
	pthread_mutex_lock(&t->lock);
	h->next = t->head;
	t->head = h;
	pthread_mutex_unlock(&t->lock);
}

int sessions_create(struct session_table *t, const struct session_make *m, struct key_use *owner,
		    struct hsession **out, struct aj_error *err)
{
	struct hsession *dead = NULL;
	pthread_mutex_lock(&t->lock);
	unsigned held = sweep(t, owner, &dead);
	pthread_mutex_unlock(&t->lock);
	close_dead(dead);
	/* Checked before the open, so a key at its limit costs no sandbox;
	 * two racing opens may briefly pass it, and the library's own
	 * max_sessions still bounds the whole server. */
	if (held >= owner->key->sessions)
		return error_set(err, -EDQUOT,
				 "key '%s' holds %u open session(s), its limit; close one first",
				 owner->key->name, held);
	struct hsession *h = calloc(1, sizeof *h);
	if (!h)
		return error_set(err, -ENOMEM, "session: out of memory");
	int rc = m->open ? m->open(m->arg, m->cfg, &h->s, err) : aj_session_open(m->cfg, &h->s, err);
	if (rc) {
		free(h);
		return rc;
	}
	enlist(t, h, owner, 1, m->id, m->terms);
	*out = h;
	return 0;
}

int sessions_fork(struct session_table *t, struct hsession *from, unsigned n,
		  struct hsession **out, struct aj_checkpoint_info *info, struct aj_error *err)
{
	struct hsession *dead = NULL;
	struct key_use *owner = from->owner;
	pthread_mutex_lock(&t->lock);
	unsigned held = sweep(t, owner, &dead);
	pthread_mutex_unlock(&t->lock);
	close_dead(dead);
	/* n copies are n sessions of the key's: all fit, or none is made. */
	if (held + n > owner->key->sessions)
		return error_set(err, -EDQUOT,
				 "key '%s' holds %u open session(s) of its %u: %u more do not fit; "
				 "close some first",
				 owner->key->name, held, owner->key->sessions, n);
	struct aj_session **made = calloc(n, sizeof *made);
	struct hsession **hs = calloc(n, sizeof *hs);
	for (unsigned i = 0; made && hs && i < n; i++)
		if (!(hs[i] = calloc(1, sizeof **hs)))
			break;
	int rc = made && hs && hs[n - 1] ? aj_session_fork(from->s, n, made, info, err)
					 : error_set(err, -ENOMEM, "fork: out of memory");
	for (unsigned i = 0; i < n && hs; i++) {
		if (rc) {
			free(hs[i]);
			continue;
		}
		hs[i]->s = made[i];
		enlist(t, hs[i], owner, 0, NULL, from->terms);
		out[i] = hs[i];
	}
	free(made);
	free(hs);
	return rc;
}

struct hsession *sessions_get(struct session_table *t, const char *id, const struct key_use *owner)
{
	struct hsession *found = NULL;
	pthread_mutex_lock(&t->lock);
	for (struct hsession *h = t->head; h; h = h->next)
		if (!h->deleted && h->owner == owner && !strcmp(h->id, id)) {
			h->refs++;
			h->used = table_clock();
			found = h;
			break;
		}
	pthread_mutex_unlock(&t->lock);
	return found;
}

void sessions_put(struct session_table *t, struct hsession *h)
{
	struct hsession *dead = NULL;
	pthread_mutex_lock(&t->lock);
	h->refs--;
	sweep(t, NULL, &dead);
	pthread_mutex_unlock(&t->lock);
	close_dead(dead);
}

void sessions_hold(struct session_table *t, struct hsession *h)
{
	pthread_mutex_lock(&t->lock);
	h->refs++;
	pthread_mutex_unlock(&t->lock);
}

int sessions_delete(struct session_table *t, const char *id, const struct key_use *owner)
{
	struct hsession *dead = NULL;
	int rc = -ENOENT;
	pthread_mutex_lock(&t->lock);
	for (struct hsession *h = t->head; h; h = h->next)
		if (!h->deleted && h->owner == owner && !strcmp(h->id, id)) {
			h->deleted = true;
			rc = 0;
			break;
		}
	sweep(t, NULL, &dead);
	pthread_mutex_unlock(&t->lock);
	close_dead(dead);
	return rc;
}

int sessions_end(struct session_table *t, const char *id, const char *why)
{
	struct hsession *found = NULL;
	pthread_mutex_lock(&t->lock);
	for (struct hsession *h = t->head; h && !found; h = h->next)
		if (live(h) && !strcmp(h->id, id)) {
			h->refs++; /* held while its sandbox ends: not its key's use */
			found = h;
		}
	pthread_mutex_unlock(&t->lock);
	if (!found)
		return -ENOENT;
	/* Ended in the library, not deleted from the table: its owner's next
	 * call finds it (sessions_get) and is told why, as for an idle
	 * timeout; it is no longer live, so no longer listed or counted. */
	session_end(found->s, why);
	sessions_put(t, found);
	return 0;
}

bool sessions_deleted(struct session_table *t, struct hsession *h)
{
	pthread_mutex_lock(&t->lock);
	bool deleted = h->deleted;
	pthread_mutex_unlock(&t->lock);
	return deleted;
}

void sessions_each(struct session_table *t, void (*fn)(struct hsession *h, void *arg), void *arg)
{
	pthread_mutex_lock(&t->lock);
	for (struct hsession *h = t->head; h; h = h->next)
		if (live(h))
			fn(h, arg);
	pthread_mutex_unlock(&t->lock);
}

void sessions_narrowed(struct session_table *t, struct hsession *h, json_t *kept)
{
	pthread_mutex_lock(&t->lock);
	if (h->terms) {
		/* The terms are shared with the session's forks: a copy of its own. */
		json_t *mine = json_deep_copy(h->terms);
		if (mine) {
			static const char *const lists[] = {"allow_hosts", "allow_cidrs",
							    "secrets_kept"};
			for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
				json_t *v = json_object_get(kept, lists[i]);
				if (v)
					json_object_set(mine, lists[i], v);
			}
			json_decref(h->terms);
			h->terms = mine;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

unsigned sessions_open(struct session_table *t)
{
	struct hsession *dead = NULL;
	pthread_mutex_lock(&t->lock);
	unsigned n = sweep(t, NULL, &dead);
	pthread_mutex_unlock(&t->lock);
	close_dead(dead);
	return n;
}

void sessions_close_all(struct session_table *t)
{
	pthread_mutex_lock(&t->lock);
	struct hsession *all = t->head;
	t->head = NULL;
	pthread_mutex_unlock(&t->lock);
	close_dead(all);
	pthread_mutex_destroy(&t->lock);
}
