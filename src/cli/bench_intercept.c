/* agentjail bench --egress, the interception rows (issue 39, docs/secrets.md):
 * what the proxy costs when it carries a secret, driven from the host. An
 * HTTPS origin on 127.0.0.1 (its certificate minted by a CA made here, the
 * proxies told to trust it as a deployer's egress_ca would), and two
 * proxies in front of it with the same rules: one without secrets (today's
 * tunnel, TLS end to end) and one with a secret for the origin's name
 * (TLS ended at the proxy, the upstream verified, a header put in). Then,
 * interleaved so that drift lands on all alike:
 *
 *   latency     a small HTTPS GET, a new connection each: through the
 *               tunnel and intercepted, p50 and the added p50;
 *   throughput  a 100 MiB download: direct TLS to the origin, and
 *               intercepted: the median MiB/s of each and their ratio;
 *   memory      32 connections held mid-download: the host's resident
 *               memory per connection, the origin's own share (measured
 *               with direct connections) taken off.
 *
 * Figures only, never a verdict (issue 39's goals: <= 2 ms added at p50,
 * >= 0.7x the direct download). */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "../core/thread.h"
#include "../egress/mitm_ca.h"
#include "../egress/proxy.h"
#include "bench_intercept.h"
#include "bench_net.h"
#include "measure.h"

#define BIG (100u << 20)
#define HELD 32

struct tls_origin {
	int lfd;
	uint16_t port;
	SSL_CTX *ctx;
	pthread_t thread;
	bool started;
};

struct origin_conn {
	SSL_CTX *ctx;
	int fd;
};

/* One request: "GET /big" gets BIG bytes, any other 2. */
static void *origin_conn_main(void *arg)
{
	struct origin_conn *oc = arg;
	SSL *ssl = SSL_new(oc->ctx);
	static const char zeros[1 << 16];
	char head[8192];
	size_t have = 0;
	if (ssl && SSL_set_fd(ssl, oc->fd) == 1 && SSL_accept(ssl) == 1) {
		int n;
		while (have < sizeof head - 1 &&
		       (n = SSL_read(ssl, head + have, (int)(sizeof head - 1 - have))) > 0) {
			have += (size_t)n;
			head[have] = '\0';
			if (strstr(head, "\r\n\r\n"))
				break;
		}
		size_t len = strncmp(head, "GET /big ", 9) ? 2 : BIG;
		char out[128];
		int hn = snprintf(out, sizeof out,
				  "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
				  len);
		bool ok = SSL_write(ssl, out, hn) == hn;
		for (size_t sent = 0; ok && sent < len;) {
			size_t k = len - sent < sizeof zeros ? len - sent : sizeof zeros;
			ok = SSL_write(ssl, len == 2 ? "ok" : zeros, (int)k) == (int)k;
			sent += k;
		}
		if (ok)
			SSL_shutdown(ssl);
	}
	SSL_free(ssl);
	close(oc->fd);
	free(oc);
	return NULL;
}

static void *tls_origin_main(void *arg)
{
	struct tls_origin *o = arg;
	int c;
	while ((c = bench_accept(o->lfd)) >= 0) {
		struct origin_conn *oc = malloc(sizeof *oc);
		if (!oc || (oc->ctx = o->ctx, oc->fd = c, 0) ||
		    thread_start_detached(origin_conn_main, oc, 256 << 10)) {
			free(oc);
			close(c);
		}
	}
	return NULL;
}

/* A connection to the origin, through the proxy on via (CONNECT, then
 * TLS) or directly (via 0), with its GET of path sent: the SSL, or NULL. */
static SSL *open_get(SSL_CTX *client, uint16_t port, uint16_t via, const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	bench_bounded(fd);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(via ? via : port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char buf[512];
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa))
		goto fail;
	if (via) {
		int n = snprintf(buf, sizeof buf,
				 "CONNECT localhost:%u HTTP/1.1\r\nHost: localhost:%u\r\n\r\n", port,
				 port);
		size_t have = 0;
		if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
			goto fail;
		while (have < sizeof buf - 1 && !memmem(buf, have, "\r\n\r\n", 4)) {
			ssize_t r = read(fd, buf + have, 1); /* the 200's head and no byte more */
			if (r <= 0)
				goto fail;
			have += (size_t)r;
		}
		if (strncmp(buf, "HTTP/1.1 200", 12))
			goto fail;
	}
	SSL *ssl = SSL_new(client);
	if (!ssl)
		goto fail;
	SSL_set_tlsext_host_name(ssl, "localhost");
	SSL_set1_host(ssl, "localhost");
	int n = snprintf(buf, sizeof buf, "GET %s HTTP/1.1\r\nHost: localhost:%u\r\n\r\n", path,
			 port);
	if (SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1 || SSL_write(ssl, buf, n) != n) {
		SSL_free(ssl);
		goto fail;
	}
	return ssl;
fail:
	close(fd);
	return NULL;
}

static void close_get(SSL *ssl)
{
	int fd = SSL_get_fd(ssl);
	SSL_free(ssl);
	close(fd);
}

/* A whole GET: its milliseconds until the last byte, or -1; *bytes, how
 * many came, head included. */
static double tls_get_ms(SSL_CTX *client, uint16_t port, uint16_t via, const char *path,
			 size_t *bytes)
{
	static char buf[1 << 16];
	double start = measure_now_ms();
	SSL *ssl = open_get(client, port, via, path);
	if (!ssl)
		return -1;
	size_t total = 0;
	int r;
	while ((r = SSL_read(ssl, buf, sizeof buf)) > 0)
		total += (size_t)r;
	close_get(ssl);
	*bytes = total;
	return measure_now_ms() - start;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* The host's resident memory HELD connections add while each is in the
 * middle of a download it does not read, in KiB per connection. */
static double held_kb(SSL_CTX *client, uint16_t port, uint16_t via)
{
	SSL *held[HELD] = {0};
	char b[4096];
	long before = rss_kb();
	int n = 0;
	for (int i = 0; i < HELD; i++)
		if ((held[i] = open_get(client, port, via, "/big")) &&
		    SSL_read(held[i], b, sizeof b) > 0)
			n++;
	usleep(300 * 1000); /* the buffers fill up to what the sockets hold */
	long after = rss_kb();
	for (int i = 0; i < HELD; i++)
		if (held[i])
			close_get(held[i]);
	return n ? (double)(after - before) / n : -1;
}

struct run {
	double *v;
	int n, failed;
};

static void sample(struct run *r, double ms, size_t bytes, size_t want)
{
	if (ms < 0 || bytes < want)
		r->failed++;
	else
		r->v[r->n++] = ms;
}

static double run_median(struct run *r)
{
	if (!r->n)
		return 0;
	measure_sort(r->v, (size_t)r->n);
	return measure_percentile(r->v, (size_t)r->n, 50);
}

static int proxy_for(const struct aj_config *cfg, struct mitm_ca *ca, struct egress_proxy **p,
		     uint16_t *via)
{
	struct aj_error err = {0};
	int lfd = -1;
	if (aj_config_validate(cfg, &err) || egress_proxy_start(cfg, ca, p, &err) ||
	    (lfd = bench_listen_loopback(via)) < 0 || egress_proxy_add_listener(*p, lfd)) {
		fprintf(stderr, "agentjail: bench --egress: cannot start a proxy: %s\n",
			err.message[0] ? err.message : "its listening socket");
		return -1;
	}
	return 0;
}

/* A client context that trusts both CAs, as a sandbox's bundle would. */
static SSL_CTX *trusting_client(struct mitm_ca *a, struct mitm_ca *b)
{
	SSL_CTX *client = SSL_CTX_new(TLS_client_method());
	X509_STORE *store = client ? SSL_CTX_get_cert_store(client) : NULL;
	bool trusted = store != NULL;
	struct mitm_ca *cas[2] = {a, b};
	for (int k = 0; k < 2 && trusted; k++) {
		size_t len;
		const char *pem = mitm_ca_pem(cas[k], &len);
		BIO *bio = BIO_new_mem_buf(pem, (int)len);
		X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
		trusted = x && X509_STORE_add_cert(store, x);
		X509_free(x);
		BIO_free(bio);
	}
	if (!trusted) {
		SSL_CTX_free(client);
		return NULL;
	}
	SSL_CTX_set_verify(client, SSL_VERIFY_PEER, NULL);
	return client;
}

json_t *bench_intercept_json(const struct bench_intercept *ic)
{
	return json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "rounds",
			 ic->small_rounds, "download_rounds", ic->big_rounds, "failed", ic->failed,
			 "tunnel_p50_ms", ic->tunnel_p50_ms, "intercept_p50_ms", ic->intercept_p50_ms,
			 "added_p50_ms", ic->intercept_p50_ms - ic->tunnel_p50_ms, "direct_mib_s",
			 ic->direct_mib_s, "intercept_mib_s", ic->intercept_mib_s, "ratio",
			 ic->direct_mib_s > 0 ? ic->intercept_mib_s / ic->direct_mib_s : 0.0,
			 "tunnel_kib_per_connection", ic->tunnel_kb_per_conn,
			 "intercept_kib_per_connection", ic->intercept_kb_per_conn);
}

void bench_intercept_print(const struct bench_intercept *ic)
{
	printf("\nwith a secret (HTTPS, TLS ended at the proxy) against today's tunnel "
	       "(TLS end to end):\n");
	printf("%-34s %10s %10s %10s %10s\n", "", "baseline", "intercept", "added", "ratio");
	printf("%-34s %10.3f %10.3f %10.3f %10.2f\n", "HTTPS GET via tunnel, p50 (ms)",
	       ic->tunnel_p50_ms, ic->intercept_p50_ms, ic->intercept_p50_ms - ic->tunnel_p50_ms,
	       ic->tunnel_p50_ms > 0 ? ic->intercept_p50_ms / ic->tunnel_p50_ms : 0.0);
	printf("%-34s %10.0f %10.0f %10s %10.2f\n", "100 MiB direct TLS, MiB/s", ic->direct_mib_s,
	       ic->intercept_mib_s, "",
	       ic->direct_mib_s > 0 ? ic->intercept_mib_s / ic->direct_mib_s : 0.0);
	printf("%-34s %10.0f %10.0f %10s %10s\n", "host KiB per held connection",
	       ic->tunnel_kb_per_conn, ic->intercept_kb_per_conn, "", "");
	if (ic->failed)
		printf("(%d interception rounds failed)\n", ic->failed);
}

/* The interleaved rounds and the held connections, into out. */
static void measure_rounds(SSL_CTX *client, uint16_t port, uint16_t tvia, uint16_t ivia,
			   long small, bool quick, struct bench_intercept *out)
{
	long big = quick ? 1 : 5;
	struct run t = {.v = calloc((size_t)small, sizeof(double))};
	struct run i = {.v = calloc((size_t)small, sizeof(double))};
	struct run d = {.v = calloc((size_t)big, sizeof(double))};
	struct run ib = {.v = calloc((size_t)big, sizeof(double))};
	for (long k = -(quick ? 5 : 50); t.v && i.v && k < small; k++) {
		size_t bt = 0, bi = 0;
		double mt = tls_get_ms(client, port, tvia, "/", &bt);
		double mi = tls_get_ms(client, port, ivia, "/", &bi);
		if (k >= 0) {
			sample(&t, mt, bt, 2);
			sample(&i, mi, bi, 2);
		}
	}
	for (long k = 0; d.v && ib.v && k < big; k++) {
		size_t bd = 0, bi = 0;
		/* Each call first: an argument list's order is unspecified, and
		 * the byte counts are the calls' to fill. */
		double md = tls_get_ms(client, port, 0, "/big", &bd);
		double mi = tls_get_ms(client, port, ivia, "/big", &bi);
		sample(&d, md, bd, BIG);
		sample(&ib, mi, bi, BIG);
	}
	out->small_rounds = t.n;
	out->failed = t.failed + i.failed + d.failed + ib.failed;
	out->tunnel_p50_ms = run_median(&t);
	out->intercept_p50_ms = run_median(&i);
	out->big_rounds = d.n;
	double mib = (double)BIG / (1 << 20);
	out->direct_mib_s = d.n ? mib / (run_median(&d) / 1e3) : 0;
	out->intercept_mib_s = ib.n ? mib / (run_median(&ib) / 1e3) : 0;
	double origin_kb = held_kb(client, port, 0);
	out->tunnel_kb_per_conn = held_kb(client, port, tvia) - origin_kb;
	out->intercept_kb_per_conn = held_kb(client, port, ivia) - origin_kb;
	free(t.v);
	free(i.v);
	free(d.v);
	free(ib.v);
}

int bench_intercept(long rounds, bool quick, struct bench_intercept *out)
{
	memset(out, 0, sizeof *out);
	/* The origin's and client's TLS write with write(): a peer gone (a
	 * held connection closed) must end that write, not the bench. */
	signal(SIGPIPE, SIG_IGN);
	struct aj_error err = {0};
	struct mitm_ca *origin_ca = NULL, *sandbox_ca = NULL;
	struct tls_origin o = {.lfd = -1};
	struct egress_proxy *tunnel = NULL, *intercept = NULL;
	SSL_CTX *client = NULL;
	char ca_file[] = "/tmp/aj-bench-ca-XXXXXX";
	int rc = 1, cfd = mkstemp(ca_file);
	size_t len;
	const char *pem;
	if (cfd < 0 || mitm_ca_new(&origin_ca, &err) || mitm_ca_new(&sandbox_ca, &err))
		goto out;
	pem = mitm_ca_pem(origin_ca, &len);
	if (write(cfd, pem, len) != (ssize_t)len ||
	    !(o.ctx = mitm_ca_server_ctx(origin_ca, "localhost")) ||
	    (o.lfd = bench_listen_loopback(&o.port)) < 0 ||
	    pthread_create(&o.thread, NULL, tls_origin_main, &o))
		goto out;
	o.started = true;
	if (!(client = trusting_client(origin_ca, sandbox_ca)))
		goto out;

	struct aj_config cfg;
	aj_config_init(&cfg);
	char host[64], cidr[64], secrets[256];
	snprintf(host, sizeof host, "localhost:%u", o.port);
	snprintf(cidr, sizeof cidr, "127.0.0.1/32:%u", o.port);
	const char *hosts[] = {host}, *cidrs[] = {cidr};
	cfg.allow_hosts = hosts;
	cfg.allow_host_count = 1;
	cfg.allow_cidrs = cidrs;
	cfg.allow_cidr_count = 1;
	cfg.egress = (struct aj_egress_limits){.out_mb = 1048576, .in_mb = 1048576,
					       .connections = 10000};
	cfg.egress_ca = ca_file;
	uint16_t tvia = 0, ivia = 0;
	if (proxy_for(&cfg, NULL, &tunnel, &tvia))
		goto out;
	snprintf(secrets, sizeof secrets,
		 "[{\"name\": \"BENCH\", \"value\": \"bench-value\", \"hosts\": [\"%s\"],"
		 " \"header\": \"X-Bench\"}]",
		 host);
	cfg.secrets = secrets;
	if (proxy_for(&cfg, sandbox_ca, &intercept, &ivia))
		goto out;

	measure_rounds(client, o.port, tvia, ivia, quick ? 50 : rounds * 10, quick, out);
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "agentjail: bench --egress: the interception rows could not start%s%s\n",
			err.message[0] ? ": " : "", err.message);
	egress_proxy_free(tunnel);
	egress_proxy_free(intercept);
	if (o.lfd >= 0) {
		shutdown(o.lfd, SHUT_RDWR);
		if (o.started)
			pthread_join(o.thread, NULL);
		close(o.lfd);
	}
	SSL_CTX_free(o.ctx);
	SSL_CTX_free(client);
	mitm_ca_unref(origin_ca);
	mitm_ca_unref(sandbox_ca);
	if (cfd >= 0) {
		close(cfd);
		unlink(ca_file);
	}
	return rc;
}
