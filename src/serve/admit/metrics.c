#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* Seconds: a process-tier run is ~0.02 s, a TCG microVM's ~0.5 s, and
 * the default wall limit 10 s. */
static const double bounds[METRICS_BUCKETS] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
					       1,    2.5,   5,    10,  30,   60};

static const char *const refusal_names[ADMIT_VERDICTS] = {
	[ADMIT_QUEUE_FULL] = "queue_full",
	[ADMIT_RATE] = "rate_limit",
	[ADMIT_DRAINING] = "shutting_down",
	[ADMIT_WAITED] = "queue_wait",
	[ADMIT_NO_WORKER] = "no_worker",
};

void metrics_init(struct metrics *m)
{
	memset(m, 0, sizeof *m);
	pthread_mutex_init(&m->lock, NULL);
}

void metrics_destroy(struct metrics *m)
{
	pthread_mutex_destroy(&m->lock);
}

void metrics_run(struct metrics *m, enum aj_tier tier, enum aj_status status, double seconds)
{
	if ((unsigned)tier >= AJ_TIER_COUNT || (unsigned)status >= AJ_STATUS_COUNT)
		return;
	pthread_mutex_lock(&m->lock);
	m->runs[tier][status]++;
	for (int i = 0; i < METRICS_BUCKETS; i++)
		if (seconds <= bounds[i]) {
			m->buckets[i]++;
			break;
		}
	m->latency_count++;
	m->latency_sum += seconds;
	pthread_mutex_unlock(&m->lock);
}

void metrics_http(struct metrics *m, int code)
{
	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < METRICS_CODES; i++) {
		if (m->codes[i] == 0)
			m->codes[i] = code;
		if (m->codes[i] == code) {
			m->code_count[i]++;
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
}

void metrics_refused(struct metrics *m, enum admit_verdict why)
{
	pthread_mutex_lock(&m->lock);
	if ((unsigned)why < ADMIT_VERDICTS)
		m->refused[why]++;
	pthread_mutex_unlock(&m->lock);
}

void metrics_too_large(struct metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->too_large++;
	pthread_mutex_unlock(&m->lock);
}

void metrics_auth_failure(struct metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->auth_failures++;
	pthread_mutex_unlock(&m->lock);
}

void metrics_lost(struct metrics *m, bool may_have_started)
{
	pthread_mutex_lock(&m->lock);
	m->lost[may_have_started]++;
	pthread_mutex_unlock(&m->lock);
}

void metrics_egress(struct metrics *m, uint64_t allowed, uint64_t denied, uint64_t failed)
{
	pthread_mutex_lock(&m->lock);
	m->egress[1] += allowed;
	m->egress[0] += denied;
	m->egress[2] += failed;
	pthread_mutex_unlock(&m->lock);
}

static bool secret_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n < 1 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_'))
			return false;
	return true;
}

void metrics_injections(struct metrics *m, const char *name, uint64_t n)
{
	/* The name goes into a label: only a secret's name's characters,
	 * which can neither end the label nor forge a line. */
	if (!n || !secret_name_ok(name))
		return;
	pthread_mutex_lock(&m->lock);
	int i = 0;
	while (i < METRICS_SECRETS && m->secret_names[i][0] && strcmp(m->secret_names[i], name))
		i++;
	if (i == METRICS_SECRETS) {
		m->injections_other += n;
	} else {
		if (!m->secret_names[i][0])
			snprintf(m->secret_names[i], sizeof m->secret_names[i], "%s", name);
		m->injections[i] += n;
	}
	pthread_mutex_unlock(&m->lock);
}

/* What the backend and the parts beside the counters report now. */
static void render_gauges(FILE *f, const struct metrics_gauges *g)
{
	fprintf(f,
		"# HELP agentjail_run_slots Runs admitted at once now (with a queue: the live "
		"workers' slots, capped by --concurrency).\n"
		"# TYPE agentjail_run_slots gauge\nagentjail_run_slots %u\n"
		"# HELP agentjail_workers_alive Live workers of the served tier (with a queue).\n"
		"# TYPE agentjail_workers_alive gauge\nagentjail_workers_alive %u\n",
		g->slots, g->workers);
	fprintf(f,
		"# HELP agentjail_runs_running Runs in a sandbox now.\n"
		"# TYPE agentjail_runs_running gauge\nagentjail_runs_running %u\n"
		"# HELP agentjail_queue_depth Runs waiting for a slot.\n"
		"# TYPE agentjail_queue_depth gauge\nagentjail_queue_depth %u\n"
		"# HELP agentjail_sessions_open Sessions open.\n"
		"# TYPE agentjail_sessions_open gauge\nagentjail_sessions_open %u\n"
		"# HELP agentjail_draining 1 while shutting down.\n"
		"# TYPE agentjail_draining gauge\nagentjail_draining %d\n",
		g->running, g->waiting, g->sessions_open, g->draining);
	fprintf(f,
		"# HELP agentjail_webhook_attempts_total Webhook POSTs made, by outcome: "
		"delivered (2xx), failed (tried again), given_up (the last attempt failed).\n"
		"# TYPE agentjail_webhook_attempts_total counter\n"
		"agentjail_webhook_attempts_total{outcome=\"delivered\"} %llu\n"
		"agentjail_webhook_attempts_total{outcome=\"failed\"} %llu\n"
		"agentjail_webhook_attempts_total{outcome=\"given_up\"} %llu\n"
		"# HELP agentjail_webhooks_dropped_total Webhook deliveries let go before their "
		"last attempt (past the key's share or the bound of all pending, or serve stopping).\n"
		"# TYPE agentjail_webhooks_dropped_total counter\n"
		"agentjail_webhooks_dropped_total %llu\n",
		g->hooks_delivered, g->hooks_failed, g->hooks_given_up, g->hooks_dropped);
	fprintf(f,
		"# HELP agentjail_tier_probes_total Probes of the tiers for GET /v1/tiers (when "
		"first asked, then at most one a minute, whatever the requests).\n"
		"# TYPE agentjail_tier_probes_total counter\nagentjail_tier_probes_total %llu\n",
		g->tier_probes);
}

char *metrics_render(struct metrics *m, const struct metrics_gauges *g)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	pthread_mutex_lock(&m->lock);
	fputs("# HELP agentjail_runs_total Runs finished, by tier and status.\n"
	      "# TYPE agentjail_runs_total counter\n",
	      f);
	for (int t = 0; t < AJ_TIER_COUNT; t++)
		for (int s = 0; s < AJ_STATUS_COUNT; s++)
			if (m->runs[t][s] || s == AJ_STATUS_OK)
				fprintf(f, "agentjail_runs_total{tier=\"%s\",status=\"%s\"} %llu\n",
					aj_tier_name((enum aj_tier)t),
					aj_status_name((enum aj_status)s),
					(unsigned long long)m->runs[t][s]);
	fputs("# HELP agentjail_run_seconds Time from admission to result.\n"
	      "# TYPE agentjail_run_seconds histogram\n",
	      f);
	uint64_t cum = 0;
	for (int i = 0; i < METRICS_BUCKETS; i++) {
		cum += m->buckets[i];
		fprintf(f, "agentjail_run_seconds_bucket{le=\"%g\"} %llu\n", bounds[i],
			(unsigned long long)cum);
	}
	fprintf(f, "agentjail_run_seconds_bucket{le=\"+Inf\"} %llu\n",
		(unsigned long long)m->latency_count);
	fprintf(f, "agentjail_run_seconds_sum %.6f\nagentjail_run_seconds_count %llu\n",
		m->latency_sum, (unsigned long long)m->latency_count);
	fputs("# HELP agentjail_http_responses_total HTTP responses, by code.\n"
	      "# TYPE agentjail_http_responses_total counter\n",
	      f);
	for (int i = 0; i < METRICS_CODES && m->codes[i]; i++)
		fprintf(f, "agentjail_http_responses_total{code=\"%d\"} %llu\n", m->codes[i],
			(unsigned long long)m->code_count[i]);
	fputs("# HELP agentjail_refused_total Requests refused before anything ran, by reason.\n"
	      "# TYPE agentjail_refused_total counter\n",
	      f);
	for (int i = 1; i < ADMIT_VERDICTS; i++)
		fprintf(f, "agentjail_refused_total{reason=\"%s\"} %llu\n", refusal_names[i],
			(unsigned long long)m->refused[i]);
	fprintf(f, "agentjail_refused_total{reason=\"too_large\"} %llu\n",
		(unsigned long long)m->too_large);
	fprintf(f,
		"# HELP agentjail_auth_failures_total Requests with a missing or wrong key.\n"
		"# TYPE agentjail_auth_failures_total counter\n"
		"agentjail_auth_failures_total %llu\n",
		(unsigned long long)m->auth_failures);
	fprintf(f,
		"# HELP agentjail_runs_lost_total Runs lost with their worker, by whether "
		"they may have started.\n"
		"# TYPE agentjail_runs_lost_total counter\n"
		"agentjail_runs_lost_total{may_have_started=\"true\"} %llu\n"
		"agentjail_runs_lost_total{may_have_started=\"false\"} %llu\n",
		(unsigned long long)m->lost[1], (unsigned long long)m->lost[0]);
	fprintf(f,
		"# HELP agentjail_egress_connections_total Connections the egress proxy "
		"decided on, by verdict.\n"
		"# TYPE agentjail_egress_connections_total counter\n"
		"agentjail_egress_connections_total{verdict=\"allowed\"} %llu\n"
		"agentjail_egress_connections_total{verdict=\"denied\"} %llu\n"
		"agentjail_egress_connections_total{verdict=\"failed\"} %llu\n",
		(unsigned long long)m->egress[1], (unsigned long long)m->egress[0],
		(unsigned long long)m->egress[2]);
	fputs("# HELP agentjail_egress_injections_total Requests the egress proxy put a secret "
	      "in, by the secret's name.\n"
	      "# TYPE agentjail_egress_injections_total counter\n",
	      f);
	for (int i = 0; i < METRICS_SECRETS && m->secret_names[i][0]; i++)
		fprintf(f, "agentjail_egress_injections_total{secret=\"%s\"} %llu\n",
			m->secret_names[i], (unsigned long long)m->injections[i]);
	if (m->injections_other)
		fprintf(f, "agentjail_egress_injections_total{secret=\"_other\"} %llu\n",
			(unsigned long long)m->injections_other);
	pthread_mutex_unlock(&m->lock);
	render_gauges(f, g);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
