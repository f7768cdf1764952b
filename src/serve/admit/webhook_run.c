/* The service's side of webhooks: its --webhook-allow and keys given to
 * the delivery (webhook.c, which knows no service), and a recorded run's
 * end to its webhook: the bridge between the run store (runs.h) and the
 * delivery, which knows no run store. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "service.h"
#include "../../core/internal.h"
#include "../webhook/webhook.h"
#include "../webhook/webhook_url.h"
#include "webhook_run.h"

/* Each NAME=URL's NAME is a key of kr: a prefix bound to a name no key
 * has would allow nothing, silently (a typo the deployer would never
 * see). */
static int bound_keys_exist(const struct serve_config *cfg, const struct keyring *kr,
			    struct aj_error *err)
{
	for (unsigned i = 0; i < cfg->webhook_allow_count; i++) {
		char owner[KEY_NAME_MAX + 1];
		struct webhook_url a;
		if (webhook_allow_parse(cfg->webhook_allow[i], owner, &a, err))
			return -EINVAL;
		webhook_url_free(&a);
		bool found = !owner[0];
		for (size_t k = 0; !found && k < kr->count; k++)
			found = !strcmp(kr->keys[k].name, owner);
		if (!found)
			return error_set(err, -EINVAL,
					 "--webhook-allow: '%.200s' is bound to '%s', which no key "
					 "of this server is named (agentjail keys list)",
					 cfg->webhook_allow[i], owner);
	}
	return 0;
}

int webhooks_open(struct webhooks **out, const struct serve_config *cfg,
		  const struct keyring *kr, struct aj_error *err)
{
	if (bound_keys_exist(cfg, kr, err))
		return -EINVAL;
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
