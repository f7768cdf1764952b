/* The run store in serve's memory (no queue): records in a hash by id and
 * a list in the order they were made, one lock and one condition that
 * every append and end broadcasts, so readers wait without polling.
 *
 * Every list is one key's or one of ended records in the order they
 * ended, so the work of an append, a create, a page of the list or the
 * sweep is the key's own or what it drops, never every record serve holds
 * (all of it under the one lock every run waits on).
 *
 * Memory: a record costs its events' bytes, the result's JSON text, and a
 * fixed overhead per event and per record (counted, so a flood of tiny
 * events is paid for too). A key's records together stay within the
 * budget: when its new output or a new record would pass it, its oldest
 * ended records are dropped (never at a run's end: its readers are about
 * to read the result); a key whose runs still going hold the whole budget
 * gets no new record (-EDQUOT). A reader
 * gets at most READ_BATCH_BYTES of events at a time (at least one event),
 * so what a reader holds is bounded whatever the run printed. Everything is
 * lost when serve stops: the queue's store (remote/store.c) is the one that
 * outlives it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/internal.h"
#include "../../core/thread.h"
#include "../runs/budget.h"
#include "store.h"

#define MEM_BUCKETS 4096
/* What an event and a record cost beyond their bytes: the structures and
 * the allocator's share, rounded up, so the budget holds in RSS. */
#define EVENT_OVERHEAD 96
#define RECORD_OVERHEAD BUDGET_RECORD_COST
/* A reader's batch: enough to keep a fast client busy, small enough that
 * many readers of a large run hold little each. */
#define READ_BATCH_BYTES ((size_t)64 << 10)

struct stored_event {
	enum run_event_kind kind;
	char *data; /* RUN_EV_RESULT: the contract object's JSON text */
	size_t len;
	char *name, *mime;
};

struct mem_run;

struct mem_owner {
	char *name;
	size_t bytes;      /* all its records */
	size_t live_bytes; /* its records not yet done */
	struct mem_run *newest, *oldest;          /* its records as made */
	struct mem_run *ended_first, *ended_last; /* its ended ones as they ended */
	struct mem_owner *next;
};

struct mem_run {
	struct run_info info; /* info.result unused: the result event holds it */
	struct mem_owner *owner;
	struct stored_event *ev;
	size_t n, cap;
	size_t bytes;   /* what it holds */
	size_t reserve; /* RECORD_OVERHEAD + run_info.reserve: held while live */
	size_t charged; /* what its key counts: max(bytes, reserve) while live */
	bool events_lost; /* an append failed: the result says so */
	bool cancel;
	struct aj_cancel *token;
	/* While it waits for its turn: calls the wait off (local/store.h). */
	void (*call_off)(void *arg);
	void *call_off_arg;
	struct mem_run *hnext;
	struct mem_run *newer, *older; /* the owner's records as made */
	struct mem_run *onext, *oprev; /* ended: the owner's, as they ended */
	struct mem_run *gnext, *gprev; /* ended: everyone's, as they ended */
};

struct mem {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct mem_run *bucket[MEM_BUCKETS];
	struct mem_run *ended_first, *ended_last; /* every key's, as they ended */
	struct mem_owner *owners;
};

static double epoch_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned hash(const char *id)
{
	unsigned h = 2166136261u;
	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return h % MEM_BUCKETS;
}

static struct mem_run *find_any(struct mem *m, const char *id)
{
	for (struct mem_run *r = m->bucket[hash(id)]; r; r = r->hnext)
		if (!strcmp(r->info.id, id))
			return r;
	return NULL;
}

/* Another key's record is not there: the caller cannot tell it apart. */
static struct mem_run *find_owned(struct mem *m, const char *id, const char *owner)
{
	struct mem_run *r = find_any(m, id);
	return r && !strcmp(r->owner->name, owner) ? r : NULL;
}

static struct mem_owner *find_owner(struct mem *m, const char *name)
{
	for (struct mem_owner *o = m->owners; o; o = o->next)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

static struct mem_owner *owner_of(struct mem *m, const char *name)
{
	struct mem_owner *o = find_owner(m, name);
	if (o)
		return o;
	o = calloc(1, sizeof *o);
	if (!o || !(o->name = strdup(name))) {
		free(o);
		return NULL;
	}
	o->next = m->owners;
	m->owners = o;
	return o;
}

static void drop(struct mem *m, struct mem_run *r)
{
	struct mem_run **p = &m->bucket[hash(r->info.id)];
	while (*p != r)
		p = &(*p)->hnext;
	*p = r->hnext;
	struct mem_owner *o = r->owner;
	if (r->newer)
		r->newer->older = r->older;
	else
		o->newest = r->older;
	if (r->older)
		r->older->newer = r->newer;
	else
		o->oldest = r->newer;
	if (r->info.state == RUN_DONE) {
		if (r->onext)
			r->onext->oprev = r->oprev;
		else
			o->ended_last = r->oprev;
		if (r->oprev)
			r->oprev->onext = r->onext;
		else
			o->ended_first = r->onext;
		if (r->gnext)
			r->gnext->gprev = r->gprev;
		else
			m->ended_last = r->gprev;
		if (r->gprev)
			r->gprev->gnext = r->gnext;
		else
			m->ended_first = r->gnext;
	}
	r->owner->bytes -= r->charged;
	if (r->info.state != RUN_DONE)
		r->owner->live_bytes -= r->charged;
	for (size_t i = 0; i < r->n; i++) {
		free(r->ev[i].data);
		free(r->ev[i].name);
		free(r->ev[i].mime);
	}
	free(r->ev);
	free(r);
}

/* What r's key counts for it now: a live run its reservation (or what it
 * holds, if more: a run without one), an ended one what it holds. */
static void recharge(struct mem_run *r)
{
	bool live = r->info.state != RUN_DONE;
	size_t now = live && r->reserve > r->bytes ? r->reserve : r->bytes;
	r->owner->bytes += now - r->charged;
	if (live)
		r->owner->live_bytes += now - r->charged;
	r->charged = now;
}

/* The key's records that ended first go until it is within the budget;
 * its runs still going are never cut (their output caps bound them). */
static void enforce_budget(struct run_store *st, struct mem_owner *o)
{
	struct mem *m = st->impl;
	while (o->ended_first && !budget_fits(o->bytes, 0, st->budget))
		drop(m, o->ended_first);
}

static int mem_create(struct run_store *st, const char *id, const char *owner,
		      const struct run_info *info, struct aj_error *err)
{
	struct mem *m = st->impl;
	pthread_mutex_lock(&m->lock);
	struct mem_owner *o = owner_of(m, owner);
	int rc = 0;
	size_t reserve = budget_cost(st->budget, info->reserve);
	/* Room for its reservation: the key's ended records go first. */
	while (o && o->ended_first && !budget_fits(o->bytes, reserve, st->budget))
		drop(m, o->ended_first);
	if (!o) {
		rc = error_set(err, -EIO, "out of memory");
	} else if (!budget_fits(o->live_bytes, reserve, st->budget)) {
		rc = budget_refusal(err, owner, st->budget);
	} else {
		struct mem_run *r = calloc(1, sizeof *r);
		if (!r) {
			rc = error_set(err, -EIO, "out of memory");
		} else {
			r->info = *info;
			r->info.result = NULL;
			snprintf(r->info.id, sizeof r->info.id, "%s", id);
			r->info.state = RUN_QUEUED;
			r->info.created = epoch_now();
			r->info.ended = 0;
			r->owner = o;
			r->bytes = RECORD_OVERHEAD;
			r->reserve = reserve;
			recharge(r);
			unsigned h = hash(r->info.id);
			r->hnext = m->bucket[h];
			m->bucket[h] = r;
			r->older = o->newest;
			if (o->newest)
				o->newest->newer = r;
			else
				o->oldest = r;
			o->newest = r;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static void mem_started(struct run_store *st, const char *id)
{
	struct mem *m = st->impl;
	pthread_mutex_lock(&m->lock);
	struct mem_run *r = find_any(m, id);
	if (r && r->info.state == RUN_QUEUED)
		r->info.state = RUN_RUNNING;
	pthread_cond_broadcast(&m->changed);
	pthread_mutex_unlock(&m->lock);
}

/* One event at the end of r: false when memory ran out (the event is
 * lost, and the run's result will say nothing of it: rare enough to log
 * only). */
static bool add_event(struct mem_run *r, enum run_event_kind kind, const char *data, size_t len,
		      const char *name, const char *mime)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct stored_event *e = realloc(r->ev, cap * sizeof *e);
		if (!e)
			return false;
		r->ev = e;
		r->cap = cap;
	}
	struct stored_event *e = &r->ev[r->n];
	*e = (struct stored_event){.kind = kind, .len = len};
	e->data = dup_bytes(data, len);
	e->name = name ? strdup(name) : NULL;
	e->mime = mime ? strdup(mime) : NULL;
	if (!e->data || (name && !e->name) || (mime && !e->mime)) {
		free(e->data);
		free(e->name);
		free(e->mime);
		return false;
	}
	r->n++;
	r->bytes += len + EVENT_OVERHEAD + (name ? strlen(name) : 0) + (mime ? strlen(mime) : 0);
	recharge(r);
	return true;
}

static void mem_append(struct run_store *st, const char *id, enum run_event_kind kind,
		       const char *data, size_t len, const char *name, const char *mime)
{
	struct mem *m = st->impl;
	pthread_mutex_lock(&m->lock);
	struct mem_run *r = find_any(m, id);
	if (r && r->info.state != RUN_DONE && kind != RUN_EV_RESULT) {
		if (!add_event(r, kind, data, len, name, mime)) {
			/* A gap a reader cannot see: the result will name it. */
			r->events_lost = true;
			fprintf(stderr, "agentjail serve: run %s: out of memory, an event is lost\n",
				id);
		}
		enforce_budget(st, r->owner);
		pthread_cond_broadcast(&m->changed);
	}
	pthread_mutex_unlock(&m->lock);
}

static void mem_finish(struct run_store *st, const char *id, json_t *result)
{
	struct mem *m = st->impl;
	/* The run's own thread appends and ends it: no append comes between
	 * this look and the end. */
	pthread_mutex_lock(&m->lock);
	struct mem_run *was = find_any(m, id);
	bool gap = was && was->events_lost;
	pthread_mutex_unlock(&m->lock);
	json_t *copy = gap ? json_copy(result) : NULL;
	if (copy) {
		json_object_set_new(copy, "events_lost", json_true());
		result = copy;
	}
	/* Compact: one line, as an SSE data field must be. */
	char *text = json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER |
					       JSON_REAL_PRECISION(12));
	json_decref(copy);
	pthread_mutex_lock(&m->lock);
	struct mem_run *r = find_any(m, id);
	if (r && r->info.state != RUN_DONE) {
		static const char lost[] =
			"{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";
		struct mem_owner *o = r->owner;
		/* Its reservation ends: from now on its key counts what it
		 * holds (recharge below and in add_event). */
		o->live_bytes -= r->charged;
		r->info.state = RUN_DONE;
		r->info.ended = epoch_now();
		/* Last of the ended lists: the sweep and the budget take the
		 * first. */
		r->oprev = o->ended_last;
		if (o->ended_last)
			o->ended_last->onext = r;
		else
			o->ended_first = r;
		o->ended_last = r;
		r->gprev = m->ended_last;
		if (m->ended_last)
			m->ended_last->gnext = r;
		else
			m->ended_first = r;
		m->ended_last = r;
		const char *t = text ? text : lost;
		if (!add_event(r, RUN_EV_RESULT, t, strlen(t), NULL, NULL))
			fprintf(stderr, "agentjail serve: run %s: out of memory for its result\n",
				id);
		recharge(r);
		/* Not cut to the budget here: its readers are about to read
		 * the result. The key's next output makes room. */
		pthread_cond_broadcast(&m->changed);
	}
	pthread_mutex_unlock(&m->lock);
	free(text);
}

static int mem_info(struct run_store *st, const char *id, const char *owner,
		    struct run_info *info)
{
	struct mem *m = st->impl;
	char *text = NULL;
	size_t len = 0;
	pthread_mutex_lock(&m->lock);
	struct mem_run *r = find_owned(m, id, owner);
	if (r) {
		*info = r->info;
		info->result = NULL;
		info->last_id = r->info.state == RUN_DONE ? r->n : 0;
		const struct stored_event *last = r->n ? &r->ev[r->n - 1] : NULL;
		if (r->info.state == RUN_DONE && last && last->kind == RUN_EV_RESULT &&
		    (text = dup_bytes(last->data, last->len)))
			len = last->len;
	}
	pthread_mutex_unlock(&m->lock);
	/* Parsed outside the lock: a large result takes a while, and every
	 * run's appends and readers wait on this lock. */
	if (text)
		info->result = json_loadb(text, len, 0, NULL);
	free(text);
	return r ? 0 : -ENOENT;
}

static int mem_events(struct run_store *st, const char *id, const char *owner, uint64_t after,
		      int wait_ms, struct run_event **ev, size_t *n, bool *done)
{
	struct mem *m = st->impl;
	*ev = NULL;
	*n = 0;
	*done = false;
	struct timespec until;
	if (wait_ms > 0)
		until = thread_deadline(CLOCK_MONOTONIC, (unsigned)wait_ms);
	pthread_mutex_lock(&m->lock);
	struct mem_run *r;
	/* Looked up again after each wait: the record may have expired or
	 * been dropped for the budget meanwhile. */
	while ((r = find_owned(m, id, owner)) && r->n <= after && r->info.state != RUN_DONE &&
	       wait_ms > 0)
		if (pthread_cond_timedwait(&m->changed, &m->lock, &until) == ETIMEDOUT)
			wait_ms = 0;
	if (!r) {
		pthread_mutex_unlock(&m->lock);
		return -ENOENT;
	}
	size_t first = after < r->n ? (size_t)after : r->n, count = 0, bytes = 0;
	while (first + count < r->n && (!count || bytes < READ_BATCH_BYTES))
		bytes += r->ev[first + count++].len;
	struct run_event *out = count ? calloc(count, sizeof *out) : NULL;
	int rc = 0;
	for (size_t i = 0; out && i < count; i++) {
		const struct stored_event *e = &r->ev[first + i];
		out[i] = (struct run_event){.id = first + i + 1, .kind = e->kind, .len = e->len};
		out[i].data = dup_bytes(e->data, e->len);
		out[i].name = e->name ? strdup(e->name) : NULL;
		out[i].mime = e->mime ? strdup(e->mime) : NULL;
		if (!out[i].data || (e->name && !out[i].name) || (e->mime && !out[i].mime))
			rc = -EIO;
	}
	if (count && !out)
		rc = -EIO;
	bool end = r->info.state == RUN_DONE && first + count == r->n;
	pthread_mutex_unlock(&m->lock);
	if (rc) {
		run_events_free(out, count);
		return rc;
	}
	*ev = out;
	*n = count;
	*done = end;
	return 0;
}

static int mem_cancel(struct run_store *st, const char *id, const char *owner)
{
	struct mem *m = st->impl;
	pthread_mutex_lock(&m->lock);
	struct mem_run *r = find_owned(m, id, owner);
	if (r && r->info.state != RUN_DONE) {
		r->cancel = true;
		if (r->token)
			aj_cancel_fire(r->token);
		if (r->call_off)
			r->call_off(r->call_off_arg);
	}
	pthread_mutex_unlock(&m->lock);
	return r ? 0 : -ENOENT;
}

static bool mem_cancel_requested(struct run_store *st, const char *id)
{
	struct mem *m = st->impl;
	pthread_mutex_lock(&m->lock);
	struct mem_run *r = find_any(m, id);
	bool c = r && r->cancel;
	pthread_mutex_unlock(&m->lock);
	return c;
}

void local_store_set_cancel(struct run_store *st, const char *id, struct aj_cancel *token)
{
	struct mem *m = st->impl;
	pthread_mutex_lock(&m->lock);
	struct mem_run *r = find_any(m, id);
	if (r) {
		r->token = token;
		if (token && r->cancel)
			aj_cancel_fire(token);
	}
	pthread_mutex_unlock(&m->lock);
}

void local_store_set_call_off(struct run_store *st, const char *id, void (*fn)(void *arg),
			   void *arg)
{
	struct mem *m = st->impl;
	pthread_mutex_lock(&m->lock);
	struct mem_run *r = find_any(m, id);
	if (r) {
		r->call_off = fn;
		r->call_off_arg = arg;
		if (fn && r->cancel)
			fn(arg);
	}
	pthread_mutex_unlock(&m->lock);
}

static json_t *mem_list(struct run_store *st, const char *owner, const char *before,
			unsigned limit, struct aj_error *err)
{
	struct mem *m = st->impl;
	json_t *a = json_array();
	if (!a) {
		error_set(err, -EIO, "out of memory");
		return NULL;
	}
	pthread_mutex_lock(&m->lock);
	struct mem_owner *o = find_owner(m, owner);
	struct mem_run *r = o ? o->newest : NULL;
	if (before) {
		/* A page goes on after the last run of the one before; a run
		 * gone meanwhile (expired, or another key's) ends the list. */
		struct mem_run *b = find_owned(m, before, owner);
		r = b ? b->older : NULL;
	}
	for (; r && json_array_size(a) < limit; r = r->older) {
		/* A row without its result: a page of runs stays small, and
		 * GET /v1/runs/ID has the result. */
		struct run_info info = r->info;
		info.result = NULL;
		json_t *row = run_info_json(&info);
		if (!row || json_array_append_new(a, row)) {
			json_decref(a);
			a = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (!a)
		error_set(err, -EIO, "out of memory");
	return a;
}

static void mem_sweep(struct run_store *st)
{
	struct mem *m = st->impl;
	double now = epoch_now();
	pthread_mutex_lock(&m->lock);
	/* In the order they ended, all kept as long: the first one not
	 * expired ends the look. */
	while (m->ended_first && m->ended_first->info.ended + st->keep_sec < now)
		drop(m, m->ended_first);
	/* A reader of a run just dropped learns it now, not at its wait's end. */
	pthread_cond_broadcast(&m->changed);
	pthread_mutex_unlock(&m->lock);
}

static void mem_close(struct run_store *st)
{
	struct mem *m = st->impl;
	if (!m)
		return;
	for (struct mem_owner *o = m->owners; o; o = o->next)
		while (o->newest)
			drop(m, o->newest);
	while (m->owners) {
		struct mem_owner *o = m->owners;
		m->owners = o->next;
		free(o->name);
		free(o);
	}
	pthread_cond_destroy(&m->changed);
	pthread_mutex_destroy(&m->lock);
	free(m);
	st->impl = NULL;
}

static const struct run_store_ops mem_ops = {
	.create = mem_create,
	.started = mem_started,
	.append = mem_append,
	.finish = mem_finish,
	.info = mem_info,
	.events = mem_events,
	.cancel = mem_cancel,
	.cancel_requested = mem_cancel_requested,
	.list = mem_list,
	.sweep = mem_sweep,
	.close = mem_close,
};

int local_store_open(struct run_store *st, double keep_sec, size_t budget, struct aj_error *err)
{
	struct mem *m = calloc(1, sizeof *m);
	if (!m)
		return error_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&m->lock, NULL);
	/* Waits are measured on the monotonic clock: a clock change must not
	 * end or stretch a reader's wait. */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->changed, &ca);
	pthread_condattr_destroy(&ca);
	*st = (struct run_store){.ops = &mem_ops, .keep_sec = keep_sec, .budget = budget, .impl = m};
	return 0;
}
