/* Completion webhooks' delivery (webhook.h): a bounded list of deliveries,
 * each attempted by one of a few threads of their own when it is due, with
 * libcurl. */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/internal.h"
#include "../admit/service.h"
#include "webhook.h"
#include "webhook_url.h"

#define WEBHOOK_THREADS 4
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
	/* scheme://host:port for the log: a webhook's path or query often
	 * holds a token of the receiver's, which logs must not keep. */
	char *where;
	char *body;
	size_t len;
	char *secret;
	char run_id[65];
	unsigned attempts; /* made so far */
	double due;        /* monotonic ms */
	bool busy;         /* a thread is attempting it */
	bool sourced;      /* the source's (webhook_source): its retries are too */
};

struct webhooks {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a delivery added, or stop */
	struct delivery *head, *tail;
	size_t count;
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

static size_t drop_answer(char *p, size_t size, size_t n, void *arg)
{
	(void)p, (void)arg;
	return size * n;
}

/* Ends an attempt under way once a stop's deadline has passed. */
static int stop_check(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t e)
{
	(void)a, (void)b, (void)c, (void)e;
	struct webhooks *wh = arg;
	return atomic_load(&wh->stopping) && mono_ms() >= atomic_load(&wh->stop_by);
}

/* "sha256=" and the hex HMAC-SHA256 of "<ts>.<body>" with secret. */
static int sign(const struct delivery *d, const char *ts, char out[7 + 64 + 1])
{
	size_t tl = strlen(ts);
	unsigned char *msg = malloc(tl + 1 + d->len);
	if (!msg)
		return -ENOMEM;
	memcpy(msg, ts, tl);
	msg[tl] = '.';
	memcpy(msg + tl + 1, d->body, d->len);
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	unsigned char *ok = HMAC(EVP_sha256(), d->secret, (int)strlen(d->secret), msg,
				 tl + 1 + d->len, mac, &n);
	free(msg);
	if (!ok || n != 32)
		return -EIO;
	memcpy(out, "sha256=", 7);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", mac[i]);
	return 0;
}

/* One POST: the HTTP status (2xx delivered), or -1 with why in why. */
static long attempt(struct webhooks *wh, const struct delivery *d, char why[CURL_ERROR_SIZE])
{
	char ts[32], sig[7 + 64 + 1], h_ts[64], h_sig[128], h_id[128];
	/* Signed with the time of this attempt: a receiver that refuses old
	 * timestamps (replays) still takes a late retry. */
	snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
	if (sign(d, ts, sig)) {
		snprintf(why, CURL_ERROR_SIZE, "cannot sign the body");
		return -1;
	}
	snprintf(h_ts, sizeof h_ts, "X-Agentjail-Timestamp: %s", ts);
	snprintf(h_sig, sizeof h_sig, "X-Agentjail-Signature: %s", sig);
	snprintf(h_id, sizeof h_id, "X-Agentjail-Run-Id: %s", d->run_id);
	CURL *c = curl_easy_init();
	struct curl_slist *hs = NULL, *t;
	const char *lines[] = {"Content-Type: application/json", h_id, h_ts, h_sig,
			       /* no 100-continue round trip before the body */
			       "Expect:"};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		if ((t = curl_slist_append(hs, lines[i])))
			hs = t;
	long status = -1;
	why[0] = '\0';
	if (!c || !hs) {
		snprintf(why, CURL_ERROR_SIZE, "out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, d->url);
	/* Only what the allow-list speaks of, and no redirect: a Location
	 * could point anywhere, past the allow-list. */
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, d->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)d->len);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "agentjail-webhook");
	/* A receiver that hangs holds a delivery thread no longer than this. */
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)WEBHOOK_TIMEOUT_SEC);
	/* Threads: libcurl must not use signals (SIGALRM) for its timeouts. */
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drop_answer);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, stop_check);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, wh);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, why);
	CURLcode rc = curl_easy_perform(c);
	if (rc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	} else if (!why[0]) {
		snprintf(why, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
	}
out:
	curl_slist_free_all(hs);
	curl_easy_cleanup(c);
	return status;
}

/* The delivery not being attempted that is due first (under mu). */
static struct delivery *next_due(struct webhooks *wh)
{
	struct delivery *best = NULL;
	for (struct delivery *d = wh->head; d; d = d->next)
		if (!d->busy && (!best || d->due < best->due))
			best = d;
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
	long status = attempt(wh, d, why);
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
	if (d->sourced && src.done)
		src.done(src.arg, d->run_id, n, delivered, last);
	return delivered || last || stopped || d->sourced;
}

static struct delivery *delivery_new(const char *url, const char *secret, const char *run_id,
				     json_t *body, const char *text);

/* A delivery the source has due now, claimed for one attempt, or NULL (mu
 * held on entry and return, dropped while the source is asked). */
static struct delivery *take_sourced(struct webhooks *wh)
{
	struct webhook_source src = wh->source;
	pthread_mutex_unlock(&wh->mu);
	struct webhook_job job = {0};
	struct delivery *d = NULL;
	if (src.take(src.arg, &job) == 1) {
		d = delivery_new(job.url, job.secret, job.run_id, NULL, job.body);
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

static void *deliver_loop(void *arg)
{
	struct webhooks *wh = arg;
	double next_poll = 0; /* monotonic ms: when the source is asked next */
	pthread_mutex_lock(&wh->mu);
	for (;;) {
		bool stopping = atomic_load(&wh->stopping);
		double stop_by = atomic_load(&wh->stop_by), now = mono_ms();
		if (stopping && now >= stop_by)
			break;
		struct delivery *d = next_due(wh);
		/* The source's deliveries are asked for only when no held one
		 * is due, and not while stopping: what it holds outlives this
		 * serve, for the next to take. */
		bool polls = wh->source.take && !stopping;
		if ((!d || d->due > now) && polls && now >= next_poll) {
			struct delivery *s = take_sourced(wh);
			if (!s) {
				next_poll = mono_ms() + WEBHOOK_POLL_MS;
				continue;
			}
			pthread_mutex_unlock(&wh->mu);
			double due;
			attempt_once(wh, s, &due);
			delivery_free(s);
			pthread_mutex_lock(&wh->mu);
			continue;
		}
		if (!d || d->due > now) {
			double until = d ? d->due : 0;
			if (polls && (!until || next_poll < until))
				until = next_poll;
			if (stopping && (!until || stop_by < until))
				until = stop_by;
			if (!until && stopping)
				break;
			if (!until)
				pthread_cond_wait(&wh->cv, &wh->mu);
			else
				timed_wait(wh, until);
			continue;
		}
		d->busy = true;
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

int webhooks_open(struct webhooks **out, const struct serve_config *cfg, struct aj_error *err)
{
	*out = NULL;
	for (unsigned i = 0; i < cfg->webhook_allow_count; i++) {
		struct webhook_url a;
		int rc = webhook_url_parse(cfg->webhook_allow[i], true, &a, err);
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
	unsigned want = cfg->webhook_allow_count ? WEBHOOK_THREADS : 0;
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
static struct delivery *delivery_new(const char *url, const char *secret, const char *run_id,
				     json_t *body, const char *text)
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
	d->url = strdup(u.full);
	if (asprintf(&d->where, "%s://%s:%s", u.scheme, u.host, u.port) < 0)
		d->where = NULL;
	webhook_url_free(&u);
	d->secret = strdup(secret);
	d->body = text ? strdup(text) : json_dumps(body, JSON_COMPACT);
	if (!d->url || !d->where || !d->secret || !d->body) {
		fprintf(stderr, "agentjail serve: webhook for run %s: not sent: out of memory\n",
			run_id);
		delivery_free(d);
		return NULL;
	}
	d->len = strlen(d->body);
	d->due = mono_ms();
	return d;
}

void webhook_send(struct webhooks *wh, const char *url, const char *secret, const char *run_id,
		  json_t *body)
{
	if (!wh || !wh->nthreads) {
		fprintf(stderr, "agentjail serve: webhook for run %s: not sent: no delivery thread\n",
			run_id);
		return;
	}
	struct delivery *d = delivery_new(url, secret, run_id, body, NULL);
	if (!d)
		return;
	pthread_mutex_lock(&wh->mu);
	if (wh->count >= WEBHOOK_MAX_PENDING) {
		/* Bounded: a receiver down for long, with many runs ending,
		 * must not grow serve's memory. The oldest waiting one is the
		 * one most likely to be given up anyway. */
		struct delivery *old = wh->head;
		while (old && old->busy)
			old = old->next;
		if (old) {
			say(old, "dropped after %u attempt(s): more than %d deliveries pending",
			    old->attempts, WEBHOOK_MAX_PENDING);
			wh->counts.dropped++;
			unlink_delivery(wh, old);
			delivery_free(old);
		}
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
	pthread_cond_destroy(&wh->cv);
	pthread_mutex_destroy(&wh->mu);
	free(wh);
	curl_global_cleanup();
}
