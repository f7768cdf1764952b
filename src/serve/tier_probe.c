/* The prober of tier_probe.h: a thread, a verdict and the conditions
 * between them. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admit/service.h"
#include "tier_probe.h"

/* How long a request waits for a probe under way before it takes the
 * last verdict (or a 503): a probe is a trial of each tier, seconds on a
 * loaded machine; this only ends a wait on one that hangs. */
#define TIER_PROBE_WAIT_SEC 30

struct tier_probe {
	struct service *svc;
	pthread_mutex_t lock;
	pthread_cond_t wanted;  /* a request wants a fresher verdict, or stop */
	pthread_cond_t probed;  /* a probe ended, or stop */
	pthread_t thread;
	char *body;             /* the last verdict's answer (JSON); NULL: none yet */
	int code;               /* and its HTTP status (503: the backend could not say) */
	double at;              /* when its probe began (CLOCK_MONOTONIC seconds) */
	bool want, stopping;
	unsigned long long probes;
};

static double mono_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One probe, outside the lock: the backend's verdict as an answer. */
static void probe_backend(struct service *svc, struct http_response *rs)
{
	struct aj_error err = {0};
	json_t *verdict = svc->backend->tiers(svc, &err);
	if (verdict)
		respond_json(rs, 200, verdict);
	else
		respond_error(rs, 503, "tiers_unavailable", "%s", err.message);
}

static void *prober(void *arg)
{
	struct tier_probe *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		/* A probe only when a request finds the verdict missing or too
		 * old: an idle server starts no trial sandboxes. */
		while (!p->stopping && !p->want)
			pthread_cond_wait(&p->wanted, &p->lock);
		if (p->stopping)
			break;
		/* Cleared as the probe begins: a request that comes during it
		 * wants the next one, since this one may predate it. */
		p->want = false;
		double began = mono_sec();
		pthread_mutex_unlock(&p->lock);
		struct http_response rs = {0};
		probe_backend(p->svc, &rs);
		pthread_mutex_lock(&p->lock);
		free(p->body);
		p->body = rs.body;
		p->code = rs.code;
		p->at = began;
		p->probes++;
		pthread_cond_broadcast(&p->probed);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int tier_probe_start(struct service *svc, struct tier_probe **out)
{
	struct tier_probe *p = calloc(1, sizeof *p);
	if (!p)
		return -1;
	p->svc = svc;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	/* Waits are timed against CLOCK_MONOTONIC: setting the clock neither
	 * ends nor stretches them. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wanted, &ca);
	pthread_cond_init(&p->probed, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&p->thread, NULL, prober, p)) {
		pthread_cond_destroy(&p->probed);
		pthread_cond_destroy(&p->wanted);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return -1;
	}
	*out = p;
	return 0;
}

void tier_probe_stop(struct tier_probe *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->wanted);
	pthread_cond_broadcast(&p->probed);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->probed);
	pthread_cond_destroy(&p->wanted);
	pthread_mutex_destroy(&p->lock);
	free(p->body);
	free(p);
}

/* Whether the verdict held is young enough for a request made at t. */
static bool fresh(const struct tier_probe *p, double t)
{
	return p->body && p->at >= t - p->svc->backend->tiers_max_age_sec;
}

void tier_probe_answer(struct tier_probe *p, struct http_response *rs)
{
	double t = mono_sec();
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += TIER_PROBE_WAIT_SEC;
	pthread_mutex_lock(&p->lock);
	int rc = 0;
	while (!fresh(p, t) && !p->stopping && rc != ETIMEDOUT) {
		/* The one prober probes; every request waits for that probe. */
		if (!p->want) {
			p->want = true;
			pthread_cond_signal(&p->wanted);
		}
		rc = pthread_cond_timedwait(&p->probed, &p->lock, &until);
	}
	char *body = p->body ? strdup(p->body) : NULL;
	int code = p->code;
	pthread_mutex_unlock(&p->lock);
	if (!body) {
		respond_error(rs, 503, "tiers_pending",
			      "the tiers are still being checked; ask again shortly");
		rs->retry_after = 5;
		return;
	}
	rs->code = code;
	rs->body = body;
	rs->len = strlen(body);
	rs->content_type = "application/json";
}

unsigned long long tier_probe_count(struct tier_probe *p)
{
	pthread_mutex_lock(&p->lock);
	unsigned long long n = p->probes;
	pthread_mutex_unlock(&p->lock);
	return n;
}
