/* agentjail bench --egress: the egress proxy's cost, driven from the host
 * (no sandbox: the proxy is what is measured). An origin server on
 * 127.0.0.1 and a proxy in front of it with a CIDR rule naming it; then,
 * interleaved so that drift lands on both alike:
 *
 *   latency      a small HTTP GET (a new connection each, as a sandbox's
 *                client makes), direct and through the proxy: p50, p95,
 *                the proxy's added p50 and the ratio of medians;
 *   throughput   a 100 MiB download, direct and through the proxy: the
 *                median MiB/s of each and their ratio.
 *
 * Figures only, never a verdict (issue 26's goals: <= 1 ms added at p50,
 * >= 80% of the direct throughput). */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "../egress/proxy.h"
#include "bench_egress.h"
#include "bench_net.h"
#include "bench_intercept.h"
#include "measure.h"

#define BIG (100u << 20)

struct origin {
	int lfd;
	uint16_t port;
	pthread_t thread;
};

/* One request per connection: "GET /big" gets BIG bytes, any other 2. */
static void origin_serve(int c)
{
	static char buf[1 << 16];
	size_t have = 0;
	while (have < sizeof buf - 1) {
		ssize_t n = read(c, buf + have, sizeof buf - 1 - have);
		if (n <= 0)
			return;
		have += (size_t)n;
		buf[have] = 0;
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	size_t len = strncmp(buf, "GET /big ", 9) ? 2 : BIG;
	char head[128];
	int hn = snprintf(head, sizeof head,
			  "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", len);
	if (send(c, head, (size_t)hn, MSG_NOSIGNAL) != hn)
		return;
	memset(buf, 'x', sizeof buf);
	while (len) {
		ssize_t n = send(c, buf, len < sizeof buf ? len : sizeof buf, MSG_NOSIGNAL);
		if (n <= 0)
			return;
		len -= (size_t)n;
	}
}

/* Serves until the listening socket is shut down (accept then fails). */
static void *origin_main(void *arg)
{
	const struct origin *o = arg;
	int c;
	while ((c = bench_accept(o->lfd)) >= 0) {
		origin_serve(c);
		close(c);
	}
	return NULL;
}

/* A GET of path from the origin, directly (via 0) or through the proxy on
 * port via: the milliseconds until the last byte, or -1 (bytes: how many
 * came, head included). */
static double get_ms(uint16_t origin, uint16_t via, const char *path, size_t *bytes)
{
	static char buf[1 << 16];
	double start = measure_now_ms();
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	bench_bounded(fd);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(via ? via : origin),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int n = via ? snprintf(buf, sizeof buf,
			       "GET http://127.0.0.1:%u%s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n",
			       origin, path, origin)
		    : snprintf(buf, sizeof buf, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", path,
			       origin);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) ||
	    send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n) {
		close(fd);
		return -1;
	}
	size_t total = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof buf)) > 0)
		total += (size_t)r;
	close(fd);
	*bytes = total;
	return r < 0 ? -1 : measure_now_ms() - start;
}

struct pair {
	double *direct, *proxy;
	int n, failed;
};

/* rounds of direct and proxied GETs of path, interleaved, after warm
 * rounds; a round whose two GETs did not both deliver want bytes at least
 * is counted as failed. */
static void measure_pair(struct pair *p, uint16_t origin, uint16_t via, const char *path,
			 size_t want, long rounds, int warm)
{
	p->direct = calloc((size_t)rounds, sizeof *p->direct);
	p->proxy = calloc((size_t)rounds, sizeof *p->proxy);
	for (long i = -warm; p->direct && p->proxy && i < rounds; i++) {
		size_t bd = 0, bp = 0;
		double d = get_ms(origin, 0, path, &bd);
		double x = get_ms(origin, via, path, &bp);
		if (i < 0)
			continue;
		if (d < 0 || x < 0 || bd < want || bp < want) {
			p->failed++;
			continue;
		}
		p->direct[p->n] = d;
		p->proxy[p->n++] = x;
	}
	if (p->n) {
		measure_sort(p->direct, (size_t)p->n);
		measure_sort(p->proxy, (size_t)p->n);
	}
}

static double p50(const double *v, int n)
{
	return n ? measure_percentile(v, (size_t)n, 50) : 0;
}

/* A run's wall time as its caller sees it, open sandbox to result. */
static double startup_run_ms(struct aj_sandbox *sb)
{
	static const char code[] = "print(1)\n";
	struct aj_result r;
	double t0 = measure_now_ms();
	aj_run(sb, code, sizeof code - 1, &r);
	double ms = measure_now_ms() - t0;
	bool ok = r.status == AJ_STATUS_OK;
	aj_result_free(&r);
	return ok ? ms : -1;
}

/* The start-up cost of egress on a tier: `print(1)` in a sandbox with a
 * rule (the run's proxy started, its door made in the run's namespace, the
 * log taken) and in one without, interleaved; the medians. The image, for
 * a tier that runs one: "default", else "test". 0, or -1 when the tier
 * cannot open here (why printed). */
static int startup_cost(enum aj_tier tier, long rounds, double *off, double *on)
{
	struct aj_sandbox *plain = NULL, *with = NULL;
	struct aj_error err = {0};
	const char *images[] = {NULL, "test"};
	const char *cidrs[] = {"127.0.0.1/32:9"};
	for (size_t i = 0; i < 2 && !with; i++) {
		struct aj_config cfg;
		aj_config_init(&cfg);
		cfg.tier = tier;
		cfg.image = images[i];
		if (aj_open(&cfg, &plain, &err))
			continue;
		cfg.allow_cidrs = cidrs;
		cfg.allow_cidr_count = 1;
		if (aj_open(&cfg, &with, &err)) {
			aj_close(plain);
			plain = NULL;
		}
	}
	if (!with) {
		fprintf(stderr, "agentjail: bench --egress: %s: %s\n", aj_tier_name(tier), err.message);
		return -1;
	}
	double *a = calloc((size_t)rounds, sizeof *a), *b = calloc((size_t)rounds, sizeof *b);
	int n = 0;
	startup_run_ms(plain); /* warm the page cache for both */
	startup_run_ms(with);
	for (long i = 0; a && b && i < rounds; i++) {
		double x = startup_run_ms(plain), y = startup_run_ms(with);
		if (x > 0 && y > 0) {
			a[n] = x;
			b[n++] = y;
		}
	}
	*off = p50(a, n);
	*on = p50(b, n);
	free(a);
	free(b);
	aj_close(plain);
	aj_close(with);
	return n ? 0 : -1;
}

/* The proxy as a run would have it, with a rule naming the origin on
 * port and caps no round reaches, listening on *via. */
static int start_proxy(uint16_t port, struct egress_proxy **out, uint16_t *via)
{
	struct aj_config cfg;
	aj_config_init(&cfg);
	char rule[64];
	snprintf(rule, sizeof rule, "127.0.0.1/32:%u", port);
	const char *cidrs[] = {rule};
	cfg.allow_cidrs = cidrs;
	cfg.allow_cidr_count = 1;
	cfg.egress = (struct aj_egress_limits){.out_mb = 1048576, .in_mb = 1048576,
					       .connections = 10000};
	struct egress_proxy *p = NULL;
	struct aj_error err = {0};
	int lfd = -1;
	if (aj_config_validate(&cfg, &err) || egress_proxy_start(&cfg, NULL, &p, &err) ||
	    (lfd = bench_listen_loopback(via)) < 0 || egress_proxy_add_listener(p, lfd)) {
		fprintf(stderr, "agentjail: bench --egress: cannot start the proxy: %s\n",
			err.message[0] ? err.message : "its listening socket");
		egress_proxy_free(p);
		return 1;
	}
	*out = p;
	return 0;
}

int bench_egress(long rounds, bool quick, bool as_json)
{
	struct origin o = {0};
	if ((o.lfd = bench_listen_loopback(&o.port)) < 0 || pthread_create(&o.thread, NULL, origin_main, &o)) {
		fprintf(stderr, "agentjail: bench --egress: cannot start the loopback origin\n");
		return 1;
	}
	struct egress_proxy *p = NULL;
	uint16_t via = 0;
	if (start_proxy(o.port, &p, &via))
		return 1;
	long small_rounds = quick ? 50 : rounds * 10;
	long big_rounds = quick ? 1 : 5;
	struct pair small = {0}, big = {0};
	measure_pair(&small, o.port, via, "/", 2, small_rounds, quick ? 5 : 50);
	measure_pair(&big, o.port, via, "/big", BIG, big_rounds, 1);
	char *log = egress_proxy_take_log(p);
	json_t *lj = log ? json_loads(log, 0, NULL) : NULL;
	free(log);
	egress_proxy_free(p);
	shutdown(o.lfd, SHUT_RDWR);
	pthread_join(o.thread, NULL);
	close(o.lfd);

	struct bench_intercept ic;
	int ic_rc = bench_intercept(rounds, quick, &ic);

	double start_off[2] = {0}, start_on[2] = {0};
	int start_rc[2];
	enum aj_tier start_tiers[2] = {AJ_TIER_PROCESS, AJ_TIER_CONTAINER};
	for (int i = 0; i < 2; i++)
		start_rc[i] = startup_cost(start_tiers[i], quick ? 5 : rounds * 4, &start_off[i],
					   &start_on[i]);

	double d50 = p50(small.direct, small.n), x50 = p50(small.proxy, small.n);
	double d95 = small.n ? measure_percentile(small.direct, (size_t)small.n, 95) : 0;
	double x95 = small.n ? measure_percentile(small.proxy, (size_t)small.n, 95) : 0;
	double mib = (double)BIG / (1 << 20);
	double dt = big.n ? mib / (p50(big.direct, big.n) / 1e3) : 0;
	double xt = big.n ? mib / (p50(big.proxy, big.n) / 1e3) : 0;
	json_t *root = json_pack(
		"{s:{s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f}, s:{s:I, s:I, s:f, s:f, s:f}, s:I}",
		"small_get", "rounds", (json_int_t)small.n, "failed", (json_int_t)small.failed,
		"direct_p50_ms", d50, "proxy_p50_ms", x50, "direct_p95_ms", d95, "proxy_p95_ms", x95,
		"added_p50_ms", x50 - d50, "ratio_p50", d50 > 0 ? x50 / d50 : 0.0,
		"download_100mib", "rounds", (json_int_t)big.n, "failed", (json_int_t)big.failed,
		"direct_mib_s", dt, "proxy_mib_s", xt, "ratio", dt > 0 ? xt / dt : 0.0,
		"proxy_denied", (json_int_t)(lj ? json_integer_value(json_object_get(lj, "denied")) : -1));
	for (int i = 0; i < 2; i++)
		if (!start_rc[i])
			json_object_set_new(root, i ? "startup_container" : "startup_process",
					    json_pack("{s:f, s:f, s:f}", "off_ms", start_off[i], "on_ms",
						      start_on[i], "added_ms",
						      start_on[i] - start_off[i]));
	if (!ic_rc)
		json_object_set_new(root, "intercept", bench_intercept_json(&ic));
	if (as_json) {
		char *s = json_dumps(root, JSON_COMPACT);
		puts(s ? s : "{}");
		free(s);
	} else {
		printf("agentjail %s bench --egress: the egress proxy against the same request direct,\n"
		       "from the host to a loopback origin, interleaved\n\n", AGENTJAIL_VERSION);
		printf("%-34s %10s %10s %10s %10s\n", "", "direct", "proxy", "added", "ratio");
		printf("%-34s %10.3f %10.3f %10.3f %10.2f\n", "small GET, p50 (ms)", d50, x50, x50 - d50,
		       d50 > 0 ? x50 / d50 : 0.0);
		printf("%-34s %10.3f %10.3f %10.3f %10.2f\n", "small GET, p95 (ms)", d95, x95, x95 - d95,
		       d95 > 0 ? x95 / d95 : 0.0);
		printf("%-34s %10.0f %10.0f %10s %10.2f\n", "100 MiB download, median (MiB/s)", dt, xt,
		       "", dt > 0 ? xt / dt : 0.0);
		for (int i = 0; i < 2; i++)
			if (!start_rc[i])
				printf("%-34s %10.3f %10.3f %10.3f %10.2f\n",
				       i ? "container print(1), median (ms)" : "process print(1), median (ms)",
				       start_off[i], start_on[i], start_on[i] - start_off[i],
				       start_off[i] > 0 ? start_on[i] / start_off[i] : 0.0);
		printf("(the start-up rows: egress off in \"direct\", on in \"proxy\")\n");
		if (!ic_rc)
			bench_intercept_print(&ic);
		printf("\n%d small GET rounds, %d download rounds", small.n, big.n);
		if (small.failed || big.failed)
			printf(" (%d and %d failed)", small.failed, big.failed);
		printf("\n");
	}
	json_decref(root);
	json_decref(lj);
	free(small.direct);
	free(small.proxy);
	free(big.direct);
	free(big.proxy);
	return small.n && big.n ? 0 : 1;
}
