/* The HTTP server's config and handlers from a service (http_wiring.c):
 * what main.c gives http_start, so that http.c knows no service. */
#ifndef AJ_SERVE_HTTP_WIRING_H
#define AJ_SERVE_HTTP_WIRING_H

#include "http.h"

struct service;

/* cfg and h for svc (h->ctx = svc). */
void http_wiring(struct service *svc, struct http_config *cfg, struct http_handlers *h);

#endif
