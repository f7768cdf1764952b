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

#include "conn.h"
#include "forward.h"
#include "intercept.h"
#include "sni.h"
#include "socks.h"

/* A tunnel to port 443: the ClientHello (in c->buf from `from`) must name
 * the host the tunnel was asked for, so that a listed name cannot carry TLS
 * to another (domain fronting through the allow-list). */
static bool sni_matches(struct conn *c, size_t from)
{
	char name[SNI_NAME_MAX + 1];
	int family;
	uint8_t a[16];
	bool literal = conn_parse_literal(c->e.host, &family, a) == 0;
	for (;;) {
		enum sni_result r = sni_parse((const unsigned char *)c->buf + from, c->have - from,
					      name);
		if (r == SNI_FOUND) {
			if (!literal && conn_same_name(name, c->e.host))
				return true;
			conn_deny(c, "the TLS ClientHello names '%.*s', not %s", 100, name, c->e.host);
			return false;
		}
		if (r == SNI_NONE) {
			if (literal) /* no name can go with an address */
				return true;
			conn_deny(c, "the TLS ClientHello names no server; a TLS tunnel to %s must",
			     c->e.host);
			return false;
		}
		if (r == SNI_INVALID) {
			conn_deny(c, "port %u carried no TLS ClientHello", c->e.port);
			return false;
		}
		if (!conn_read_more(c)) {
			conn_deny(c, "no whole TLS ClientHello came");
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
		if (!conn_read_more(c))
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
	return conn_write_all(c, c->up, c->buf + from, n);
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
	if (conn_write_all(c, c->client, head, (size_t)hn))
		conn_write_all(c, c->client, msg, (size_t)body);
}

/* A refusal is logged before the client hears it: a session call that
 * ends on the answer finds the entry in its own log. */
static void refuse_http(struct conn *c, const char *status)
{
	egress_record(c->ec, &c->e);
	answer_http(c, status);
	conn_linger(c);
}

/* The forward request as the origin server gets it (forward.c). */
static bool send_forward_head(struct conn *c, const struct http_head *h, size_t used)
{
	char *out = malloc(used + EGRESS_FORWARD_EXTRA);
	if (!out)
		return false;
	size_t n = egress_forward_head(c->buf, used, h, out);
	bool ok = egress_account(c->p, NULL, true, n) && conn_write_all(c, c->up, out, n);
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
		if (r == HTTP_HEAD_MORE && conn_read_more(c))
			continue;
		if (r == HTTP_HEAD_MORE)
			return; /* closed or timed out before a whole head: nothing to log */
		snprintf(c->e.host, sizeof c->e.host, "(unparsed)");
		conn_deny(c, "%s", r == HTTP_HEAD_TOO_LARGE ? "request head too large" : why);
		refuse_http(c, r == HTTP_HEAD_TOO_LARGE ? "431 Request Header Fields Too Large"
							: "400 Bad Request");
		return;
	}
	snprintf(c->e.host, sizeof c->e.host, "%s", h.host);
	c->e.port = h.port;
	c->e.via = h.connect ? "connect" : "http";
	if (!conn_decide(c)) {
		refuse_http(c, c->e.failure[0] ? "502 Bad Gateway" : "403 Forbidden");
		return;
	} else if (intercept_wanted(c->p, c->e.host, c->e.port)) {
		/* A host with a secret: the proxy speaks for it (intercept.c),
		 * whatever its port; no byte goes up before it checked all. */
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		if (!h.connect)
			intercept_plain(c, &h, used);
		else if (conn_write_all(c, c->client, ok, sizeof ok - 1))
			intercept_tunnel(c, used);
		else
			egress_record(c->ec, &c->e);
		return;
	} else if (h.connect && h.port == 443) {
		/* The ClientHello comes only after the 200: check it before any
		 * byte reaches the upstream (which is not connected yet). */
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		if (conn_write_all(c, c->client, ok, sizeof ok - 1) && sni_matches(c, used) &&
		    conn_connect_up(c) == 0 && forward_rest(c, used))
			relay(c);
	} else if (conn_connect_up(c)) {
		refuse_http(c, c->e.allowed ? "502 Bad Gateway" : "403 Forbidden");
		return;
	} else if (h.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		if (conn_write_all(c, c->client, ok, sizeof ok - 1) && tunnel_tls_checked(c, used) &&
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
	conn_write_all(c, c->client, r, sizeof r);
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
	       conn_read_more(c))
		;
	if (r != SOCKS_DONE)
		return;
	if (!no_auth) {
		conn_write_all(c, c->client, "\x05\xff", 2);
		return;
	}
	if (!conn_write_all(c, c->client, "\x05\x00", 2))
		return;
	memmove(c->buf, c->buf + used, c->have - used);
	c->have -= used;
	struct socks_request q;
	while ((r = socks_request_parse((const unsigned char *)c->buf, c->have, &used, &q)) ==
		       SOCKS_MORE &&
	       conn_read_more(c))
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
	if (!conn_decide(c)) {
		refuse_socks(c, c->e.failure[0] ? SOCKS_REP_HOST_UNREACHABLE : SOCKS_REP_NOT_ALLOWED);
		return;
	} else if (intercept_wanted(c->p, c->e.host, c->e.port)) {
		socks_reply(c, SOCKS_REP_OK); /* as for CONNECT (serve_http) */
		intercept_tunnel(c, used);
		return;
	} else if (q.port == 443) {
		/* As for CONNECT: the ClientHello is checked before the
		 * upstream is connected. */
		socks_reply(c, SOCKS_REP_OK);
		if (sni_matches(c, used) && conn_connect_up(c) == 0 && forward_rest(c, used))
			relay(c);
	} else if (conn_connect_up(c)) {
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
		if (conn_read_more(c)) {
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
