/* Completion webhooks (src/serve/webhook*.c) without a server around them:
 * which URLs the allow-list takes, and deliveries to receivers on loopback
 * that this test starts (signed, retried, never redirected, a stop that
 * does not wait for a receiver that never answers). */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "harness.h"
#include "src/serve/http/keys.h"
#include "src/serve/admit/service.h"
#include "src/serve/webhook/webhook.h"

/* ---- the allow-list ---- */

static struct serve_config allow_cfg(void)
{
	struct serve_config c = {0};
	c.webhook_allow[c.webhook_allow_count++] = "https://hooks.example.com/agentjail";
	c.webhook_allow[c.webhook_allow_count++] = "http://127.0.0.1:8080/";
	c.webhook_allow[c.webhook_allow_count++] = "http://[fe80::1]:8080/";
	return c;
}

static struct key secret_key(void)
{
	struct key k = {0};
	snprintf(k.name, sizeof k.name, "alice");
	assert_int_equal(key_webhook_secret_generate(&k), 0);
	return k;
}

static void allow_list_takes_urls_under_a_prefix(void **state)
{
	(void)state;
	struct serve_config c = allow_cfg();
	struct key k = secret_key();
	struct aj_error e;
	static const char *const ok[] = {
		"https://hooks.example.com/agentjail",
		"https://hooks.example.com/agentjail/",
		"https://hooks.example.com/agentjail/run?x=1",
		"HTTPS://HOOKS.example.com:443/agentjail/a",
		"https://hooks.example.com/agentjail/a/../b", /* /agentjail/b */
		"http://127.0.0.1:8080/",
		"http://127.0.0.1:8080/any/path",
		"http://[fe80::1]:8080/hook",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		int rc = webhook_check(&c, &k, ok[i], &e);
		if (rc)
			fail_msg("%s: %s", ok[i], e.message);
	}
}

static void allow_list_refuses_the_rest(void **state)
{
	(void)state;
	struct serve_config c = allow_cfg();
	struct key k = secret_key();
	struct aj_error e;
	static const struct {
		const char *url, *why;
	} bad[] = {
		{"https://hooks.example.com/agentjail2", "not under"},
		{"https://hooks.example.com/agentjai", "not under"},
		{"https://hooks.example.com/", "not under"},
		{"http://hooks.example.com/agentjail", "not under"},        /* scheme */
		{"https://hooks.example.com:8443/agentjail", "not under"},  /* port */
		{"https://evil.example.com/agentjail", "not under"},        /* host */
		{"https://hooks.example.com.evil.example/agentjail", "not under"},
		{"https://hooks.example.com/agentjail/../admin", "not under"},
		{"http://127.0.0.1/", "not under"},                          /* port 80 */
		{"http://[::1]:8080/", "not under"},
		{"https://user:pw@hooks.example.com/agentjail", "user name or password"},
		{"https://hooks.example.com@evil.example/agentjail", "user name or password"},
		{"https://hooks.example.com/agentjail#x", "fragment"},
		/* The zone picks the interface the POST leaves by: not what
		 * the allowed prefix names. */
		{"http://[fe80::1%25eth0]:8080/", "zone"},
		{"http://[fe80::1%25lo]:8080/hook", "zone"},
		{"https://hooks.example.com/agentjail/%2e%2e/admin", "encoded"},
		{"https://hooks.example.com/agentjail/..%2Fadmin", "encoded"},
		{"https://hooks.example.com/agentjail/..\\admin", ""},
		{"ftp://hooks.example.com/agentjail", "only http"},
		{"file:///etc/passwd", "only http"},
		{"hooks.example.com/agentjail", "not a URL"},
		{"", "not a URL"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		e.message[0] = '\0';
		if (!webhook_check(&c, &k, bad[i].url, &e))
			fail_msg("%s was taken", bad[i].url);
		if (!strstr(e.message, bad[i].why))
			fail_msg("%s: '%s' does not say '%s'", bad[i].url, e.message, bad[i].why);
	}
	char longer[WEBHOOK_MAX_URL + 64];
	snprintf(longer, sizeof longer, "http://127.0.0.1:8080/%0*d", WEBHOOK_MAX_URL, 0);
	assert_int_not_equal(webhook_check(&c, &k, longer, &e), 0);
	assert_non_null(strstr(e.message, "longer than"));
}

static void no_secret_or_no_allow_list_refuses(void **state)
{
	(void)state;
	struct serve_config c = allow_cfg();
	struct key k = {0};
	snprintf(k.name, sizeof k.name, "old");
	struct aj_error e;
	assert_int_equal(webhook_check(&c, &k, "http://127.0.0.1:8080/", &e), -EINVAL);
	assert_non_null(strstr(e.message, "no webhook secret"));
	assert_non_null(strstr(e.message, "agentjail keys webhook-secret old"));
	struct serve_config none = {0};
	k = secret_key();
	assert_int_equal(webhook_check(&none, &k, "http://127.0.0.1:8080/", &e), -EINVAL);
	assert_non_null(strstr(e.message, "no webhooks"));
}

static void a_bad_prefix_is_refused_at_start(void **state)
{
	(void)state;
	static const char *const bad[] = {"https://u:p@hooks.example.com/", "https://h.example/?q=1",
					  "https://h.example/#f", "https://",
					  "http://[fe80::1%25eth0]:8080/"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct serve_config c = {0};
		c.webhook_allow[c.webhook_allow_count++] = bad[i];
		struct webhooks *wh = NULL;
		struct aj_error e;
		if (!webhooks_open(&wh, &c, &e))
			fail_msg("%s was taken as a prefix", bad[i]);
		assert_null(wh);
		assert_non_null(strstr(e.message, "--webhook-allow"));
	}
}

/* ---- deliveries, to a receiver on loopback ---- */

#define MAX_SEEN 16

struct seen {
	char ts[32], sig[128], run_id[80];
	char body[4096];
};

struct receiver {
	int fd;
	unsigned port;
	/* What to answer, request by request: a status (the last repeats), a
	 * Location for 3xx; hold: read the request and answer nothing until
	 * released. */
	int codes[4];
	const char *location;
	bool hold;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool released;
	int held_fd; /* the held connection, still open */
	struct seen seen[MAX_SEEN];
	unsigned n;
	pthread_t t;
};

static void header(const char *req, const char *name, char *out, size_t n)
{
	out[0] = '\0';
	const char *p = strcasestr(req, name);
	if (!p)
		return;
	p += strlen(name);
	while (*p == ' ')
		p++;
	size_t len = strcspn(p, "\r\n");
	snprintf(out, n, "%.*s", (int)(len < n - 1 ? len : n - 1), p);
}

static void *receive_loop(void *arg)
{
	struct receiver *r = arg;
	for (;;) {
		int c = accept(r->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		char req[8192];
		size_t len = 0;
		char *end = NULL;
		long want = -1;
		ssize_t got;
		/* Headers, then Content-Length bytes of body. */
		while (len < sizeof req - 1 && (got = read(c, req + len, sizeof req - 1 - len)) > 0) {
			len += (size_t)got;
			req[len] = '\0';
			if (!end && (end = strstr(req, "\r\n\r\n"))) {
				char cl[32];
				header(req, "Content-Length:", cl, sizeof cl);
				want = atol(cl);
			}
			if (end && (long)(len - (size_t)(end + 4 - req)) >= want)
				break;
		}
		pthread_mutex_lock(&r->mu);
		unsigned i = r->n < MAX_SEEN ? r->n : MAX_SEEN - 1;
		struct seen *s = &r->seen[i];
		header(req, "X-Agentjail-Timestamp:", s->ts, sizeof s->ts);
		header(req, "X-Agentjail-Signature:", s->sig, sizeof s->sig);
		header(req, "X-Agentjail-Run-Id:", s->run_id, sizeof s->run_id);
		snprintf(s->body, sizeof s->body, "%s", end ? end + 4 : "");
		unsigned k = r->n < 4 ? r->n : 3;
		int code = r->codes[k] ? r->codes[k] : 200;
		if (r->hold) {
			r->held_fd = c;
			r->n++;
			pthread_cond_broadcast(&r->cv);
			while (!r->released)
				pthread_cond_wait(&r->cv, &r->mu);
			pthread_mutex_unlock(&r->mu);
			continue;
		}
		r->n++;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		char ans[512];
		int n = snprintf(ans, sizeof ans,
				 "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n%s%s%s\r\n",
				 code, r->location ? "Location: " : "", r->location ? r->location : "",
				 r->location ? "\r\n" : "");
		if (write(c, ans, (size_t)n) < 0) {
			/* the sender gone: what it saw is its own log's business */
		}
		close(c);
	}
}

/* Listens on 127.0.0.1:port (0: one the kernel picks). */
static void receiver_start(struct receiver *r, unsigned port)
{
	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(r->fd >= 0);
	int one = 1;
	setsockopt(r->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(r->fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(r->fd, 16), 0);
	socklen_t al = sizeof a;
	getsockname(r->fd, (struct sockaddr *)&a, &al);
	r->port = ntohs(a.sin_port);
	r->held_fd = -1;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	assert_int_equal(pthread_create(&r->t, NULL, receive_loop, r), 0);
}

static void receiver_stop(struct receiver *r)
{
	pthread_mutex_lock(&r->mu);
	r->released = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	shutdown(r->fd, SHUT_RDWR);
	pthread_join(r->t, NULL);
	close(r->fd);
	if (r->held_fd >= 0)
		close(r->held_fd);
}

/* Waits for the receiver's n-th request: a state to reach, within a
 * bound far above the retries' 1 + 2 s. */
static bool receiver_wait(struct receiver *r, unsigned n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&r->mu);
	while (r->n < n && pthread_cond_timedwait(&r->cv, &r->mu, &until) == 0)
		;
	bool ok = r->n >= n;
	pthread_mutex_unlock(&r->mu);
	return ok;
}

/* A port that was free a moment ago (nothing listens there). */
static unsigned free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t al = sizeof a;
	getsockname(fd, (struct sockaddr *)&a, &al);
	close(fd);
	return ntohs(a.sin_port);
}

/* Webhooks allowed to 127.0.0.1:port, and a URL there (into url). */
static struct webhooks *open_allowing(unsigned port, char *url, size_t n)
{
	static char prefix[64];
	snprintf(prefix, sizeof prefix, "http://127.0.0.1:%u/", port);
	snprintf(url, n, "http://127.0.0.1:%u/hook", port);
	static struct serve_config c;
	c = (struct serve_config){0};
	c.webhook_allow[c.webhook_allow_count++] = prefix;
	struct webhooks *wh = NULL;
	struct aj_error e;
	assert_int_equal(webhooks_open(&wh, &c, &e), 0);
	return wh;
}

/* A delivery of {"id": run_id, "state": "done"} to r, signed with a new
 * secret (into k), on webhooks of their own (returned). */
static struct webhooks *send_to(struct receiver *r, const char *run_id, struct key *k)
{
	char url[128];
	struct webhooks *wh = open_allowing(r->port, url, sizeof url);
	*k = secret_key();
	json_t *body = json_pack("{s:s, s:s}", "id", run_id, "state", "done");
	webhook_send(wh, url, k->webhook_secret, run_id, body);
	json_decref(body);
	return wh;
}

/* Whether s's signature is the HMAC-SHA256 of "<timestamp>.<body>" with
 * secret, and its timestamp a time of this run. */
static bool signed_with(const struct seen *s, const char *secret)
{
	char msg[4200];
	int n = snprintf(msg, sizeof msg, "%s.%s", s->ts, s->body);
	unsigned char mac[32];
	unsigned int ml = 0;
	HMAC(EVP_sha256(), secret, (int)strlen(secret), (unsigned char *)msg, (size_t)n, mac, &ml);
	char want[7 + 65] = "sha256=";
	for (int i = 0; i < 32; i++)
		snprintf(want + 7 + 2 * i, 3, "%02x", mac[i]);
	long ts = atol(s->ts);
	return !strcmp(s->sig, want) && ts > 1700000000L && ts <= (long)time(NULL);
}

static void a_receiver_down_gets_the_retries_then_the_signed_body(void **state)
{
	(void)state;
	struct receiver r = {.codes = {503, 503, 200}};
	receiver_start(&r, 0);
	struct key k;
	struct webhooks *wh = send_to(&r, "0123abcd", &k);
	assert_true(receiver_wait(&r, 3));
	struct key other = secret_key();
	for (unsigned i = 0; i < 3; i++) {
		assert_true(signed_with(&r.seen[i], k.webhook_secret));
		assert_false(signed_with(&r.seen[i], other.webhook_secret));
		assert_string_equal(r.seen[i].run_id, "0123abcd");
		json_t *got = json_loads(r.seen[i].body, 0, NULL);
		assert_non_null(got);
		assert_string_equal(json_string_value(json_object_get(got, "state")), "done");
		json_decref(got);
	}
	/* Delivered: no fourth attempt comes, whatever the wait. */
	webhooks_close(wh);
	assert_int_equal(r.n, 3);
	receiver_stop(&r);
}

static void a_receiver_not_listening_at_first_gets_it_later(void **state)
{
	(void)state;
	/* Nothing listens there for the first attempt; the receiver comes up
	 * on it after that attempt. */
	unsigned port = free_port();
	char url[128];
	struct webhooks *wh = open_allowing(port, url, sizeof url);
	struct key k = secret_key();
	json_t *body = json_pack("{s:s}", "id", "feed");
	/* The attempts' log goes to stderr: read here until the first
	 * attempt is logged as failed, and only then start the receiver. */
	int p[2], saved = dup(2);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	dup2(p[1], 2);
	webhook_send(wh, url, k.webhook_secret, "feed", body);
	json_decref(body);
	char text[4096] = "";
	size_t len = 0;
	while (len < sizeof text - 1 && !strstr(text, "attempt 1 of 6")) {
		ssize_t got = read(p[0], text + len, sizeof text - 1 - len);
		if (got <= 0)
			break;
		len += (size_t)got;
		text[len] = '\0';
	}
	dup2(saved, 2);
	close(saved);
	close(p[1]);
	close(p[0]);
	fprintf(stderr, "%s", text);
	assert_non_null(strstr(text, "attempt 1 of 6"));
	assert_non_null(strstr(text, "next in 1 s"));
	struct receiver r = {0};
	receiver_start(&r, port);
	assert_true(receiver_wait(&r, 1));
	assert_true(signed_with(&r.seen[0], k.webhook_secret));
	webhooks_close(wh);
	receiver_stop(&r);
}

static void a_redirect_is_not_followed(void **state)
{
	(void)state;
	struct receiver target = {.codes = {200}};
	receiver_start(&target, 0);
	char loc[128];
	snprintf(loc, sizeof loc, "http://127.0.0.1:%u/elsewhere", target.port);
	struct receiver r = {.codes = {302}, .location = loc};
	receiver_start(&r, 0);
	struct key k;
	struct webhooks *wh = send_to(&r, "beef", &k);
	/* The second attempt comes after the first one's answer was read
	 * whole: had the redirect been followed, the target had it by now. */
	assert_true(receiver_wait(&r, 2));
	webhooks_close(wh);
	assert_int_equal(target.n, 0);
	receiver_stop(&r);
	receiver_stop(&target);
}

static void a_stop_does_not_wait_for_a_receiver_that_never_answers(void **state)
{
	(void)state;
	struct receiver r = {.hold = true};
	receiver_start(&r, 0);
	struct key k;
	struct webhooks *wh = send_to(&r, "cafe", &k);
	assert_true(receiver_wait(&r, 1));
	/* The receiver holds the request unanswered until released, which
	 * comes only after the stop returned: the stop ended the attempt. */
	webhooks_close(wh);
	pthread_mutex_lock(&r.mu);
	assert_false(r.released);
	pthread_mutex_unlock(&r.mu);
	receiver_stop(&r);
}

static void past_the_bound_the_oldest_waiting_is_dropped(void **state)
{
	(void)state;
	/* Nothing listens: every attempt is refused, and every delivery
	 * waits for its retry, held. The log goes to a file, read after. */
	char url[128];
	struct webhooks *wh = open_allowing(free_port(), url, sizeof url);
	FILE *log = tmpfile();
	assert_non_null(log);
	int saved = dup(2);
	dup2(fileno(log), 2);
	struct key k = secret_key();
	enum { SENT = WEBHOOK_MAX_PENDING + 6 };
	for (int i = 0; i < SENT; i++) {
		char id[16];
		snprintf(id, sizeof id, "r%02d", i);
		json_t *body = json_pack("{s:s}", "id", id);
		webhook_send(wh, url, k.webhook_secret, id, body);
		json_decref(body);
	}
	webhooks_close(wh);
	dup2(saved, 2);
	close(saved);
	rewind(log);
	char line[512];
	unsigned dropped = 0, stopping = 0;
	while (fgets(line, sizeof line, log)) {
		int n = -1;
		if (strstr(line, "more than 64 deliveries pending")) {
			/* The oldest waiting: at most WEBHOOK_THREADS (4) older
			 * ones can be under way, never dropped. */
			assert_int_equal(sscanf(line, "agentjail serve: webhook for run r%d", &n), 1);
			assert_true(n < 6 + 4);
			dropped++;
		} else if (strstr(line, "the server is stopping")) {
			stopping++;
		}
	}
	fclose(log);
	assert_int_equal(dropped, SENT - WEBHOOK_MAX_PENDING);
	/* The rest, each dropped at the stop, said once. */
	assert_int_equal(stopping, WEBHOOK_MAX_PENDING);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(allow_list_takes_urls_under_a_prefix),
		cmocka_unit_test(allow_list_refuses_the_rest),
		cmocka_unit_test(no_secret_or_no_allow_list_refuses),
		cmocka_unit_test(a_bad_prefix_is_refused_at_start),
		cmocka_unit_test(a_receiver_down_gets_the_retries_then_the_signed_body),
		cmocka_unit_test(a_receiver_not_listening_at_first_gets_it_later),
		cmocka_unit_test(a_redirect_is_not_followed),
		cmocka_unit_test(a_stop_does_not_wait_for_a_receiver_that_never_answers),
		cmocka_unit_test(past_the_bound_the_oldest_waiting_is_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
