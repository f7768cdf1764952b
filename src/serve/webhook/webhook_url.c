/* A webhook URL against the deployer's allow-list: parsed with libcurl's
 * own URL parser, the one that parses it again for the POST, so what is
 * checked is what is sent. */
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../core/internal.h"
#include "../http/keys.h"
#include "webhook_url.h"

void webhook_url_free(struct webhook_url *u)
{
	curl_free(u->scheme);
	curl_free(u->host);
	curl_free(u->port);
	curl_free(u->path);
	curl_free(u->full);
	*u = (struct webhook_url){0};
}

/* Whether part is in the URL (a part absent is an error code of its own). */
static bool has_part(CURLU *h, CURLUPart part)
{
	char *v = NULL;
	CURLUcode rc = curl_url_get(h, part, &v, 0);
	bool there = rc == CURLUE_OK && v && *v;
	curl_free(v);
	return there;
}

int webhook_url_parse(const char *url, bool prefix, struct webhook_url *u, struct aj_error *err)
{
	*u = (struct webhook_url){0};
	const char *what = prefix ? "--webhook-allow" : "webhook";
	if (strlen(url) > WEBHOOK_MAX_URL)
		return error_set(err, -EINVAL, "%s: longer than %d characters", what,
				 WEBHOOK_MAX_URL);
	CURLU *h = curl_url();
	if (!h)
		return error_set(err, -ENOMEM, "%s: out of memory", what);
	int rc = 0;
	CURLUcode uc = curl_url_set(h, CURLUPART_URL, url, 0);
	if (uc != CURLUE_OK) {
		rc = error_set(err, -EINVAL, "%s: '%.200s' is not a URL: %s", what, url,
			       curl_url_strerror(uc));
		goto out;
	}
	if (curl_url_get(h, CURLUPART_SCHEME, &u->scheme, 0) != CURLUE_OK ||
	    (strcasecmp(u->scheme, "http") && strcasecmp(u->scheme, "https"))) {
		rc = error_set(err, -EINVAL, "%s: '%.200s': only http:// and https:// URLs", what,
			       url);
		goto out;
	}
	/* userinfo: https://allowed.example@evil.example/ reads as the
	 * allowed host to a person and goes to the other one. */
	if (has_part(h, CURLUPART_USER) || has_part(h, CURLUPART_PASSWORD) ||
	    has_part(h, CURLUPART_OPTIONS)) {
		rc = error_set(err, -EINVAL, "%s: '%.200s': a user name or password in the URL "
					     "is not taken",
			       what, url);
		goto out;
	}
	/* A fragment is never sent: a URL that has one is not the one that
	 * would be called. */
	if (has_part(h, CURLUPART_FRAGMENT)) {
		rc = error_set(err, -EINVAL, "%s: '%.200s': a #fragment is not taken", what, url);
		goto out;
	}
	/* An IPv6 zone id (fe80::1%eth0) picks the interface the POST leaves
	 * by, and the host compared below carries no zone: a URL with one
	 * would pass as the prefix's host and go out where the deployer
	 * never allowed. */
	if (has_part(h, CURLUPART_ZONEID)) {
		rc = error_set(err, -EINVAL, "%s: '%.200s': an IPv6 zone id (%%25...) is not taken",
			       what, url);
		goto out;
	}
	if (prefix && has_part(h, CURLUPART_QUERY)) {
		rc = error_set(err, -EINVAL, "%s: '%.200s': a prefix ends at its path (no ?query)",
			       what, url);
		goto out;
	}
	if (curl_url_get(h, CURLUPART_HOST, &u->host, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PORT, &u->port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PATH, &u->path, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_URL, &u->full, 0) != CURLUE_OK) {
		rc = error_set(err, -EINVAL, "%s: '%.200s': no host", what, url);
		goto out;
	}
	/* The parser has already removed "." and ".." segments; an encoded
	 * dot, slash or backslash would be decoded by a receiver after our
	 * comparison and could climb out of the allowed path. */
	for (const char *p = u->path; *p; p++) {
		if (*p == '\\' ||
		    (p[0] == '%' && p[1] && (p[1] == '2' || p[1] == '5') && p[2] &&
		     (!strncasecmp(p, "%2e", 3) || !strncasecmp(p, "%2f", 3) ||
		      !strncasecmp(p, "%5c", 3)))) {
			rc = error_set(err, -EINVAL, "%s: '%.200s': an encoded '.', '/' or '\\' in "
						     "the path is not taken",
				       what, url);
			goto out;
		}
	}
out:
	curl_url_cleanup(h);
	if (rc)
		webhook_url_free(u);
	return rc;
}

/* Whether u falls under prefix a: the same scheme, host and port, and a
 * path that is a's or continues it past a '/' (a prefix /hooks takes
 * /hooks and /hooks/x, not /hooks2). */
static bool under(const struct webhook_url *u, const struct webhook_url *a)
{
	if (strcasecmp(u->scheme, a->scheme) || strcasecmp(u->host, a->host) ||
	    strcmp(u->port, a->port))
		return false;
	size_t n = strlen(a->path);
	if (strncmp(u->path, a->path, n))
		return false;
	return (n && a->path[n - 1] == '/') || u->path[n] == '\0' || u->path[n] == '/';
}

int webhook_allow_parse(const char *entry, char key[KEY_NAME_MAX + 1], struct webhook_url *a,
			struct aj_error *err)
{
	const char *url = entry, *eq = strchr(entry, '=');
	char name[KEY_NAME_MAX + 1] = "";
	/* NAME=URL: a URL itself starts with its scheme, never a name and
	 * '=' (a '=' later in a URL, in its path, is the URL's). */
	if (eq && strncasecmp(entry, "http://", 7) && strncasecmp(entry, "https://", 8)) {
		size_t n = (size_t)(eq - entry);
		struct aj_error kerr;
		snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1),
			 entry);
		if (n >= sizeof name || key_name_check(name, &kerr))
			return error_set(err, -EINVAL, "--webhook-allow: '%.200s': before '=' a "
						       "key's name, got %s",
					 entry, n >= sizeof name ? "a longer one" : kerr.message);
		url = eq + 1;
	}
	if (key)
		memcpy(key, name, sizeof name);
	return webhook_url_parse(url, true, a, err);
}

int webhook_allowed(const char *const *allow, unsigned count, const struct webhook_key *key,
		    const char *url, struct aj_error *err)
{
	if (!count)
		return error_set(err, -EINVAL, "webhook: this server takes no webhooks (its "
					       "deployer allowed none: --webhook-allow)");
	if (!key->secret[0])
		return error_set(err, -EINVAL,
				 "webhook: the key '%s' has no webhook secret to sign with (the "
				 "deployer makes one: agentjail keys webhook-secret %s --file FILE)",
				 key->name, key->name);
	struct webhook_url u;
	int rc = webhook_url_parse(url, false, &u, err);
	if (rc)
		return rc;
	bool ok = false;
	for (unsigned i = 0; !ok && i < count; i++) {
		struct webhook_url a;
		struct aj_error aerr;
		char owner[KEY_NAME_MAX + 1];
		/* Checked at start (webhooks_start); one that fails now allows
		 * nothing. */
		if (webhook_allow_parse(allow[i], owner, &a, &aerr))
			continue;
		bool in = under(&u, &a);
		/* A prefix bound to a key is that key's alone, and to every
		 * other key as if it were not there: one tenant's refusal tells
		 * nothing of what another was allowed. */
		ok = in && (!owner[0] || !strcmp(owner, key->name));
		webhook_url_free(&a);
	}
	webhook_url_free(&u);
	if (!ok)
		return error_set(err, -EINVAL,
				 "webhook: '%.200s' is not under any URL this server allows "
				 "(--webhook-allow)",
				 url);
	return 0;
}
