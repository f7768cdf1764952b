/* Completion webhooks' delivery (webhook.h): a bounded list of deliveries,
 * in shares by key, each attempted by one of a few threads of their own
 * when it is due and its destination takes one (webhook_dest.c), with
 * libcurl (webhook_post.c). */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/internal.h"
#include "webhook.h"
#include "webhook_dest.h"
#include "webhook_post.h"
#include "webhook_url.h"

/* How often an idle delivery thread asks the source for a due one. */
#define WEBHOOK_POLL_MS 250

/* Seconds before each retry: attempt n+1 comes backoff[n-1] s after
 * attempt n failed. */
static const unsigned backoff[WEBHOOK_ATTEMPTS - 1] = {1, 2, 4, 8, 16};

unsigned webhook_backoff(unsigned n)
{
	return backoff[n >= 1 && n < WEBHOOK_ATTEMPTS ? n - 1 : 0];
}

struct delivery {
	struct delivery *next; /* oldest first */
	char *url;             /* as checked */
	char *host;            /* its host: a literal is reached as written */
	/* scheme://host:port for the log: a webhook's path or query often
	 * holds a token of the receiver's, which logs must not keep. */
	char *where;
	struct webhook_dest *dest; /* where's; the list's, not this one's */
	char key[65];          /* the share it counts in ("": a sourced one) */
	char *body;
	size_t len;
	char *secret;
	char run_id[65];
	unsigned attempts; /* made so far */
	double due;        /* monotonic ms */
	bool busy;         /* a thread is attempting it */
	bool sourced;      /* the source's (webhook_source): its retries are too */
	bool resting;      /* sourced while its destination's circuit is open */
};

struct webhooks {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a delivery added, an attempt ended, or stop */
	struct delivery *head, *tail;
	size_t count;
	struct webhook_dests dests; /* under mu */
	atomic_bool stopping;
	_Atomic double stop_by; /* monotonic ms: no attempt runs past it */
	pthread_t threads[WEBHOOK_THREADS];
	unsigned nthreads;
	struct webhook_counts counts; /* under mu */
	struct webhook_source source;  /* under mu; take NULL: none */
};

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void delivery_free(struct delivery *d)
{
	if (!d)
		return;
	free(d->url);
	free(d->host);
	free(d->where);
	free(d->body);
	if (d->secret) {
		OPENSSL_cleanse(d->secret, strlen(d->secret));
		free(d->secret);
	}
	free(d);
}

/* Unlinks d from the list (under mu). */
static void unlink_delivery(struct webhooks *wh, struct delivery *d)
{
	struct delivery **pp = &wh->head, *prev = NULL;
	while (*pp && *pp != d)
		prev = *pp, pp = &(*pp)->next;
	if (!*pp)
		return;
	*pp = d->next;
	if (wh->tail == d)
		wh->tail = prev;
	wh->count--;
}

static void say(const struct delivery *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(const struct delivery *d, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* One fprintf a line: lines from several threads do not interleave. */
	fprintf(stderr, "agentjail serve: webhook for run %s to %s: %s\n", d->run_id, d->where,
		msg);
}

/* Ends an attempt under way once a stop's deadline has passed. */
static bool stop_passed(void *arg)
{
	struct webhooks *wh = arg;
	return atomic_load(&wh->stopping) && mono_ms() >= atomic_load(&wh->stop_by);
}

/* The delivery not being attempted that is due first and whose
 * destination takes an attempt now, or NULL; *wake: the earliest time one
 * may be (0: none is waiting on a time, only on an attempt's end) (under
 * mu). */
static struct delivery *next_due(struct webhooks *wh, double now, double *wake)
{
	struct delivery *best = NULL;
	*wake = 0;
	for (struct delivery *d = wh->head; d; d = d->next) {
		if (d->busy)
			continue;
		double until = d->due;
		if (d->due <= now && !webhook_dest_ready(d->dest, now, &until)) {
			if (!until)
				continue; /* its destination's attempts under way: their end */
			/* until: its destination's circuit closes again */
		}
		if (until > now) {
			if (!*wake || until < *wake)
				*wake = until;
			continue;
		}
		if (!best || d->due < best->due)
			best = d;
	}
	return best;
}

static void timed_wait(struct webhooks *wh, double until_ms)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(until_ms / 1e3);
	ts.tv_nsec = (long)((until_ms - ts.tv_sec * 1e3) * 1e6);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_sec++, ts.tv_nsec -= 1000000000L;
	pthread_cond_timedwait(&wh->cv, &wh->mu, &ts);
}

/* One attempt of d, logged and counted: whether d is over (delivered,
 * given up, or a retry the stop will not wait for), else *due is its next
 * attempt's time. A sourced delivery is over after every attempt: its
 * source keeps its schedule, and is told. */
static bool attempt_once(struct webhooks *wh, struct delivery *d, double *due)
{
	char why[CURL_ERROR_SIZE];
	long status = -1;
	const struct webhook_post p = {.url = d->url, .host = d->host, .run_id = d->run_id,
				       .secret = d->secret, .body = d->body, .len = d->len,
				       .stopped = stop_passed, .arg = wh};
	if (d->resting)
		/* Claimed from the source already: counted as an attempt, one
		 * that fails fast instead of waiting on the receiver. */
		snprintf(why, sizeof why, "not tried: %s failed %d attempts in a row and rests "
					  "for up to %d s",
			 d->where, WEBHOOK_BREAK_AFTER, WEBHOOK_BREAK_SEC);
	else
		status = webhook_post(&p, why);
	unsigned n = ++d->attempts;
	bool delivered = status >= 200 && status < 300;
	bool last = n >= WEBHOOK_ATTEMPTS;
	char what[CURL_ERROR_SIZE + 32];
	if (status >= 0)
		snprintf(what, sizeof what, "HTTP %ld%s", status,
			 status >= 300 && status < 400 ? " (a redirect, not followed)" : "");
	else
		snprintf(what, sizeof what, "%s", why);
	*due = mono_ms() + backoff[last ? 0 : n - 1] * 1e3;
	/* A retry past the stop's deadline will not be made here; a
	 * sourced one is the source's, made by whoever takes it. */
	bool stopped = !d->sourced && !delivered && !last && atomic_load(&wh->stopping) &&
		       *due >= atomic_load(&wh->stop_by);
	if (delivered)
		say(d, "attempt %u of %d: %s: delivered", n, WEBHOOK_ATTEMPTS, what);
	else if (last)
		say(d, "attempt %u of %d: %s: given up", n, WEBHOOK_ATTEMPTS, what);
	else if (stopped)
		say(d, "attempt %u of %d: %s: dropped, the server is stopping", n,
		    WEBHOOK_ATTEMPTS, what);
	else
		say(d, "attempt %u of %d: %s: next in %u s", n, WEBHOOK_ATTEMPTS, what,
		    backoff[n - 1]);
	pthread_mutex_lock(&wh->mu);
	/* The receiver answered (below 500): it is up, whatever it said. */
	bool opened = !d->resting && webhook_dest_end(d->dest, status >= 0 && status < 500,
						     mono_ms());
	/* A destination's slot freed: a delivery waiting on it may go. */
	pthread_cond_broadcast(&wh->cv);
	struct webhook_source src = wh->source;
	if (delivered)
		wh->counts.delivered++;
	else if (last)
		wh->counts.given_up++;
	else
		wh->counts.failed++;
	if (stopped)
		wh->counts.dropped++;
	pthread_mutex_unlock(&wh->mu);
	if (opened)
		say(d, "%d failed attempts in a row: not tried for %d s", WEBHOOK_BREAK_AFTER,
		    WEBHOOK_BREAK_SEC);
	if (d->sourced && src.done)
		src.done(src.arg, d->run_id, n, delivered, last);
	return delivered || last || stopped || d->sourced;
}

static struct delivery *delivery_new(const char *url, const struct webhook_key *key,
				     const char *run_id, json_t *body, const char *text);

/* A delivery the source has due now, claimed for one attempt, or NULL (mu
 * held on entry and return, dropped while the source is asked). */
static struct delivery *take_sourced(struct webhooks *wh)
{
	struct webhook_source src = wh->source;
	pthread_mutex_unlock(&wh->mu);
	struct webhook_job job = {0};
	struct delivery *d = NULL;
	if (src.take(src.arg, &job) == 1) {
		const struct webhook_key k = {.name = "", .secret = job.secret};
		d = delivery_new(job.url, &k, job.run_id, NULL, job.body);
		if (d) {
			d->sourced = true;
			d->attempts = job.attempt - 1;
		} else if (src.done) {
			/* Cannot be made here (it says why): not again either. */
			src.done(src.arg, job.run_id, job.attempt, false, true);
		}
	}
	free(job.url);
	free(job.body);
	if (job.secret) {
		OPENSSL_cleanse(job.secret, strlen(job.secret));
		free(job.secret);
	}
	pthread_mutex_lock(&wh->mu);
	return d;
}

/* One attempt of s, the source's (mu held on entry and return). */
static void attempt_sourced(struct webhooks *wh, struct delivery *s)
{
	double until;
	s->dest = webhook_dest_get(&wh->dests, s->where);
	if (!s->dest || (!webhook_dest_ready(s->dest, mono_ms(), &until) && until))
		s->resting = true; /* its circuit open (or no memory to know) */
	else
		/* Counted, not waited for: the claim's lease is running. */
		webhook_dest_begin(s->dest);
	pthread_mutex_unlock(&wh->mu);
	double due;
	attempt_once(wh, s, &due);
	delivery_free(s);
	pthread_mutex_lock(&wh->mu);
}

/* How long an idle thread waits (mu held): until wake (0: none), the next
 * poll of the source, the stop's deadline, or a signal; false when there
 * is nothing left to wait for (stopping). */
static bool idle_wait(struct webhooks *wh, double wake, bool polls, double next_poll,
		      bool stopping, double stop_by)
{
	double until = wake;
	if (polls && (!until || next_poll < until))
		until = next_poll;
	if (stopping && (!until || stop_by < until))
		until = stop_by;
	if (!until && stopping)
		return false;
	if (!until)
		pthread_cond_wait(&wh->cv, &wh->mu);
	else
		timed_wait(wh, until);
	return true;
}

static void *deliver_loop(void *arg)
{
	struct webhooks *wh = arg;
	double next_poll = 0; /* monotonic ms: when the source is asked next */
	pthread_mutex_lock(&wh->mu);
	for (;;) {
		bool stopping = atomic_load(&wh->stopping);
		double stop_by = atomic_load(&wh->stop_by), now = mono_ms(), wake;
		if (stopping && now >= stop_by)
			break;
		struct delivery *d = next_due(wh, now, &wake);
		/* The source's deliveries are asked for only when no held one
		 * is due, and not while stopping: what it holds outlives this
		 * serve, for the next to take. */
		bool polls = wh->source.take && !stopping;
		if (!d && polls && now >= next_poll) {
			struct delivery *s = take_sourced(wh);
			if (s)
				attempt_sourced(wh, s);
			else
				next_poll = mono_ms() + WEBHOOK_POLL_MS;
			continue;
		}
		if (!d) {
			if (!idle_wait(wh, wake, polls, next_poll, stopping, stop_by))
				break;
			continue;
		}
		d->busy = true;
		webhook_dest_begin(d->dest);
		pthread_mutex_unlock(&wh->mu);
		double due;
		bool over = attempt_once(wh, d, &due);
		pthread_mutex_lock(&wh->mu);
		d->busy = false;
		d->due = due;
		if (over) {
			unlink_delivery(wh, d);
			delivery_free(d);
		}
	}
	pthread_mutex_unlock(&wh->mu);
	return NULL;
}

int webhooks_start(struct webhooks **out, const char *const *allow, unsigned n,
		   struct aj_error *err)
{
	*out = NULL;
	for (unsigned i = 0; i < n; i++) {
		struct webhook_url a;
		int rc = webhook_allow_parse(allow[i], NULL, &a, err);
		if (rc)
			return rc;
		webhook_url_free(&a);
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return error_set(err, -EIO, "webhooks: libcurl cannot start");
	struct webhooks *wh = calloc(1, sizeof *wh);
	if (!wh) {
		curl_global_cleanup();
		return error_set(err, -ENOMEM, "webhooks: out of memory");
	}
	pthread_mutex_init(&wh->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	/* Retries are due on the monotonic clock: a clock set back does not
	 * hold them up. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wh->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* No deliveries can be asked for where none is allowed. */
	unsigned want = n ? WEBHOOK_THREADS : 0;
	for (; wh->nthreads < want; wh->nthreads++)
		if (pthread_create(&wh->threads[wh->nthreads], NULL, deliver_loop, wh))
			break;
	if (want && !wh->nthreads) {
		webhooks_close(wh);
		return error_set(err, -EAGAIN, "webhooks: cannot start a delivery thread");
	}
	*out = wh;
	return 0;
}

/* A delivery of body (or of text, already dumped) to url, due now; NULL
 * after saying why it is not sent. */
static struct delivery *delivery_new(const char *url, const struct webhook_key *key,
				     const char *run_id, json_t *body, const char *text)
{
	struct delivery *d = calloc(1, sizeof *d);
	struct webhook_url u = {0};
	struct aj_error err;
	if (!d || webhook_url_parse(url, false, &u, &err)) {
		fprintf(stderr, "agentjail serve: webhook for run %s: not sent: %s\n", run_id,
			d ? err.message : "out of memory");
		free(d);
		return NULL;
	}
	snprintf(d->run_id, sizeof d->run_id, "%s", run_id);
	snprintf(d->key, sizeof d->key, "%s", key->name);
	d->url = strdup(u.full);
	d->host = strdup(u.host);
	if (asprintf(&d->where, "%s://%s:%s", u.scheme, u.host, u.port) < 0)
		d->where = NULL;
	webhook_url_free(&u);
	d->secret = strdup(key->secret);
	d->body = text ? strdup(text) : json_dumps(body, JSON_COMPACT);
	if (!d->url || !d->host || !d->where || !d->secret || !d->body) {
		fprintf(stderr, "agentjail serve: webhook for run %s: not sent: out of memory\n",
			run_id);
		delivery_free(d);
		return NULL;
	}
	d->len = strlen(d->body);
	d->due = mono_ms();
	return d;
}

/* Deliveries key holds (under mu). */
static size_t held_by(const struct webhooks *wh, const char *key)
{
	size_t n = 0;
	for (const struct delivery *d = wh->head; d; d = d->next)
		n += !strcmp(d->key, key);
	return n;
}

/* key's oldest delivery not under way (under mu). */
static struct delivery *oldest_waiting(const struct webhooks *wh, const char *key)
{
	for (struct delivery *d = wh->head; d; d = d->next)
		if (!d->busy && !strcmp(d->key, key))
			return d;
	return NULL;
}

/* The delivery to drop so that one more of key's fits, with why, or NULL
 * (under mu). Bounded, so that a receiver down for long, with many runs
 * ending, does not grow serve's memory; by key, so that one key's runs
 * cannot push out another's: a key's full share drops its own oldest, and
 * the whole bound the oldest of the key holding the most. The oldest
 * waiting one is the one most likely to be given up anyway. */
static struct delivery *to_drop(const struct webhooks *wh, const char *key, char *why, size_t n)
{
	if (held_by(wh, key) >= WEBHOOK_KEY_PENDING) {
		snprintf(why, n, "more than %d deliveries of key '%s' pending", WEBHOOK_KEY_PENDING,
			 key);
		return oldest_waiting(wh, key);
	}
	if (wh->count < WEBHOOK_MAX_PENDING)
		return NULL;
	const char *most = key;
	size_t most_n = 0;
	for (const struct delivery *d = wh->head; d; d = d->next) {
		size_t k = held_by(wh, d->key);
		if (k > most_n)
			most = d->key, most_n = k;
	}
	snprintf(why, n, "more than %d deliveries pending, key '%s' holding the most",
		 WEBHOOK_MAX_PENDING, most);
	return oldest_waiting(wh, most);
}

void webhook_send(struct webhooks *wh, const char *url, const struct webhook_key *key,
		  const char *run_id, json_t *body)
{
	if (!wh || !wh->nthreads) {
		fprintf(stderr, "agentjail serve: webhook for run %s: not sent: no delivery thread\n",
			run_id);
		return;
	}
	struct delivery *d = delivery_new(url, key, run_id, body, NULL);
	if (!d)
		return;
	pthread_mutex_lock(&wh->mu);
	if (!(d->dest = webhook_dest_get(&wh->dests, d->where))) {
		pthread_mutex_unlock(&wh->mu);
		say(d, "not sent: out of memory");
		delivery_free(d);
		return;
	}
	char why[160];
	struct delivery *old = to_drop(wh, d->key, why, sizeof why);
	if (old) {
		say(old, "dropped after %u attempt(s): %s", old->attempts, why);
		wh->counts.dropped++;
		unlink_delivery(wh, old);
		delivery_free(old);
	}
	if (wh->tail)
		wh->tail->next = d;
	else
		wh->head = d;
	wh->tail = d;
	wh->count++;
	pthread_cond_signal(&wh->cv);
	pthread_mutex_unlock(&wh->mu);
}

void webhooks_set_source(struct webhooks *wh, const struct webhook_source *src)
{
	if (!wh)
		return;
	pthread_mutex_lock(&wh->mu);
	wh->source = *src;
	pthread_cond_broadcast(&wh->cv);
	pthread_mutex_unlock(&wh->mu);
}

void webhooks_counts(struct webhooks *wh, struct webhook_counts *out)
{
	*out = (struct webhook_counts){0};
	if (!wh)
		return;
	pthread_mutex_lock(&wh->mu);
	*out = wh->counts;
	pthread_mutex_unlock(&wh->mu);
}

void webhooks_close(struct webhooks *wh)
{
	if (!wh)
		return;
	pthread_mutex_lock(&wh->mu);
	atomic_store(&wh->stop_by, mono_ms() + WEBHOOK_STOP_SEC * 1e3);
	atomic_store(&wh->stopping, true);
	pthread_cond_broadcast(&wh->cv);
	pthread_mutex_unlock(&wh->mu);
	for (unsigned i = 0; i < wh->nthreads; i++)
		pthread_join(wh->threads[i], NULL);
	while (wh->head) {
		struct delivery *d = wh->head;
		say(d, "dropped after %u attempt(s): the server is stopping", d->attempts);
		unlink_delivery(wh, d);
		delivery_free(d);
	}
	webhook_dests_free(&wh->dests);
	pthread_cond_destroy(&wh->cv);
	pthread_mutex_destroy(&wh->mu);
	free(wh);
	curl_global_cleanup();
}
