/* The service's side of webhooks: its --webhook-allow and keys given to
 * the delivery (webhook.c, which knows no service), and a recorded run's
 * end to its webhook: the bridge between the run store (runs.h) and the
 * delivery, which knows no run store. */
#include <stdio.h>

#include "service.h"
#include "../webhook/webhook.h"
#include "webhook_run.h"

int webhooks_open(struct webhooks **out, const struct serve_config *cfg, struct aj_error *err)
{
	return webhooks_start(out, cfg->webhook_allow, cfg->webhook_allow_count, err);
}

int webhook_check(const struct serve_config *cfg, const struct key *key, const char *url,
		  struct aj_error *err)
{
	const struct webhook_key k = {.name = key->name, .secret = key->webhook_secret};
	return webhook_allowed(cfg->webhook_allow, cfg->webhook_allow_count, &k, url, err);
}

void webhook_run_done(struct service *svc, const struct key *key, const char *url,
		      const char *run_id)
{
	struct run_store *st = &svc->runs;
	struct run_info info;
	if (st->ops->info(st, run_id, key->name, &info)) {
		fprintf(stderr, "agentjail serve: webhook for run %s: not sent: its record is "
				"gone\n",
			run_id);
		return;
	}
	json_t *body = run_info_json(&info);
	const struct webhook_key k = {.name = key->name, .secret = key->webhook_secret};
	if (body)
		webhook_send(svc->webhooks, url, &k, run_id, body);
	else
		fprintf(stderr, "agentjail serve: webhook for run %s: not sent: out of memory\n",
			run_id);
	json_decref(body);
	run_info_clear(&info);
}
