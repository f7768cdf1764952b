/* A webhook URL's parts, as libcurl's URL parser reads them (webhook_url.c):
 * shared by the allow-list check and the delivery, which sends the URL in
 * the form that was checked. */
#ifndef AJ_SERVE_WEBHOOK_URL_H
#define AJ_SERVE_WEBHOOK_URL_H

#include <stdbool.h>

#include "../http/keys.h"
#include "webhook.h"

struct webhook_url {
	char *scheme, *host, *port, *path; /* port: the scheme's default if none */
	char *full;                        /* the URL as parsed (dot segments gone) */
};

/* url (prefix: an --webhook-allow entry, which may not hold a query) into
 * u: 0, or -EINVAL with err naming what is wrong. webhook_url_free after. */
int webhook_url_parse(const char *url, bool prefix, struct webhook_url *u, struct aj_error *err);
void webhook_url_free(struct webhook_url *u);
/* An --webhook-allow entry, URL or NAME=URL, into its prefix a and the
 * key it is bound to (key, if not NULL: its name, "" for any key): 0, or
 * -EINVAL with err naming what is wrong. webhook_url_free(a) after. */
int webhook_allow_parse(const char *entry, char key[KEY_NAME_MAX + 1], struct webhook_url *a,
			struct aj_error *err);

#endif
