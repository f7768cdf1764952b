/* One webhook attempt (webhook_post.h): the body signed with the time of
 * the attempt, POSTed with libcurl over a connection whose address is
 * classified in the moment it is opened. libcurl resolves the name once
 * for the attempt (a new handle each attempt, so no cached answer of an
 * earlier one); every address it then tries goes through open_checked,
 * so the address connected to is the one classified, whatever the name's
 * DNS answers next. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../core/addr_class.h"
#include "webhook.h"
#include "webhook_post.h"

/* An address literal's bytes (brackets of [v6] dropped): its family, or 0
 * for a name. */
static int literal_bytes(const char *host, uint8_t out[16])
{
	char h[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(host);
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof h) {
		memcpy(h, host + 1, n - 2);
		h[n - 2] = '\0';
		return inet_pton(AF_INET6, h, out) == 1 ? AF_INET6 : 0;
	}
	return inet_pton(AF_INET, host, out) == 1 ? AF_INET : 0;
}

bool webhook_host_literal(const char *host)
{
	uint8_t b[16];
	return literal_bytes(host, b) != 0;
}

bool webhook_address_ok(const struct sockaddr *sa, socklen_t len, const char *host, char *text,
			char *why, size_t n)
{
	struct addr_info ai;
	int family = sa->sa_family;
	snprintf(text, INET6_ADDRSTRLEN, "?");
	if (addr_classify_sockaddr(sa, len, &ai)) {
		snprintf(why, n, "not an IP address (family %d)", family);
		return false;
	}
	const uint8_t *a = family == AF_INET
				   ? (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr
				   : (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
	inet_ntop(family, a, text, INET6_ADDRSTRLEN);
	uint8_t lit[16];
	int lf = literal_bytes(host, lit);
	if (lf) {
		/* The prefix named this address itself: the deployer's word,
		 * whatever its class. Anything else is not that address. */
		if (lf == family && !memcmp(lit, a, family == AF_INET ? 4 : 16))
			return true;
		snprintf(why, n, "connecting to %s, not the address %s the URL names", text, host);
		return false;
	}
	/* The egress proxy's classes (addr_class.h): an IPv4 address inside
	 * IPv6 (::ffff:169.254.169.254, NAT64, 6to4) is the IPv4 one. */
	if (ai.cls == ADDR_PUBLIC)
		return true;
	/* A name the receiver's DNS can point anywhere: into serve's own
	 * host or network (DNS rebinding) it may not lead. */
	snprintf(why, n, "%s resolves to %s, a %s address: a name reaches public addresses only "
			 "(allow the address itself as a literal prefix to reach it)",
		 host, text, addr_class_name(ai.cls));
	return false;
}

/* What open_checked saw: the address it let the connection go to, or why
 * it refused one. */
struct opened {
	const char *host;
	char addr[INET6_ADDRSTRLEN];
	char refused[CURL_ERROR_SIZE - 16]; /* room for "not sent: " */
};

/* libcurl's socket for each address it tries: made only for an address
 * that passes webhook_address_ok. */
static curl_socket_t open_checked(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct opened *o = arg;
	char text[INET6_ADDRSTRLEN];
	if (purpose != CURLSOCKTYPE_IPCXN) {
		snprintf(o->refused, sizeof o->refused, "an unexpected kind of socket");
		return CURL_SOCKET_BAD;
	}
	if (!webhook_address_ok(&a->addr, a->addrlen, o->host, text, o->refused,
				sizeof o->refused))
		return CURL_SOCKET_BAD;
	int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	if (fd >= 0)
		snprintf(o->addr, sizeof o->addr, "%s", text);
	return fd;
}

static size_t drop_answer(char *p, size_t size, size_t n, void *arg)
{
	(void)p, (void)arg;
	return size * n;
}

static int stop_check(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t e)
{
	(void)a, (void)b, (void)c, (void)e;
	const struct webhook_post *p = arg;
	return p->stopped && p->stopped(p->arg);
}

/* "sha256=" and the hex HMAC-SHA256 of "<ts>.<body>" with secret. */
static int sign(const struct webhook_post *p, const char *ts, char out[7 + 64 + 1])
{
	size_t tl = strlen(ts);
	unsigned char *msg = malloc(tl + 1 + p->len);
	if (!msg)
		return -ENOMEM;
	memcpy(msg, ts, tl);
	msg[tl] = '.';
	memcpy(msg + tl + 1, p->body, p->len);
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	unsigned char *ok = HMAC(EVP_sha256(), p->secret, (int)strlen(p->secret), msg,
				 tl + 1 + p->len, mac, &n);
	free(msg);
	if (!ok || n != 32)
		return -EIO;
	memcpy(out, "sha256=", 7);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", mac[i]);
	return 0;
}

/* The request's headers, signed now; NULL out of memory or unsigned. */
static struct curl_slist *signed_headers(const struct webhook_post *p)
{
	char ts[32], sig[7 + 64 + 1], h_ts[64], h_sig[128], h_id[128];
	/* Signed with the time of this attempt: a receiver that refuses old
	 * timestamps (replays) still takes a late retry. */
	snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
	if (sign(p, ts, sig))
		return NULL;
	snprintf(h_ts, sizeof h_ts, "X-Agentjail-Timestamp: %s", ts);
	snprintf(h_sig, sizeof h_sig, "X-Agentjail-Signature: %s", sig);
	snprintf(h_id, sizeof h_id, "X-Agentjail-Run-Id: %s", p->run_id);
	const char *lines[] = {"Content-Type: application/json", h_id, h_ts, h_sig,
			       /* no 100-continue round trip before the body */
			       "Expect:"};
	struct curl_slist *hs = NULL, *t;
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		if (!(t = curl_slist_append(hs, lines[i]))) {
			curl_slist_free_all(hs);
			return NULL;
		}
		hs = t;
	}
	return hs;
}

static void set_options(CURL *c, const struct webhook_post *p, struct curl_slist *hs,
			struct opened *o, char *why)
{
	curl_easy_setopt(c, CURLOPT_URL, p->url);
	/* Only what the allow-list speaks of, and no redirect: a Location
	 * could point anywhere, past the allow-list. */
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	/* No proxy from the environment (http_proxy...): the connection's
	 * address must be the receiver's, the one checked. */
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_checked);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, o);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, p->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)p->len);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "agentjail-webhook");
	/* A receiver that hangs holds a delivery thread no longer than this;
	 * one that does not take the connection, no longer than the first. */
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)WEBHOOK_CONNECT_SEC);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)WEBHOOK_TIMEOUT_SEC);
	/* Threads: libcurl must not use signals (SIGALRM) for its timeouts. */
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drop_answer);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, stop_check);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, p);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, why);
}

long webhook_post(const struct webhook_post *p, char why[CURL_ERROR_SIZE])
{
	why[0] = '\0';
	struct opened o = {.host = p->host};
	CURL *c = curl_easy_init();
	struct curl_slist *hs = signed_headers(p);
	long status = -1;
	if (!c || !hs) {
		snprintf(why, CURL_ERROR_SIZE, "out of memory, or the body cannot be signed");
		goto out;
	}
	set_options(c, p, hs, &o, why);
	CURLcode rc = curl_easy_perform(c);
	char *primary = NULL;
	curl_easy_getinfo(c, CURLINFO_PRIMARY_IP, &primary);
	if (o.refused[0] && !o.addr[0]) {
		/* Every address refused: say why, not libcurl's "cannot
		 * connect". */
		snprintf(why, CURL_ERROR_SIZE, "not sent: %s", o.refused);
	} else if (rc == CURLE_OK && (!primary || strcmp(primary, o.addr))) {
		/* The connection went where open_checked never saw (a reused
		 * one, a libcurl that bypassed the callback): not trusted. */
		snprintf(why, CURL_ERROR_SIZE, "connected to %s, not the address checked (%s)",
			 primary ? primary : "?", o.addr[0] ? o.addr : "none");
	} else if (rc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	} else if (!why[0]) {
		snprintf(why, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
	}
out:
	curl_slist_free_all(hs);
	curl_easy_cleanup(c);
	return status;
}
