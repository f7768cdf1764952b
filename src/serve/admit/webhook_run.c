/* A recorded run's end, to its webhook: the bridge between the run store
 * (runs.h) and the delivery (webhook.c), which knows no run store. */
#include <stdio.h>

#include "service.h"
#include "../webhook/webhook.h"

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
	if (body)
		webhook_send(svc->webhooks, url, key->webhook_secret, run_id, body);
	else
		fprintf(stderr, "agentjail serve: webhook for run %s: not sent: out of memory\n",
			run_id);
	json_decref(body);
	run_info_clear(&info);
}
