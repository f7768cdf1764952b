/* The pieces of a connection conn.c and intercept.c share (see conn.h):
 * waits, writes, the decision and the upstream connect. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"

/* Waits for fd to be ready (events) or the proxy to stop: 1 ready, 0 timed
 * out or stopped, -1 error. */
int conn_wait(struct conn *c, int fd, short events, int ms)
{
	struct pollfd pf[2] = {{.fd = fd, .events = events},
			       {.fd = c->p->stop_fd, .events = POLLIN}};
	for (;;) {
		int r = poll(pf, 2, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || pf[1].revents)
			return r < 0 ? -1 : 0;
		return 1;
	}
}

/* What is left of the request's deadline, which runs from the accept
 * over the whole head, greeting or ClientHello (issue 35: a client sending
 * a byte a second kept a per-read timeout from ever firing): 0 once past. */
int conn_head_ms_left(struct conn *c)
{
	uint64_t end = c->ec->accepted_ns + (uint64_t)c->head_ms * 1000000u, now = egress_now_ns();
	return now >= end ? 0 : (int)((end - now) / 1000000u) + 1;
}

/* Reads more of the client's request into c->buf, before the request's
 * deadline: true if bytes came. */
bool conn_read_more(struct conn *c)
{
	if (c->have >= HTTP_HEAD_MAX)
		return false;
	for (;;) {
		ssize_t n = read(c->client, c->buf + c->have, HTTP_HEAD_MAX - c->have);
		if (n > 0) {
			c->have += (size_t)n;
			c->buf[c->have] = '\0';
			return true;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return false;
		int left = conn_head_ms_left(c);
		if (!left || conn_wait(c, c->client, POLLIN, left) != 1)
			return false;
	}
}

bool conn_write_all(struct conn *c, int fd, const void *data, size_t len)
{
	const char *d = data;
	while (len) {
		ssize_t n = send(fd, d, len, MSG_NOSIGNAL);
		if (n > 0) {
			d += n;
			len -= (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == EAGAIN) {
			if (conn_wait(c, fd, POLLOUT, WRITE_TIMEOUT_MS) != 1)
				return false;
		} else {
			return false;
		}
	}
	return true;
}

void conn_linger(struct conn *c)
{
	shutdown(c->client, SHUT_WR);
	unsigned ms = c->idle_ms && c->idle_ms < LINGER_MS ? c->idle_ms : LINGER_MS;
	uint64_t end = egress_now_ns() + (uint64_t)ms * 1000000u;
	char buf[16384];
	size_t dropped = 0;
	while (dropped < LINGER_BYTES) {
		uint64_t now = egress_now_ns();
		if (now >= end || conn_wait(c, c->client, POLLIN, (int)((end - now) / 1000000u) + 1) != 1)
			return;
		ssize_t r = recv(c->client, buf, sizeof buf, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (r <= 0)
			return; /* the client closed, or is gone */
		dropped += (size_t)r;
	}
}

void conn_deny(struct conn *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->e.reason, sizeof c->e.reason, fmt, ap);
	va_end(ap);
	c->e.allowed = false;
	c->e.failure[0] = '\0';
}

int conn_parse_literal(const char *host, int *family, uint8_t addr[16])
{
	if (inet_pton(AF_INET, host, addr) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, host, addr) == 1)
		*family = AF_INET6;
	else
		return -1;
	return 0;
}

static const uint8_t *sa_addr(const struct sockaddr_storage *sa, int *family)
{
	*family = sa->ss_family;
	return sa->ss_family == AF_INET
		       ? (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr
		       : (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
}

static void set_port(struct sockaddr_storage *sa, uint16_t port)
{
	if (sa->ss_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

/* The rules applied to c->e.host and c->e.port; fills c->addrs with the
 * addresses allowed. true if any, else false with the reason. Each step in
 * the order docs/egress.md promises: no lookup of an unlisted name, no
 * address that is not checked. */
bool conn_decide(struct conn *c)
{
	struct egress_rules *r = egress_rules_take(c->p);
	int family;
	uint8_t a[16];
	bool ok = false;
	c->addrs.n = 0;
	c->generation = r->generation;
	if (conn_parse_literal(c->e.host, &family, a) == 0) {
		inet_ntop(family, a, c->e.address, sizeof c->e.address);
		ok = egress_address_allowed(r, family, a, c->e.port, false, c->e.reason,
					    sizeof c->e.reason);
		if (ok) {
			struct sockaddr_storage *sa = &c->addrs.a[c->addrs.n++];
			memset(sa, 0, sizeof *sa);
			sa->ss_family = (sa_family_t)family;
			memcpy((uint8_t *)sa_addr(sa, &family), a, family == AF_INET ? 4 : 16);
		}
	} else if (egress_name_listed(r, c->e.host, c->e.port, c->e.reason, sizeof c->e.reason)) {
		char rule[sizeof c->e.reason];
		memcpy(rule, c->e.reason, sizeof rule);
		struct egress_addrs found;
		if (egress_resolve(c->e.host, c->p->stop_fd, &found, c->e.reason,
				   sizeof c->e.reason) == 0) {
			char first_refusal[sizeof c->e.reason] = "";
			for (unsigned i = 0; i < found.n; i++) {
				const uint8_t *fa = sa_addr(&found.a[i], &family);
				char why[sizeof c->e.reason];
				snprintf(why, sizeof why, "%s", rule);
				if (egress_address_allowed(r, family, fa, c->e.port, true, why,
							   sizeof why)) {
					if (!ok)
						memcpy(c->e.reason, why, sizeof why);
					ok = true;
					c->addrs.a[c->addrs.n++] = found.a[i];
				} else if (!first_refusal[0]) {
					snprintf(first_refusal, sizeof first_refusal, "%.50s resolves to %.120s",
						 c->e.host, why);
				}
			}
			if (!ok)
				memcpy(c->e.reason, first_refusal, sizeof first_refusal);
		} else {
			/* The rules allowed the name; the lookup failed (the
			 * reason says how): not a denial. */
			snprintf(c->e.failure, sizeof c->e.failure, "DNS");
		}
	}
	egress_rules_drop(c->p, r);
	c->e.allowed = ok || c->e.failure[0];
	return ok;
}

/* Issue 35: a keep can narrow the rules while this connection was between
 * its decision and its connect (a lookup, a slow upstream). Before any byte
 * goes up, the address connected to is decided again against the rules in
 * force now, if they changed: false (reason set, a denial) if they no
 * longer allow it. */
static bool still_allowed(struct conn *c, const struct sockaddr_storage *sa)
{
	struct egress_rules *r = egress_rules_take(c->p);
	bool ok = r->generation == c->generation;
	if (!ok) {
		int family, lf;
		uint8_t la[16];
		const uint8_t *a = sa_addr(sa, &family);
		char why[sizeof c->e.reason];
		if (conn_parse_literal(c->e.host, &lf, la) == 0)
			ok = egress_address_allowed(r, family, a, c->e.port, false, why, sizeof why);
		else
			ok = egress_name_listed(r, c->e.host, c->e.port, why, sizeof why) &&
			     egress_address_allowed(r, family, a, c->e.port, true, why, sizeof why);
		if (!ok)
			conn_deny(c, "the rules were narrowed while it connected: %.150s", why);
	}
	egress_rules_drop(c->p, r);
	return ok;
}

/* Connects to the first allowed address that answers: the one that was
 * checked, never a name again. 0, or -errno (reason set). */
int conn_connect_up(struct conn *c)
{
	int err = EHOSTUNREACH;
	for (unsigned i = 0; i < c->addrs.n; i++) {
		struct sockaddr_storage sa = c->addrs.a[i];
		set_port(&sa, c->e.port);
		int family;
		inet_ntop(sa.ss_family, sa_addr(&sa, &family), c->e.address, sizeof c->e.address);
		int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		egress_conn_set_upstream(c->ec, fd);
		socklen_t len = sa.ss_family == AF_INET ? sizeof(struct sockaddr_in)
							: sizeof(struct sockaddr_in6);
		int r = connect(fd, (struct sockaddr *)&sa, len);
		if (r < 0 && errno == EINPROGRESS) {
			int soerr = ETIMEDOUT;
			socklen_t sl = sizeof soerr;
			if (conn_wait(c, fd, POLLOUT, CONNECT_TIMEOUT_MS) == 1)
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
			r = soerr ? -1 : 0;
			errno = soerr;
		}
		if (r == 0 && !still_allowed(c, &sa)) {
			egress_conn_set_upstream(c->ec, -1);
			close(fd);
			return -EPERM;
		}
		if (r == 0) {
			c->up = fd;
			return 0;
		}
		err = errno;
		egress_conn_set_upstream(c->ec, -1);
		close(fd);
	}
	/* Nothing was reached: the rules allowed it, the destination did not
	 * answer. The log says failed, with the cause, whichever way the
	 * connection asked (a tunnel to 443 learns it only now). */
	const char *name = strerrorname_np(err);
	snprintf(c->e.failure, sizeof c->e.failure, "%s", name ? name : "connect");
	size_t l = strlen(c->e.reason);
	snprintf(c->e.reason + l, sizeof c->e.reason - l, "; connect: %s", strerror(err));
	return -err;
}

bool conn_same_name(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la && a[la - 1] == '.')
		la--;
	if (lb && b[lb - 1] == '.')
		lb--;
	return la == lb && strncasecmp(a, b, la) == 0;
}

