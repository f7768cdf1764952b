/* Completion webhooks (src/serve/webhook*.c) without a server around them:
 * which URLs the allow-list takes, and deliveries to receivers on loopback
 * that this test starts (signed, retried, never redirected, a stop that
 * does not wait for a receiver that never answers). */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "harness.h"
#include "src/serve/http/keys.h"
#include "src/serve/webhook/webhook.h"
#include "src/serve/webhook/webhook_post.h"

#define SEND_AS(k, url, id, body)                                                         \
	webhook_send(wh, url, &(struct webhook_key){(k)->name, (k)->webhook_secret}, id, body)

/* ---- the allow-list ---- */

/* The deployer's --webhook-allow entries, as the delivery takes them. */
struct allow {
	const char *e[16];
	unsigned n;
};

static int check(const struct allow *c, const struct key *k, const char *url, struct aj_error *e)
{
	const struct webhook_key wk = {.name = k->name, .secret = k->webhook_secret};
	return webhook_allowed(c->e, c->n, &wk, url, e);
}

static int open_with(struct webhooks **wh, const struct allow *c, struct aj_error *e)
{
	return webhooks_start(wh, c->e, c->n, e);
}

static struct allow allow_cfg(void)
{
	struct allow c = {0};
	c.e[c.n++] = "https://hooks.example.com/agentjail";
	c.e[c.n++] = "http://127.0.0.1:8080/";
	c.e[c.n++] = "http://[fe80::1]:8080/";
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
	struct allow c = allow_cfg();
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
		int rc = check(&c, &k, ok[i], &e);
		if (rc)
			fail_msg("%s: %s", ok[i], e.message);
	}
}

static void allow_list_refuses_the_rest(void **state)
{
	(void)state;
	struct allow c = allow_cfg();
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
		if (!check(&c, &k, bad[i].url, &e))
			fail_msg("%s was taken", bad[i].url);
		if (!strstr(e.message, bad[i].why))
			fail_msg("%s: '%s' does not say '%s'", bad[i].url, e.message, bad[i].why);
	}
	char longer[WEBHOOK_MAX_URL + 64];
	snprintf(longer, sizeof longer, "http://127.0.0.1:8080/%0*d", WEBHOOK_MAX_URL, 0);
	assert_int_not_equal(check(&c, &k, longer, &e), 0);
	assert_non_null(strstr(e.message, "longer than"));
}

static void no_secret_or_no_allow_list_refuses(void **state)
{
	(void)state;
	struct allow c = allow_cfg();
	struct key k = {0};
	snprintf(k.name, sizeof k.name, "old");
	struct aj_error e;
	assert_int_equal(check(&c, &k, "http://127.0.0.1:8080/", &e), -EINVAL);
	assert_non_null(strstr(e.message, "no webhook secret"));
	assert_non_null(strstr(e.message, "agentjail keys webhook-secret old"));
	struct allow none = {0};
	k = secret_key();
	assert_int_equal(check(&none, &k, "http://127.0.0.1:8080/", &e), -EINVAL);
	assert_non_null(strstr(e.message, "no webhooks"));
}

static void a_bad_prefix_is_refused_at_start(void **state)
{
	(void)state;
	static const char *const bad[] = {"https://u:p@hooks.example.com/", "https://h.example/?q=1",
					  "https://h.example/#f", "https://",
					  "http://[fe80::1%25eth0]:8080/"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct allow c = {0};
		c.e[c.n++] = bad[i];
		struct webhooks *wh = NULL;
		struct aj_error e;
		if (!open_with(&wh, &c, &e))
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
	/* sink: accept and never read nor answer, each attempt held until its
	 * sender's timeout; held: those connections; max_open: the most its
	 * senders held open at once. */
	bool sink;
	int held[256];
	unsigned nheld, max_open;
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

static void sink_take(struct receiver *s, int c);

static void *receive_loop(void *arg)
{
	struct receiver *r = arg;
	for (;;) {
		int c = accept(r->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		if (r->sink) {
			pthread_mutex_lock(&r->mu);
			sink_take(r, c);
			pthread_mutex_unlock(&r->mu);
			continue;
		}
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
	for (unsigned i = 0; i < r->nheld; i++)
		close(r->held[i]);
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
	static struct allow c;
	c = (struct allow){0};
	c.e[c.n++] = prefix;
	struct webhooks *wh = NULL;
	struct aj_error e;
	assert_int_equal(open_with(&wh, &c, &e), 0);
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
	SEND_AS(k, url, run_id, body);
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
	SEND_AS(&k, url, "feed", body);
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

/* stderr into a file, for a test to read what was logged (log_end). */
static FILE *log_begin(int *saved)
{
	FILE *log = tmpfile();
	assert_non_null(log);
	fflush(stderr);
	*saved = dup(2);
	dup2(fileno(log), 2);
	return log;
}

static void log_end(FILE *log, int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(log);
}

/* n deliveries to url as key k, run ids "<tag><i>". */
static void send_many(struct webhooks *wh, const struct key *k, const char *url, const char *tag,
		      int n)
{
	for (int i = 0; i < n; i++) {
		char id[32];
		snprintf(id, sizeof id, "%s%02d", tag, i);
		json_t *body = json_pack("{s:s}", "id", id);
		SEND_AS(k, url, id, body);
		json_decref(body);
	}
}

/* Webhooks allowed to a port nothing listens on (url): every attempt is
 * refused, and every delivery waits for its retry, held. stderr goes to
 * log, read after log_end. */
struct refusing {
	char url[128];
	struct webhooks *wh;
	FILE *log;
	int saved;
};

static void refusing(struct refusing *f)
{
	f->wh = open_allowing(free_port(), f->url, sizeof f->url);
	f->log = log_begin(&f->saved);
}

static void past_a_keys_share_its_own_oldest_waiting_is_dropped(void **state)
{
	(void)state;
	struct refusing f;
	refusing(&f);
	struct key k = secret_key();
	enum { SENT = WEBHOOK_KEY_PENDING + 6 };
	send_many(f.wh, &k, f.url, "r", SENT);
	webhooks_close(f.wh);
	log_end(f.log, f.saved);
	char line[512];
	unsigned dropped = 0, stopping = 0;
	while (fgets(line, sizeof line, f.log)) {
		int n = -1;
		if (strstr(line, "more than 64 deliveries of key 'alice' pending")) {
			/* The oldest waiting: at most WEBHOOK_DEST_INFLIGHT
			 * older ones can be under way, never dropped. */
			assert_int_equal(sscanf(line, "agentjail serve: webhook for run r%d", &n), 1);
			assert_true(n < 6 + WEBHOOK_DEST_INFLIGHT);
			dropped++;
		} else if (strstr(line, "the server is stopping")) {
			stopping++;
		}
	}
	fclose(f.log);
	assert_int_equal(dropped, SENT - WEBHOOK_KEY_PENDING);
	/* The rest, each dropped at the stop, said once. */
	assert_int_equal(stopping, WEBHOOK_KEY_PENDING);
}

static void past_the_whole_bound_the_key_holding_the_most_loses_one(void **state)
{
	(void)state;
	struct refusing f;
	refusing(&f);
	/* Four keys fill their shares, all but one delivery of the whole
	 * bound; a fifth key's two deliveries come last. */
	enum { KEYS = WEBHOOK_MAX_PENDING / WEBHOOK_KEY_PENDING };
	struct key k[KEYS + 1];
	for (int i = 0; i <= KEYS; i++) {
		k[i] = secret_key();
		snprintf(k[i].name, sizeof k[i].name, "k%d", i);
		char tag[8];
		snprintf(tag, sizeof tag, "k%d-", i);
		send_many(f.wh, &k[i], f.url, tag,
			  i < KEYS - 1 ? WEBHOOK_KEY_PENDING : i == KEYS - 1 ? WEBHOOK_KEY_PENDING - 1 : 2);
	}
	webhooks_close(f.wh);
	log_end(f.log, f.saved);
	char line[512];
	unsigned dropped = 0;
	while (fgets(line, sizeof line, f.log)) {
		if (!strstr(line, "more than 256 deliveries pending"))
			continue;
		/* The first of the keys holding a full share, never the
		 * fifth, which holds the least. */
		assert_non_null(strstr(line, "key 'k0' holding the most"));
		assert_non_null(strstr(line, "webhook for run k0-"));
		dropped++;
	}
	fclose(f.log);
	assert_int_equal(dropped, 1);
}

/* ---- one key's hung receiver against another key's delivery ---- */

/* Connections a sink's senders have not closed (under mu). */
static unsigned sink_open(struct receiver *s)
{
	unsigned open = 0;
	for (unsigned i = 0; i < s->nheld; i++) {
		struct pollfd p = {.fd = s->held[i], .events = POLLRDHUP};
		if (poll(&p, 1, 0) == 0 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			open++;
	}
	return open;
}

/* A sink's new connection, kept unread (under mu). */
static void sink_take(struct receiver *s, int c)
{
	if (s->nheld < sizeof s->held / sizeof s->held[0])
		s->held[s->nheld++] = c;
	else
		close(c);
	unsigned open = sink_open(s);
	if (open > s->max_open)
		s->max_open = open;
}

#define ATTACK_RUNS 200

/* The attack: key A's 200 runs end with a webhook to a receiver
 * that never answers, and key B's one run ends among them, to a receiver
 * that answers. B's must arrive, whatever A's fill. */
static void one_keys_hung_receiver_does_not_silence_another_key(void **state)
{
	(void)state;
	struct receiver hung = {.sink = true};
	receiver_start(&hung, 0);
	struct receiver good = {.codes = {200}};
	receiver_start(&good, 0);
	char hung_url[128], good_url[128], prefix_a[64], prefix_b[64];
	snprintf(prefix_a, sizeof prefix_a, "http://127.0.0.1:%u/", hung.port);
	snprintf(prefix_b, sizeof prefix_b, "http://127.0.0.1:%u/", good.port);
	snprintf(hung_url, sizeof hung_url, "%shook", prefix_a);
	snprintf(good_url, sizeof good_url, "%shook", prefix_b);
	struct allow c = {0};
	c.e[c.n++] = prefix_a;
	c.e[c.n++] = prefix_b;
	struct webhooks *wh = NULL;
	struct aj_error e;
	assert_int_equal(open_with(&wh, &c, &e), 0);
	struct key a = secret_key(), b = secret_key();
	snprintf(b.name, sizeof b.name, "bob");
	int saved;
	FILE *log = log_begin(&saved);
	for (int i = 0; i < ATTACK_RUNS; i++) {
		char id[16];
		snprintf(id, sizeof id, "a%03d", i);
		json_t *body = json_pack("{s:s}", "id", id);
		SEND_AS(&a, hung_url, id, body);
		json_decref(body);
		if (i == ATTACK_RUNS / 2) {
			body = json_pack("{s:s}", "id", "b000");
			SEND_AS(&b, good_url, "b000", body);
			json_decref(body);
		}
	}
	bool arrived = receiver_wait(&good, 1);
	pthread_mutex_lock(&hung.mu);
	unsigned max_open = hung.max_open;
	pthread_mutex_unlock(&hung.mu);
	webhooks_close(wh);
	log_end(log, saved);
	char line[512];
	unsigned dropped_a = 0, dropped_b = 0;
	while (fgets(line, sizeof line, log)) {
		if (!strstr(line, "dropped") || strstr(line, "stopping"))
			continue;
		if (strstr(line, "run b000"))
			dropped_b++;
		else
			dropped_a++;
	}
	fclose(log);
	fprintf(stderr, "attack: %d runs of key A to a hung receiver: at most %u of its "
			"connections open at once; A's dropped: %u; B's dropped: %u; B's "
			"arrived: %s\n",
		ATTACK_RUNS, max_open, dropped_a, dropped_b, arrived ? "yes" : "no");
	assert_true(arrived);
	assert_int_equal(dropped_b, 0);
	/* The hung receiver held no more than its destination's bound of the
	 * delivery threads. */
	assert_true(max_open <= WEBHOOK_DEST_INFLIGHT);
	receiver_stop(&good);
	receiver_stop(&hung);
}

/* ---- where a connection may go ---- */

static bool addr_ok(const char *text, const char *host, char *why)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, text, &v4->sin_addr) == 1)
		v4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1)
		v6->sin6_family = AF_INET6;
	else
		fail_msg("%s: not an address", text);
	char got[INET6_ADDRSTRLEN];
	return webhook_address_ok((struct sockaddr *)&ss, sizeof ss, host, got, why, 256);
}

static void a_name_reaches_public_addresses_only_a_literal_itself(void **state)
{
	(void)state;
	char why[256];
	static const struct {
		const char *addr, *why;
	} name_refused[] = {
		{"127.0.0.1", "loopback"},         {"::1", "loopback"},
		{"169.254.169.254", "metadata"},   {"::ffff:169.254.169.254", "metadata"},
		{"10.1.2.3", "private"},           {"192.168.0.1", "private"},
		{"fd00::1", "private"},            {"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},         {"0.0.0.0", "special"},
		{"::ffff:127.0.0.1", "loopback"},  {"64:ff9b::a9fe:a9fe", "metadata"},
		{"2002:a9fe:a9fe::1", "metadata"},
	};
	for (size_t i = 0; i < sizeof name_refused / sizeof name_refused[0]; i++) {
		why[0] = '\0';
		if (addr_ok(name_refused[i].addr, "hooks.example.com", why))
			fail_msg("hooks.example.com at %s was taken", name_refused[i].addr);
		if (!strstr(why, name_refused[i].why) || !strstr(why, "hooks.example.com resolves"))
			fail_msg("%s: '%s' does not say '%s'", name_refused[i].addr, why,
				 name_refused[i].why);
	}
	assert_true(addr_ok("8.8.8.8", "hooks.example.com", why));
	assert_true(addr_ok("2606:4700::1111", "hooks.example.com", why));
	/* A literal is reached as written, whatever its class, and only it. */
	assert_true(addr_ok("127.0.0.1", "127.0.0.1", why));
	assert_true(addr_ok("::1", "[::1]", why));
	assert_true(addr_ok("169.254.169.254", "169.254.169.254", why));
	assert_false(addr_ok("127.0.0.2", "127.0.0.1", why));
	assert_non_null(strstr(why, "not the address 127.0.0.1"));
	assert_false(addr_ok("::ffff:127.0.0.1", "127.0.0.1", why));
}

/* stderr into a pipe (p), for a test to wait for a line (log_wait). */
static void err_to_pipe(int p[2], int *saved)
{
	*saved = dup(2);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	dup2(p[1], 2);
}

/* stderr back; p[0] reads to the end of what was written. */
static void err_back(int p[2], int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(p[1]);
}

/* Reads fd (stderr's pipe) into text until needle shows, within a deadline
 * that only catches a hang: whether it showed. */
static bool log_wait(int fd, char *text, size_t size, size_t *len, const char *needle)
{
	time_t until = time(NULL) + 60;
	while (!strstr(text, needle) && *len < size - 1 && time(NULL) < until) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 1000) <= 0)
			continue;
		ssize_t got = read(fd, text + *len, size - 1 - *len);
		if (got <= 0)
			break;
		*len += (size_t)got;
		text[*len] = '\0';
	}
	return strstr(text, needle) != NULL;
}

static void a_name_pointing_at_loopback_is_not_connected_to(void **state)
{
	(void)state;
	/* The receiver listens on 127.0.0.1, allowed by name (localhost in
	 * /etc/hosts), not as the literal: the name's answer is loopback, and
	 * the POST does not go there. */
	struct receiver r = {.codes = {200}};
	receiver_start(&r, 0);
	char prefix[64], url[128];
	snprintf(prefix, sizeof prefix, "http://localhost:%u/", r.port);
	snprintf(url, sizeof url, "%shook", prefix);
	struct allow c = {0};
	c.e[c.n++] = prefix;
	struct webhooks *wh = NULL;
	struct aj_error e;
	assert_int_equal(open_with(&wh, &c, &e), 0);
	struct key k = secret_key();
	assert_int_equal(check(&c, &k, url, &e), 0);
	int p[2], saved;
	err_to_pipe(p, &saved);
	json_t *body = json_pack("{s:s}", "id", "10ca1");
	SEND_AS(&k, url, "10ca1", body);
	json_decref(body);
	char text[8192] = "";
	size_t len = 0;
	bool said = log_wait(p[0], text, sizeof text, &len, "attempt 1 of 6");
	webhooks_close(wh);
	err_back(p, saved);
	close(p[0]);
	fprintf(stderr, "%s", text);
	assert_true(said);
	assert_non_null(strstr(text, "not sent: localhost resolves to"));
	assert_non_null(strstr(text, "a loopback address"));
	assert_int_equal(r.n, 0);
	receiver_stop(&r);
}

static void a_prefix_bound_to_a_key_is_that_keys_alone(void **state)
{
	(void)state;
	struct allow c = {0};
	c.e[c.n++] = "bob=http://127.0.0.1:8080/bob";
	c.e[c.n++] = "http://127.0.0.1:8080/all";
	struct webhooks *wh = NULL;
	struct aj_error e;
	assert_int_equal(open_with(&wh, &c, &e), 0);
	webhooks_close(wh);
	struct key alice = secret_key(), bob = secret_key();
	snprintf(bob.name, sizeof bob.name, "bob");
	assert_int_equal(check(&c, &bob, "http://127.0.0.1:8080/bob/x", &e), 0);
	assert_int_equal(check(&c, &bob, "http://127.0.0.1:8080/all", &e), 0);
	assert_int_equal(check(&c, &alice, "http://127.0.0.1:8080/all/x", &e), 0);
	assert_int_equal(check(&c, &alice, "http://127.0.0.1:8080/bob/x", &e), -EINVAL);
	/* Another key's prefix answers as none at all. */
	assert_non_null(strstr(e.message, "not under any URL"));
	assert_int_equal(check(&c, &alice, "http://127.0.0.1:8080/other", &e), -EINVAL);
	assert_non_null(strstr(e.message, "not under any URL"));
	static const char *const bad[] = {"no such=http://127.0.0.1:8080/", "=http://h.example/",
					  "bob=ftp://h.example/", "bob=https://u:p@h.example/"};
	static const char *const why[] = {"before '=' a key's name", "before '=' a key's name",
					  "only http", "user name"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct allow b = {.e = {bad[i]}, .n = 1};
		e.message[0] = '\0';
		if (!open_with(&wh, &b, &e))
			fail_msg("%s was taken", bad[i]);
		if (!strstr(e.message, why[i]) || !strstr(e.message, "--webhook-allow"))
			fail_msg("%s: '%s' does not say '%s'", bad[i], e.message, why[i]);
	}
}

static void a_destination_failing_in_a_row_rests(void **state)
{
	(void)state;
	/* Nothing listens: each attempt is refused at once. */
	char url[128];
	struct webhooks *wh = open_allowing(free_port(), url, sizeof url);
	struct key k = secret_key();
	int p[2], saved;
	err_to_pipe(p, &saved);
	send_many(wh, &k, url, "c", 20);
	char text[32768] = "";
	size_t len = 0;
	bool opened = log_wait(p[0], text, sizeof text, &len, "in a row: not tried for 30 s");
	webhooks_close(wh);
	err_back(p, saved);
	log_wait(p[0], text, sizeof text, &len, "\x01"); /* the rest, to the pipe's end */
	close(p[0]);
	fprintf(stderr, "%s", text);
	assert_true(opened);
	/* Once open, no attempt starts for 30 s, longer than this test:
	 * the attempts are the five that opened it and those already under
	 * way then. */
	unsigned attempts = 0;
	for (const char *t = text; (t = strstr(t, ": attempt ")); t++)
		attempts++;
	assert_true(attempts >= WEBHOOK_BREAK_AFTER);
	assert_true(attempts <= WEBHOOK_BREAK_AFTER + WEBHOOK_DEST_INFLIGHT - 1);
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
		cmocka_unit_test(past_a_keys_share_its_own_oldest_waiting_is_dropped),
		cmocka_unit_test(past_the_whole_bound_the_key_holding_the_most_loses_one),
		cmocka_unit_test(one_keys_hung_receiver_does_not_silence_another_key),
		cmocka_unit_test(a_name_reaches_public_addresses_only_a_literal_itself),
		cmocka_unit_test(a_name_pointing_at_loopback_is_not_connected_to),
		cmocka_unit_test(a_prefix_bound_to_a_key_is_that_keys_alone),
		cmocka_unit_test(a_destination_failing_in_a_row_rests),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
