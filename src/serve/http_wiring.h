/* The HTTP server's config and handlers from a service (http_wiring.c):
 * what main.c gives http_start, so that http.c knows no service. */
#ifndef AJ_SERVE_HTTP_WIRING_H
#define AJ_SERVE_HTTP_WIRING_H

#include "http/http.h"

struct service;
struct serve_config;

/* cfg and h for svc (h->ctx = svc). */
void http_wiring(struct service *svc, struct http_config *cfg, struct http_handlers *h);
/* c's body budgets, unless given: 32 MiB a key and 64 MiB in all, or as
 * much as the largest body a route takes (else it could never be read);
 * given, they must hold it. 0, or -1 after saying what is wrong. */
int http_wiring_budgets(struct serve_config *c);

#endif
