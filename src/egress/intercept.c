/* TLS interception of the hosts that carry a secret (see intercept.h).
 *
 * Each side of the connection is an `end`: a socket, and with TLS an SSL
 * object over two memory BIOs that this file feeds from the socket and
 * drains to it, so that every wait is conn_wait's poll (the proxy's stop
 * included) and a byte the program sent with its CONNECT is the TLS
 * engine's first. One request per connection: the upstream is asked to
 * close after it, and the program is told so. */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chunked.h"
#include "forward.h"
#include "intercept.h"
#include "mitm_ca.h"

/* Bytes moved per read: a TLS record's plaintext is at most 16 KiB. */
#define CHUNK (64u << 10)

/* The socket reads and writes of an end's TLS move this much at once: a
 * bulk download then costs a system call per four records (agentjail bench
 * --egress: 16 KiB moved it at 0.43 of direct TLS). */
#define END_IO (64u << 10)

struct end {
	int fd;
	SSL *ssl;      /* NULL: plain */
	BIO *in, *out; /* with ssl: what came from fd, what goes to it */
	char *io;      /* with ssl: END_IO bytes between the socket and a BIO */
};

/* The request under way: the secrets for its host, and the rules that
 * hold them for as long as the connection lives. */
struct job {
	struct conn *c;
	struct egress_rules *rules;
	const struct secret *apply[AJ_MAX_SECRETS];
	uint32_t n;
	struct end client, up;
	bool recorded; /* the entry is in the log */
};

bool intercept_wanted(struct egress_proxy *p, const char *host, uint16_t port)
{
	int family;
	uint8_t a[16];
	/* A proxy without secrets has no CA (proxy.c): every connection of a
	 * run without secrets stops here, without the rules' lock. */
	if (!p->ca)
		return false;
	if (conn_parse_literal(host, &family, a) == 0)
		return false; /* secrets are for names: an address has no SNI to check */
	struct egress_rules *r = egress_rules_take(p);
	bool want = false;
	for (uint32_t i = 0; i < r->secrets.n && !want; i++)
		want = secret_for_host(&r->secrets.s[i], host, port);
	egress_rules_drop(p, r);
	return want;
}

static void job_apply(struct job *j)
{
	struct conn *c = j->c;
	j->rules = egress_rules_take(c->p);
	for (uint32_t i = 0; i < j->rules->secrets.n; i++)
		if (secret_for_host(&j->rules->secrets.s[i], c->e.host, c->e.port))
			j->apply[j->n++] = &j->rules->secrets.s[i];
}

/* ---- an end's I/O ---- */

/* What TLS wrote, sent to the socket. */
static bool end_flush(struct conn *c, struct end *e)
{
	int n;
	while (e->ssl && BIO_ctrl_pending(e->out) > 0 &&
	       (n = BIO_read(e->out, e->io, (int)END_IO)) > 0)
		if (!conn_write_all(c, e->fd, e->io, (size_t)n))
			return false;
	return true;
}

/* More bytes from the socket for TLS: 1, 0 at EOF, -1 on a timeout, an
 * error or the proxy's stop. */
static int end_fill(struct conn *c, struct end *e, int ms)
{
	for (;;) {
		ssize_t n = read(e->fd, e->io, END_IO);
		if (n > 0)
			return BIO_write(e->in, e->io, (int)n) == n ? 1 : -1;
		if (n == 0)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return -1;
		if (conn_wait(c, e->fd, POLLIN, ms) != 1)
			return -1;
	}
}

/* Bytes of the stream: >0 read, 0 at its end (close_notify or EOF), -1 on
 * an error, a timeout or the stop. */
static ssize_t end_read(struct conn *c, struct end *e, char *buf, size_t n, int ms)
{
	if (!e->ssl) {
		for (;;) {
			ssize_t r = read(e->fd, buf, n);
			if (r >= 0)
				return r;
			if (errno != EAGAIN && errno != EINTR)
				return -1;
			if (conn_wait(c, e->fd, POLLIN, ms) != 1)
				return -1;
		}
	}
	for (;;) {
		int r = SSL_read(e->ssl, buf, (int)(n > INT32_MAX ? INT32_MAX : n));
		if (!end_flush(c, e))
			return -1;
		if (r > 0)
			return r;
		int err = SSL_get_error(e->ssl, r);
		if (err == SSL_ERROR_ZERO_RETURN)
			return 0;
		if (err != SSL_ERROR_WANT_READ)
			return -1;
		int f = end_fill(c, e, ms);
		if (f == 0)
			return 0; /* EOF without close_notify: the end, as curl reads it */
		if (f < 0)
			return -1;
	}
}

static bool end_write(struct conn *c, struct end *e, const void *data, size_t len)
{
	if (!e->ssl)
		return conn_write_all(c, e->fd, data, len);
	const char *d = data;
	while (len) {
		int chunk = len > END_IO ? (int)END_IO : (int)len;
		int r = SSL_write(e->ssl, d, chunk);
		if (!end_flush(c, e))
			return false;
		if (r <= 0)
			return false; /* memory BIOs never want a write */
		d += r;
		len -= (size_t)r;
	}
	return true;
}

/* The handshake, as the end's role says: 0, or -1 (why set from
 * OpenSSL's queue). */
static int end_handshake(struct conn *c, struct end *e, int ms, char *why, size_t n)
{
	for (;;) {
		ERR_clear_error();
		int r = SSL_do_handshake(e->ssl);
		bool flushed = end_flush(c, e);
		if (r == 1 && flushed)
			return 0;
		int err = SSL_get_error(e->ssl, r);
		if (r != 1 && err == SSL_ERROR_WANT_READ && flushed) {
			int f = end_fill(c, e, ms);
			if (f > 0)
				continue;
			snprintf(why, n, "%s", f == 0 ? "the peer closed the connection" : "it timed out");
			return -1;
		}
		unsigned long e1 = ERR_peek_last_error();
		char buf[160] = "no reason given";
		if (e1)
			ERR_error_string_n(e1, buf, sizeof buf);
		snprintf(why, n, "%s", buf);
		return -1;
	}
}

static bool end_tls(struct end *e, SSL_CTX *ctx, int fd, bool server)
{
	e->fd = fd;
	if (!(e->io = malloc(END_IO)) || !(e->ssl = SSL_new(ctx)) ||
	    !(e->in = BIO_new(BIO_s_mem())) || !(e->out = BIO_new(BIO_s_mem()))) {
		BIO_free(e->in);
		BIO_free(e->out);
		SSL_free(e->ssl);
		e->in = e->out = NULL;
		e->ssl = NULL;
		return false;
	}
	/* An empty memory BIO asks TLS to retry, never says EOF: the socket
	 * tells EOF (end_fill). */
	BIO_set_mem_eof_return(e->in, -1);
	SSL_set_bio(e->ssl, e->in, e->out);
	if (server)
		SSL_set_accept_state(e->ssl);
	else
		SSL_set_connect_state(e->ssl);
	return true;
}

static void end_free(struct end *e)
{
	if (e->ssl)
		SSL_free(e->ssl); /* and its BIOs */
	e->ssl = NULL;
	free(e->io);
	e->io = NULL;
}

/* ---- answers to the program ---- */

/* A refusal the program can read (status, and the reason as the body), and
 * in the log before it: a session call that ends on it finds the entry. */
static void intercept_refuse(struct job *j, struct end *to, const char *status)
{
	struct conn *c = j->c;
	egress_record(c->ec, &c->e);
	j->recorded = true;
	if (!to)
		return;
	char msg[600], head[200];
	int body = snprintf(msg, sizeof msg, "agentjail egress: %s\n", c->e.reason);
	int hn = snprintf(head, sizeof head,
			  "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
			  "Content-Length: %d\r\n\r\n",
			  status, body);
	if (end_write(c, to, head, (size_t)hn) && end_write(c, to, msg, (size_t)body) &&
	    to->ssl) {
		SSL_shutdown(to->ssl);
		end_flush(c, to);
	}
	/* The program may still be sending its request's body. */
	conn_linger(c);
}

/* ---- the request ---- */

/* Whether every secret for the host admits the request (its method and
 * path); else the reason is the refusal's. */
static bool request_admitted(struct job *j, const char *head, const struct http_head *h)
{
	char why[200];
	for (uint32_t i = 0; i < j->n; i++)
		if (!secret_request_allowed(j->apply[i], h->method, head + h->path_at, h->path_len,
					    why, sizeof why)) {
			conn_deny(j->c, "%s", why);
			return false;
		}
	return true;
}

/* The upstream's TLS, verified for the tunnel's name against the host's
 * store and the deployer's egress_ca. false: refused (reason set). */
static bool upstream_tls(struct job *j)
{
	struct conn *c = j->c;
	char why[200];
	if (!end_tls(&j->up, c->p->up_ctx, c->up, false) ||
	    !SSL_set_tlsext_host_name(j->up.ssl, c->e.host) || !SSL_set1_host(j->up.ssl, c->e.host)) {
		conn_deny(c, "cannot start TLS to %s", c->e.host);
		return false;
	}
	if (end_handshake(c, &j->up, CONNECT_TIMEOUT_MS, why, sizeof why)) {
		long v = SSL_get_verify_result(j->up.ssl);
		if (v != X509_V_OK)
			conn_deny(c, "%s's certificate failed verification (%s): no secret is sent to it",
				  c->e.host, X509_verify_cert_error_string(v));
		else
			conn_deny(c, "TLS to %s failed (%s): no secret is sent to it", c->e.host, why);
		return false;
	}
	return true;
}

/* Sends the request body the head announced: pending first (what came
 * with the head), then the rest from the program, and nothing past its
 * end. false if it could not. */
static bool send_body(struct job *j, const struct http_head *h, const char *pending,
		      size_t npending)
{
	struct conn *c = j->c;
	if (!h->has_body_length)
		return true;
	struct chunked ch = {0};
	uint64_t left = h->content_length;
	char *buf = malloc(CHUNK);
	bool ok = buf != NULL;
	const char *data = pending;
	size_t n = npending;
	while (ok) {
		size_t take = n;
		if (h->chunked) {
			take = chunked_scan(&ch, data, n);
			if (ch.st == CHUNK_BAD) {
				conn_deny(c, "the request's chunked body is malformed");
				ok = false;
				break;
			}
		} else if ((uint64_t)take > left) {
			take = (size_t)left;
		}
		if (take && !(egress_account(c->p, &c->ec->live, true, take) &&
			      end_write(c, &j->up, data, take))) {
			ok = false;
			break;
		}
		if (!h->chunked)
			left -= take;
		if (h->chunked ? ch.st == CHUNK_DONE : left == 0)
			break;
		ssize_t r = end_read(c, &j->client, buf, CHUNK, (int)c->idle_ms);
		if (r <= 0) {
			ok = false;
			break;
		}
		data = buf;
		n = (size_t)r;
	}
	free(buf);
	return ok;
}

/* The answer, upstream to program, every value of the host's secrets
 * masked: a tail that could be the start of a value waits for the next
 * read (so a value split across two is masked too); the rest goes at once. */
static void relay_answer(struct job *j)
{
	struct conn *c = j->c;
	size_t room = 0;
	for (uint32_t i = 0; i < j->n; i++)
		if (j->apply[i]->value_len > room)
			room = j->apply[i]->value_len;
	char *buf = malloc(CHUNK + room);
	if (!buf)
		return;
	size_t held = 0;
	for (;;) {
		ssize_t r = end_read(c, &j->up, buf + held, CHUNK, (int)c->idle_ms);
		if (r <= 0)
			break;
		if (!egress_account(c->p, &c->ec->live, false, (size_t)r))
			break;
		size_t have = held + (size_t)r;
		secret_mask(buf, have, j->apply, j->n);
		size_t send_now = have - secret_tail_hold(buf, have, j->apply, j->n);
		if (send_now && !end_write(c, &j->client, buf, send_now))
			break;
		memmove(buf, buf + send_now, have - send_now);
		held = have - send_now;
	}
	if (held) {
		secret_mask(buf, held, j->apply, j->n);
		end_write(c, &j->client, buf, held);
	}
	if (j->client.ssl) {
		SSL_shutdown(j->client.ssl);
		end_flush(c, &j->client);
	}
	shutdown(j->client.fd, SHUT_WR);
	free(buf);
}

/* The request (its head in origin form, head[0..len), parsed into h), on
 * to the upstream with the secrets put in, and its answer back. The
 * upstream is connected here; up_tls: speak TLS to it. */
static void forward_request(struct job *j, const char *head, size_t len, const struct http_head *h,
			    const char *pending, size_t npending, bool up_tls)
{
	struct conn *c = j->c;
	if (!request_admitted(j, head, h)) {
		intercept_refuse(j, &j->client, "403 Forbidden");
		return;
	}
	if (conn_connect_up(c)) {
		intercept_refuse(j, &j->client, c->e.allowed ? "502 Bad Gateway" : "403 Forbidden");
		return;
	}
	j->up.fd = c->up;
	if (up_tls && !upstream_tls(j)) {
		intercept_refuse(j, &j->client, "502 Bad Gateway");
		return;
	}
	/* The secrets as they are now: a narrowing since this connection's
	 * start refuses it (its rules are an older generation). */
	struct egress_rules *now = egress_rules_take(c->p);
	bool current = now->generation == j->rules->generation;
	egress_rules_drop(c->p, now);
	if (!current) {
		conn_deny(c, "the session's rules or secrets were narrowed while it connected");
		intercept_refuse(j, &j->client, "403 Forbidden");
		return;
	}
	bool used[AJ_MAX_SECRETS];
	size_t out_len;
	char *out = secret_rewrite_head(head, len, j->apply, j->n, used, &out_len);
	if (!out) {
		conn_deny(c, "out of memory");
		intercept_refuse(j, &j->client, "502 Bad Gateway");
		return;
	}
	/* Counted as the program's bytes: the secret's length is the
	 * deployer's, but a cap must still hold whatever it adds. */
	bool sent = egress_account(c->p, NULL, true, out_len) && end_write(c, &j->up, out, out_len);
	OPENSSL_cleanse(out, out_len);
	free(out);
	if (!sent)
		return;
	c->e.bytes_out += out_len;
	size_t at = 0;
	for (uint32_t i = 0; i < j->n; i++)
		if (used[i]) {
			egress_injected(c->p, j->apply[i]->name);
			at += (size_t)snprintf(c->e.secrets + at, sizeof c->e.secrets - at, "%s%s",
					       at ? "," : "", j->apply[i]->name);
			if (at >= sizeof c->e.secrets)
				at = sizeof c->e.secrets - 1;
		}
	if (h->expect_continue) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		if (!end_write(c, &j->client, cont, sizeof cont - 1))
			return;
	}
	egress_conn_relaying(c->ec, &c->e, true);
	if (send_body(j, h, pending, npending))
		relay_answer(j);
	egress_conn_relaying(c->ec, &c->e, false);
}

void intercept_tunnel(struct conn *c, size_t from)
{
	struct job j = {.c = c, .client = {.fd = c->client}, .up = {.fd = -1}};
	job_apply(&j);
	char *head = NULL;
	char why[200];
	SSL_CTX *ctx = mitm_ca_server_ctx(c->p->ca, c->e.host);
	if (!ctx || !end_tls(&j.client, ctx, c->client, true)) {
		conn_deny(c, "cannot mint a certificate for %s: no secret is sent to it", c->e.host);
		intercept_refuse(&j, NULL, "");
		goto out;
	}
	/* What came with the CONNECT (a ClientHello sent at once) is the
	 * TLS engine's first input. */
	if (c->have > from && BIO_write(j.client.in, c->buf + from, (int)(c->have - from)) <= 0) {
		conn_deny(c, "out of memory");
		intercept_refuse(&j, NULL, "");
		goto out;
	}
	int left = conn_head_ms_left(c);
	if (!left || end_handshake(c, &j.client, left, why, sizeof why)) {
		conn_deny(c,
			  "the program's TLS handshake with the proxy failed (%.120s): a program that "
			  "trusts only its own store, or pins a certificate, cannot have %s's secrets",
			  why, c->e.host);
		intercept_refuse(&j, NULL, "");
		goto out;
	}
	/* The ClientHello's name is the tunnel's host: the certificate the
	 * program accepted was minted for that one. */
	const char *sni = SSL_get_servername(j.client.ssl, TLSEXT_NAMETYPE_host_name);
	if (!sni || !conn_same_name(sni, c->e.host)) {
		conn_deny(c, "the TLS ClientHello names '%.100s', not %s", sni ? sni : "", c->e.host);
		intercept_refuse(&j, &j.client, "403 Forbidden");
		goto out;
	}
	/* One request head, whole before the request's deadline. */
	if (!(head = malloc(HTTP_HEAD_MAX + 1))) {
		conn_deny(c, "out of memory");
		intercept_refuse(&j, &j.client, "502 Bad Gateway");
		goto out;
	}
	size_t have = 0, used = 0;
	struct http_head h;
	for (;;) {
		enum http_head_result r = http_origin_parse(head, have, &used, &h, c->e.port, why,
							    sizeof why);
		if (r == HTTP_HEAD_DONE)
			break;
		if (r == HTTP_HEAD_INVALID || r == HTTP_HEAD_TOO_LARGE) {
			conn_deny(c, "%s", r == HTTP_HEAD_INVALID ? why : "request head too large");
			intercept_refuse(&j, &j.client, r == HTTP_HEAD_INVALID ? "400 Bad Request"
								 : "431 Request Header Fields Too Large");
			goto out;
		}
		left = conn_head_ms_left(c);
		ssize_t n = left ? end_read(c, &j.client, head + have, HTTP_HEAD_MAX - have, left) : -1;
		if (n <= 0)
			goto out; /* closed or timed out before a whole head: nothing was sent */
		have += (size_t)n;
		head[have] = '\0';
	}
	/* Host == SNI == the tunnel's name, and its port: the rules, the
	 * certificate and the secrets were all for that one host. */
	if (!conn_same_name(h.host, c->e.host) || h.port != c->e.port) {
		conn_deny(c, "the Host header names %.100s:%u, not the tunnel's %s:%u", h.host,
			  (unsigned)h.port, c->e.host, (unsigned)c->e.port);
		intercept_refuse(&j, &j.client, "403 Forbidden");
		goto out;
	}
	forward_request(&j, head, used, &h, head + used, have - used, true);
out:
	if (!j.recorded)
		egress_record(c->ec, &c->e);
	if (head)
		OPENSSL_cleanse(head, HTTP_HEAD_MAX + 1);
	free(head);
	end_free(&j.client);
	end_free(&j.up);
	SSL_CTX_free(ctx);
	egress_rules_drop(c->p, j.rules);
}

void intercept_plain(struct conn *c, const struct http_head *h, size_t used)
{
	struct job j = {.c = c, .client = {.fd = c->client}, .up = {.fd = -1}};
	job_apply(&j);
	char *out = NULL;
	/* Plain HTTP shows the value to every hop: each secret must say
	 * that is wanted. Else the request is refused, never sent bare. */
	for (uint32_t i = 0; i < j.n; i++)
		if (!j.apply[i]->plain_http) {
			conn_deny(c,
				  "secret %s is for %s but not over plain HTTP (its plain_http is "
				  "off): use https://",
				  j.apply[i]->name, c->e.host);
			intercept_refuse(&j, &j.client, "403 Forbidden");
			goto out;
		}
	/* The origin-form head forward.c makes, then parsed as one. */
	if (!(out = malloc(used + EGRESS_FORWARD_EXTRA + 1))) {
		conn_deny(c, "out of memory");
		intercept_refuse(&j, &j.client, "502 Bad Gateway");
		goto out;
	}
	size_t n = egress_forward_head(c->buf, used, h, out);
	out[n] = '\0';
	struct http_head oh;
	size_t oused;
	char why[200];
	if (http_origin_parse(out, n, &oused, &oh, c->e.port, why, sizeof why) != HTTP_HEAD_DONE) {
		conn_deny(c, "%s", why);
		intercept_refuse(&j, &j.client, "400 Bad Request");
		goto out;
	}
	forward_request(&j, out, oused, &oh, c->buf + used, c->have - used, false);
out:
	if (!j.recorded)
		egress_record(c->ec, &c->e);
	free(out);
	egress_rules_drop(c->p, j.rules);
}
