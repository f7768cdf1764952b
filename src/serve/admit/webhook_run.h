/* The service's side of the completion webhooks (webhook_run.c): the
 * delivery below (src/serve/webhook/) knows no service; this gives it the
 * deployer's allow-list, a key's name and secret, and a run's end. */
#ifndef AJ_SERVE_WEBHOOK_RUN_H
#define AJ_SERVE_WEBHOOK_RUN_H

#include "agentjail.h"
#include "../http/keys.h"
#include "../webhook/webhook.h"

struct serve_config;
struct service;

/* webhooks_start with cfg's --webhook-allow, each NAME=URL's NAME a key
 * of kr (else -EINVAL naming it). */
int webhooks_open(struct webhooks **out, const struct serve_config *cfg,
		  const struct keyring *kr, struct aj_error *err);
/* webhook_allowed with cfg's --webhook-allow and key's name and secret. */
int webhook_check(const struct serve_config *cfg, const struct key *key, const char *url,
		  struct aj_error *err);
/* A recorded run ended: its record (run_info_json, with the result) to
 * url, signed with key's secret. What a backend calls once it has
 * finished the record of a run that asked for a webhook. */
void webhook_run_done(struct service *svc, const struct key *key, const char *url,
		      const char *run_id);
#endif
