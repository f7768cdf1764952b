/* One attempt of a webhook: the signed POST, over a connection checked
 * where it is made (webhook_post.c). */
#ifndef AJ_SERVE_WEBHOOK_POST_H
#define AJ_SERVE_WEBHOOK_POST_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct webhook_post {
	const char *url;    /* as allowed */
	const char *host;   /* its host, as libcurl's URL parser gives it */
	const char *run_id; /* X-Agentjail-Run-Id */
	const char *secret; /* signs "<timestamp>.<body>" */
	const char *body;
	size_t len;
	/* Asked during the attempt: true ends it (a stop's deadline). */
	bool (*stopped)(void *arg);
	void *arg;
};

/* One POST: the HTTP status (2xx delivered), or -1 with why in why. The
 * connection goes only to an address that passed webhook_address_ok, and
 * the address it went to is checked again after (CURLINFO_PRIMARY_IP). */
long webhook_post(const struct webhook_post *p, char why[CURL_ERROR_SIZE]);

/* Whether host (as libcurl's URL parser gives it: 192.0.2.1, [2001:db8::1])
 * is an IP address literal rather than a name. */
bool webhook_host_literal(const char *host);

/* Whether a connection to sa may be made for a URL with host: a name's
 * address must be public (not loopback, private, link-local, cloud
 * metadata or special-purpose: src/core/addr_class.h's classes, the
 * egress proxy's); a literal host is reached as written (the deployer's
 * prefix named that address), and only it. false: why (n bytes) names the
 * address and its class. text (INET6_ADDRSTRLEN): the address. */
bool webhook_address_ok(const struct sockaddr *sa, socklen_t len, const char *host, char *text,
			char *why, size_t n);

#endif
