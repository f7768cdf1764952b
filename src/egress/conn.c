/* One connection through the egress proxy (see proxy_internal.h): the
 * request (an HTTP head or SOCKS5), the decision, the upstream connection
 * to the address that was checked, and the relay under the caps.
 *
 * Every wait is a poll() that includes the proxy's stop fd, and every
 * socket is non-blocking: stopping the proxy ends this thread at once. */
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

#include "forward.h"
#include "http_head.h"
#include "proxy_internal.h"
#include "sni.h"
#include "socks.h"

/* How long an answer to the client may wait for room, and an upstream to
 * accept. The request's own deadline is the proxy's head_ms, from the
 * accept (EGRESS_HEAD_MS); a quiet tunnel ends after its idle_ms. */
#define WRITE_TIMEOUT_MS 30000
#define CONNECT_TIMEOUT_MS 10000
/* Each direction's buffer: 64 KiB, grown to 256 KiB for a bulk transfer
 * (a read that filled half of it) while the proxy has fewer than EGRESS_BIG_BUFFERS
 * grown: a 100 MiB download goes at 0.65-0.79 of direct with 256 KiB and
 * 0.43-0.61 with 64 KiB (agentjail bench --egress, 2026-12-02), and the
 * bound keeps 256 connections from holding 128 MiB. */
#define RELAY_BUF (64u << 10)
#define RELAY_BIG (256u << 10)

struct conn {
	struct egress_conn *ec;
	struct egress_proxy *p;
	int client, up;
	char buf[HTTP_HEAD_MAX + 1];   /* what the client sent before the relay */
	size_t have;
	struct egress_entry e;
	struct egress_addrs addrs;     /* the addresses the rules allowed */
	unsigned head_ms, idle_ms;     /* the proxy's, when this connection came */
	uint64_t generation;           /* of the rules decide() applied */
};

/* Waits for fd to be ready (events) or the proxy to stop: 1 ready, 0 timed
 * out or stopped, -1 error. */
static int conn_wait(struct conn *c, int fd, short events, int ms)
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
static int head_ms_left(struct conn *c)
{
	uint64_t end = c->ec->accepted_ns + (uint64_t)c->head_ms * 1000000u, now = egress_now_ns();
	return now >= end ? 0 : (int)((end - now) / 1000000u) + 1;
}

/* Reads more of the client's request into c->buf, before the request's
 * deadline: true if bytes came. */
static bool read_more(struct conn *c)
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
		int left = head_ms_left(c);
		if (!left || conn_wait(c, c->client, POLLIN, left) != 1)
			return false;
	}
}

static bool write_all(struct conn *c, int fd, const void *data, size_t len)
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

static void deny(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void deny(struct conn *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->e.reason, sizeof c->e.reason, fmt, ap);
	va_end(ap);
	c->e.allowed = false;
	c->e.failure[0] = '\0';
}

static int parse_literal(const char *host, int *family, uint8_t addr[16])
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
static bool decide(struct conn *c)
{
	struct egress_rules *r = egress_rules_take(c->p);
	int family;
	uint8_t a[16];
	bool ok = false;
	c->addrs.n = 0;
	c->generation = r->generation;
	if (parse_literal(c->e.host, &family, a) == 0) {
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
		if (parse_literal(c->e.host, &lf, la) == 0)
			ok = egress_address_allowed(r, family, a, c->e.port, false, why, sizeof why);
		else
			ok = egress_name_listed(r, c->e.host, c->e.port, why, sizeof why) &&
			     egress_address_allowed(r, family, a, c->e.port, true, why, sizeof why);
		if (!ok)
			deny(c, "the rules were narrowed while it connected: %.150s", why);
	}
	egress_rules_drop(c->p, r);
	return ok;
}

/* Connects to the first allowed address that answers: the one that was
 * checked, never a name again. 0, or -errno (reason set). */
static int connect_up(struct conn *c)
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

static bool same_name(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la && a[la - 1] == '.')
		la--;
	if (lb && b[lb - 1] == '.')
		lb--;
	return la == lb && strncasecmp(a, b, la) == 0;
}

/* A tunnel to port 443: the ClientHello (in c->buf from `from`) must name
 * the host the tunnel was asked for, so that a listed name cannot carry TLS
 * to another (domain fronting through the allow-list). */
static bool sni_matches(struct conn *c, size_t from)
{
	char name[SNI_NAME_MAX + 1];
	int family;
	uint8_t a[16];
	bool literal = parse_literal(c->e.host, &family, a) == 0;
	for (;;) {
		enum sni_result r = sni_parse((const unsigned char *)c->buf + from, c->have - from,
					      name);
		if (r == SNI_FOUND) {
			if (!literal && same_name(name, c->e.host))
				return true;
			deny(c, "the TLS ClientHello names '%.*s', not %s", 100, name, c->e.host);
			return false;
		}
		if (r == SNI_NONE) {
			if (literal) /* no name can go with an address */
				return true;
			deny(c, "the TLS ClientHello names no server; a TLS tunnel to %s must",
			     c->e.host);
			return false;
		}
		if (r == SNI_INVALID) {
			deny(c, "port %u carried no TLS ClientHello", c->e.port);
			return false;
		}
		if (!read_more(c)) {
			deny(c, "no whole TLS ClientHello came");
			return false;
		}
	}
}

/* A tunnel to any port but 443: TLS is checked as on 443 (issue 35: an
 * allowed CDN on 8443 fronts other sites too). The upstream is connected
 * already, as a server that speaks first (SMTP, SSH, a database) must be
 * heard, but gets no byte before this: if the client speaks first and its
 * first byte opens a TLS handshake record (22), the ClientHello must name
 * the tunnel's host. A server that speaks first makes it plain TCP (a later
 * STARTTLS is not looked into). false: refused (reason set) or ended. */
static bool tunnel_tls_checked(struct conn *c, size_t from)
{
	if (c->have == from) {
		struct pollfd pf[3] = {{.fd = c->client, .events = POLLIN},
				       {.fd = c->up, .events = POLLIN},
				       {.fd = c->p->stop_fd, .events = POLLIN}};
		int r;
		while ((r = poll(pf, 3, (int)c->idle_ms)) < 0 && errno == EINTR)
			;
		if (r <= 0 || pf[2].revents)
			return false;
		if (!pf[0].revents)
			return true; /* the server spoke first */
		if (!read_more(c))
			return true; /* the client ended: the relay says so to the server */
	}
	if ((unsigned char)c->buf[from] != 22)
		return true;
	return sni_matches(c, from);
}

/* Copies both ways until both sides are done, counting bytes against the
 * caps; ends both at a cap, an error or the proxy's stop. */
static void relay(struct conn *c)
{
	struct dir {
		int from, to;
		bool out, eof;
		char *buf;
		size_t cap, off, len;
	} d[2] = {{.from = c->client, .to = c->up, .out = true, .cap = RELAY_BUF},
		  {.from = c->up, .to = c->client, .out = false, .cap = RELAY_BUF}};
	d[0].buf = malloc(RELAY_BUF);
	d[1].buf = malloc(RELAY_BUF);
	if (!d[0].buf || !d[1].buf) {
		free(d[0].buf);
		free(d[1].buf);
		return;
	}
	/* From here its entry is live: a session call that ends meanwhile
	 * reports it with its bytes so far. */
	egress_conn_relaying(c->ec, &c->e, true);
	for (;;) {
		struct pollfd pf[5];
		int np = 0, idx[4];
		for (int i = 0; i < 2; i++) {
			if (d[i].len) {
				idx[np] = i;
				pf[np++] = (struct pollfd){.fd = d[i].to, .events = POLLOUT};
			} else if (!d[i].eof) {
				idx[np] = i;
				pf[np++] = (struct pollfd){.fd = d[i].from, .events = POLLIN};
			}
		}
		if (np == 0)
			break; /* both sides ended and everything was delivered */
		pf[np] = (struct pollfd){.fd = c->p->stop_fd, .events = POLLIN};
		/* A tunnel that carries nothing for idle_ms ends: a connection
		 * the sandbox forgot must not hold the host's thread, fds and
		 * buffers for the session's life (issue 35). */
		int r = poll(pf, (nfds_t)np + 1, (int)c->idle_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || pf[np].revents)
			break;
		bool fail = false;
		for (int k = 0; k < np && !fail; k++) {
			struct dir *x = &d[idx[k]];
			if (!pf[k].revents)
				continue;
			if (!x->len) {
				ssize_t n = read(x->from, x->buf, x->cap);
				if (n > 0) {
					if (!egress_account(c->p, &c->ec->live, x->out, (size_t)n)) {
						fail = true;
						break;
					}
					x->off = 0;
					x->len = (size_t)n;
					if ((size_t)n >= x->cap / 2 && x->cap == RELAY_BUF &&
					    egress_big_buffer(c->p, true)) {
						char *big = malloc(RELAY_BIG);
						if (big) {
							memcpy(big, x->buf, (size_t)n);
							free(x->buf);
							x->buf = big;
							x->cap = RELAY_BIG;
						} else {
							egress_big_buffer(c->p, false);
						}
					}
				} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
					x->eof = true;
					shutdown(x->to, SHUT_WR);
				}
			}
			/* What was just read is sent at once, most often whole,
			 * without a poll in between: half the polls per chunk
			 * (agentjail bench --egress). */
			if (x->len) {
				ssize_t n = send(x->to, x->buf + x->off, x->len, MSG_NOSIGNAL);
				if (n > 0) {
					x->off += (size_t)n;
					x->len -= (size_t)n;
					if (!x->len && x->eof)
						shutdown(x->to, SHUT_WR);
				} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
					fail = true;
				}
			}
		}
		if (fail)
			break;
	}
	egress_conn_relaying(c->ec, &c->e, false);
	for (int i = 0; i < 2; i++) {
		if (d[i].cap == RELAY_BIG)
			egress_big_buffer(c->p, false);
		free(d[i].buf);
	}
}

/* Sends what the client sent past its request (the start of a tunnel, a
 * request body) on to the upstream, counted as bytes out. */
static bool forward_rest(struct conn *c, size_t from)
{
	size_t n = c->have - from;
	if (!n)
		return true;
	if (!egress_account(c->p, NULL, true, n))
		return false;
	c->e.bytes_out += n;
	return write_all(c, c->up, c->buf + from, n);
}

/* ---- HTTP: CONNECT and the forward proxy ---- */

static void answer_http(struct conn *c, const char *status)
{
	char msg[600];
	int body = snprintf(msg, sizeof msg, "agentjail egress: %s\n", c->e.reason);
	char head[200];
	int hn = snprintf(head, sizeof head,
			  "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
			  "Content-Length: %d\r\n\r\n",
			  status, body);
	if (write_all(c, c->client, head, (size_t)hn))
		write_all(c, c->client, msg, (size_t)body);
}

/* A refusal is logged before the client hears it: a session call that
 * ends on the answer finds the entry in its own log. */
static void refuse_http(struct conn *c, const char *status)
{
	egress_record(c->ec, &c->e);
	answer_http(c, status);
}

/* The forward request as the origin server gets it (forward.c). */
static bool send_forward_head(struct conn *c, const struct http_head *h, size_t used)
{
	char *out = malloc(used + EGRESS_FORWARD_EXTRA);
	if (!out)
		return false;
	size_t n = egress_forward_head(c->buf, used, h, out);
	bool ok = egress_account(c->p, NULL, true, n) && write_all(c, c->up, out, n);
	if (ok)
		c->e.bytes_out += n;
	free(out);
	return ok;
}

static void serve_http(struct conn *c)
{
	struct http_head h;
	size_t used;
	char why[200];
	for (;;) {
		enum http_head_result r = http_head_parse(c->buf, c->have, &used, &h, why, sizeof why);
		if (r == HTTP_HEAD_DONE)
			break;
		if (r == HTTP_HEAD_MORE && read_more(c))
			continue;
		if (r == HTTP_HEAD_MORE)
			return; /* closed or timed out before a whole head: nothing to log */
		snprintf(c->e.host, sizeof c->e.host, "(unparsed)");
		deny(c, "%s", r == HTTP_HEAD_TOO_LARGE ? "request head too large" : why);
		refuse_http(c, r == HTTP_HEAD_TOO_LARGE ? "431 Request Header Fields Too Large"
							: "400 Bad Request");
		return;
	}
	snprintf(c->e.host, sizeof c->e.host, "%s", h.host);
	c->e.port = h.port;
	c->e.via = h.connect ? "connect" : "http";
	if (!decide(c)) {
		refuse_http(c, c->e.failure[0] ? "502 Bad Gateway" : "403 Forbidden");
		return;
	} else if (h.connect && h.port == 443) {
		/* The ClientHello comes only after the 200: check it before any
		 * byte reaches the upstream (which is not connected yet). */
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		if (write_all(c, c->client, ok, sizeof ok - 1) && sni_matches(c, used) &&
		    connect_up(c) == 0 && forward_rest(c, used))
			relay(c);
	} else if (connect_up(c)) {
		refuse_http(c, c->e.allowed ? "502 Bad Gateway" : "403 Forbidden");
		return;
	} else if (h.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		if (write_all(c, c->client, ok, sizeof ok - 1) && tunnel_tls_checked(c, used) &&
		    forward_rest(c, used))
			relay(c);
	} else if (send_forward_head(c, &h, used) && forward_rest(c, used)) {
		relay(c);
	}
	egress_record(c->ec, &c->e);
}

/* ---- SOCKS5 ---- */

static void socks_reply(struct conn *c, uint8_t code)
{
	const uint8_t r[10] = {5, code, 0, 1, 0, 0, 0, 0, 0, 0};
	write_all(c, c->client, r, sizeof r);
}

static void refuse_socks(struct conn *c, uint8_t code)
{
	egress_record(c->ec, &c->e); /* before the answer, as refuse_http */
	socks_reply(c, code);
}

static void serve_socks(struct conn *c)
{
	size_t used = 0;
	bool no_auth = false;
	enum socks_result r;
	while ((r = socks_greeting_parse((const unsigned char *)c->buf, c->have, &used, &no_auth)) ==
		       SOCKS_MORE &&
	       read_more(c))
		;
	if (r != SOCKS_DONE)
		return;
	if (!no_auth) {
		write_all(c, c->client, "\x05\xff", 2);
		return;
	}
	if (!write_all(c, c->client, "\x05\x00", 2))
		return;
	memmove(c->buf, c->buf + used, c->have - used);
	c->have -= used;
	struct socks_request q;
	while ((r = socks_request_parse((const unsigned char *)c->buf, c->have, &used, &q)) ==
		       SOCKS_MORE &&
	       read_more(c))
		;
	if (r == SOCKS_UNSUPPORTED)
		socks_reply(c, q.refusal);
	if (r != SOCKS_DONE)
		return;
	c->e.via = "socks";
	c->e.port = q.port;
	if (q.by_name)
		snprintf(c->e.host, sizeof c->e.host, "%s", q.host);
	else
		inet_ntop(q.family, q.addr, c->e.host, sizeof c->e.host);
	if (!decide(c)) {
		refuse_socks(c, c->e.failure[0] ? SOCKS_REP_HOST_UNREACHABLE : SOCKS_REP_NOT_ALLOWED);
		return;
	} else if (q.port == 443) {
		/* As for CONNECT: the ClientHello is checked before the
		 * upstream is connected. */
		socks_reply(c, SOCKS_REP_OK);
		if (sni_matches(c, used) && connect_up(c) == 0 && forward_rest(c, used))
			relay(c);
	} else if (connect_up(c)) {
		refuse_socks(c, c->e.allowed ? SOCKS_REP_CONNECTION_REFUSED : SOCKS_REP_NOT_ALLOWED);
		return;
	} else {
		socks_reply(c, SOCKS_REP_OK);
		if (tunnel_tls_checked(c, used) && forward_rest(c, used))
			relay(c);
	}
	egress_record(c->ec, &c->e);
}

/* ---- the thread ---- */

void *egress_conn_main(void *arg)
{
	struct egress_conn *ec = arg;
	struct egress_proxy *p = ec->p;
	struct conn *c = calloc(1, sizeof *c);
	if (c) {
		c->ec = ec;
		c->p = p;
		c->client = ec->client;
		c->up = -1;
		c->e.via = "http";
		pthread_mutex_lock(&p->lock);
		c->head_ms = p->head_ms;
		c->idle_ms = p->idle_ms;
		pthread_mutex_unlock(&p->lock);
		if (read_more(c)) {
			if ((unsigned char)c->buf[0] == 5)
				serve_socks(c);
			else
				serve_http(c);
		}
	}
	pthread_mutex_lock(&p->lock);
	for (struct egress_conn **q = &p->conns; *q; q = &(*q)->next)
		if (*q == ec) {
			*q = ec->next;
			break;
		}
	close(ec->client);
	if (ec->upstream >= 0)
		close(ec->upstream);
	if (--p->live == 0)
		pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->lock);
	free(c);
	free(ec);
	return NULL;
}
