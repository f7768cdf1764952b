/* The microVM's egress port (src/vm/egress_mux.c): the host's reading of
 * the guest's frames, which a guest taken over by its program may write at
 * will, so every frame out of the rules must end the port with a reason
 * and never the host; and both ends relaying a stream, with the credit
 * rule bounding what either buffers. No VM: the two ends over a socketpair. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/vm/egress_mux.h"
#include "src/vm/egress_relay.h"

/* The host's open: a socketpair, its far end kept for the test to read. */
struct opened {
	int far[EGRESS_STREAMS];
	int count;
};

static int open_pair(void *ctx, unsigned id)
{
	struct opened *o = ctx;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -errno;
	o->far[id] = sv[1];
	o->count++;
	return sv[0];
}

static void close_far(struct opened *o)
{
	for (int i = 0; i < EGRESS_STREAMS; i++)
		if (o->far[i] > 0)
			close(o->far[i]);
}

static size_t frame(uint8_t *out, uint8_t type, uint16_t id, uint32_t len, const void *data,
		    size_t n)
{
	struct egress_frame f = {.type = type, .id = id, .len = len};
	memcpy(out, &f, sizeof f);
	if (n)
		memcpy(out + sizeof f, data, n);
	return sizeof f + n;
}

/* A host's mux over a port nobody reads (it only parses here). */
static void host_mux(struct egress_mux *m, struct opened *o)
{
	memset(o, 0, sizeof *o);
	egress_mux_init(m, -1, open_pair, o, true);
}

/* Feeds the frames, one byte at a time (a frame may be split anywhere):
 * the result of the last feed. */
static int feed_bytes(struct egress_mux *m, const uint8_t *p, size_t n)
{
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = egress_mux_feed(m, p + i, 1);
	return rc;
}

static void valid_frames_reach_the_stream(void **state)
{
	(void)state;
	struct egress_mux *m = malloc(sizeof *m);
	struct opened o;
	host_mux(m, &o);
	uint8_t buf[256];
	size_t n = frame(buf, EGRESS_OPEN, 3, 0, NULL, 0);
	n += frame(buf + n, EGRESS_DATA, 3, 5, "hello", 5);
	assert_int_equal(feed_bytes(m, buf, n), 0);
	assert_int_equal(o.count, 1);
	char got[16] = "";
	assert_int_equal(read(o.far[3], got, sizeof got), 5);
	assert_memory_equal(got, "hello", 5);
	/* Written to the stream: owed back to the guest as credit. */
	assert_int_equal(m->s[3].grant, 5);
	egress_mux_free(m);
	close_far(&o);
	free(m);
}

struct bad_case {
	const char *what, *word;
	struct egress_frame f[3];
	int count;
};

static void bad_frames_end_the_port_with_a_reason(void **state)
{
	(void)state;
	static const struct bad_case cases[] = {
		{"an unknown type", "type 9", {{9, 0, 0, 0}}, 1},
		{"a reserved byte set", "reserved", {{EGRESS_OPEN, 1, 0, 0}}, 1},
		{"an id past the streams", "not below", {{EGRESS_OPEN, 0, EGRESS_STREAMS, 0}}, 1},
		{"an OPEN with a length", "OPEN of stream 0 with length", {{EGRESS_OPEN, 0, 0, 4}}, 1},
		{"an OPEN twice", "in use", {{EGRESS_OPEN, 0, 1, 0}, {EGRESS_OPEN, 0, 1, 0}}, 2},
		{"DATA never opened", "not open", {{EGRESS_DATA, 0, 2, 1}}, 1},
		{"empty DATA", "DATA of 0 bytes", {{EGRESS_OPEN, 0, 0, 0}, {EGRESS_DATA, 0, 0, 0}}, 2},
		{"DATA over a chunk", "DATA of", {{EGRESS_OPEN, 0, 0, 0},
						  {EGRESS_DATA, 0, 0, EGRESS_CHUNK + 1}}, 2},
		{"CREDIT past the window", "past its window",
		 {{EGRESS_OPEN, 0, 0, 0}, {EGRESS_CREDIT, 0, 0, 1}}, 2},
		{"CREDIT never opened", "not open", {{EGRESS_CREDIT, 0, 5, 1}}, 1},
		{"a CLOSE with a length", "with length", {{EGRESS_OPEN, 0, 0, 0},
							  {EGRESS_CLOSE, 0, 0, 1}}, 2},
		{"a CLOSE twice", "not open", {{EGRESS_OPEN, 0, 0, 0}, {EGRESS_CLOSE, 0, 0, 0},
					       {EGRESS_CLOSE, 0, 0, 0}}, 3},
		{"DATA after CLOSE", "not open", {{EGRESS_OPEN, 0, 0, 0}, {EGRESS_CLOSE, 0, 0, 0},
						  {EGRESS_DATA, 0, 0, 1}}, 3},
	};
	struct egress_mux *m = malloc(sizeof *m);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct opened o;
		host_mux(m, &o);
		uint8_t buf[64];
		size_t n = 0;
		for (int k = 0; k < cases[i].count; k++) {
			memcpy(buf + n, &cases[i].f[k], sizeof cases[i].f[k]);
			n += sizeof cases[i].f[k];
		}
		int rc = feed_bytes(m, buf, n);
		if (rc != -EPROTO || !strstr(m->why, cases[i].word))
			fail_msg("%s: rc %d, why '%s' (wanted -EPROTO and '%s')", cases[i].what, rc,
				 m->why, cases[i].word);
		egress_mux_free(m);
		close_far(&o);
	}
	free(m);
}

/* The credit rule: a window's worth in chunks is taken, one byte more is
 * refused, and the host never holds more than the window for a stream. */
static void data_past_the_credit_is_refused(void **state)
{
	(void)state;
	struct egress_mux *m = malloc(sizeof *m);
	uint8_t *buf = malloc(EGRESS_WINDOW + 64);
	static uint8_t chunk[EGRESS_CHUNK];
	struct opened o;
	host_mux(m, &o);
	size_t n = frame(buf, EGRESS_OPEN, 0, 0, NULL, 0);
	assert_int_equal(egress_mux_feed(m, buf, n), 0);
	/* Nothing reads the far end: what its socket does not take, the
	 * host keeps, never more than the window. */
	int rc = 0;
	for (uint32_t sent = 0; sent < EGRESS_WINDOW && rc == 0; sent += EGRESS_CHUNK) {
		n = frame(buf, EGRESS_DATA, 0, EGRESS_CHUNK, chunk, EGRESS_CHUNK);
		rc = egress_mux_feed(m, buf, n);
	}
	assert_int_equal(rc, 0);
	assert_true(m->s[0].in_len <= EGRESS_WINDOW);
	/* No credit was sent back (nothing here writes the port), so the
	 * guest has none left. */
	n = frame(buf, EGRESS_DATA, 0, 1, "x", 1);
	assert_int_equal(egress_mux_feed(m, buf, n), -EPROTO);
	assert_non_null(strstr(m->why, "past its credit"));
	egress_mux_free(m);
	close_far(&o);
	free(buf);
	free(m);
}

/* A guest's mux refuses an OPEN (only the guest opens streams). */
static void the_guest_refuses_an_open(void **state)
{
	(void)state;
	struct egress_mux *m = malloc(sizeof *m);
	egress_mux_init(m, -1, NULL, NULL, false);
	uint8_t buf[16];
	size_t n = frame(buf, EGRESS_OPEN, 0, 0, NULL, 0);
	assert_int_equal(egress_mux_feed(m, buf, n), -EPROTO);
	assert_non_null(strstr(m->why, "from the host"));
	free(m);
}

/* ---- both ends relaying ---- */

struct guest_end {
	struct egress_mux m;
	int listener, stop;
	pthread_t thread;
};

static void *guest_thread(void *arg)
{
	struct guest_end *g = arg;
	egress_mux_run(&g->m, g->listener, g->stop);
	egress_mux_free(&g->m);
	return NULL;
}

/* The host's far end: echoes what it reads, until EOF. */
static void *echo(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[8192];
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		poll(&p, 1, -1);
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EAGAIN)
			continue;
		if (r <= 0)
			break;
		for (ssize_t off = 0; off < r;) {
			/* The relay may have closed its end: EPIPE, never SIGPIPE. */
			ssize_t w = send(fd, buf + off, (size_t)(r - off), MSG_NOSIGNAL);
			if (w < 0 && errno == EAGAIN) {
				struct pollfd q = {.fd = fd, .events = POLLOUT};
				poll(&q, 1, -1);
				continue;
			}
			if (w <= 0)
				goto out;
			off += w;
		}
	}
out:
	close(fd);
	return NULL;
}

static int open_echo(void *ctx, unsigned id)
{
	(void)ctx;
	(void)id;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -errno;
	pthread_t t;
	pthread_create(&t, NULL, echo, (void *)(intptr_t)sv[1]);
	pthread_detach(t);
	return sv[0];
}

/* Writes all of out while reading back as much, the way a client of a
 * slow echo must (or both sides' buffers fill). */
static void echo_round_trip(int c, const uint8_t *out, uint8_t *back, size_t n)
{
	size_t sent = 0, got = 0;
	while (got < n) {
		struct pollfd p = {.fd = c, .events = POLLIN | (sent < n ? POLLOUT : 0)};
		assert_true(poll(&p, 1, 30000) > 0);
		if (p.revents & POLLOUT && sent < n) {
			ssize_t w = write(c, out + sent, n - sent > 50000 ? 50000 : n - sent);
			if (w > 0)
				sent += (size_t)w;
		}
		if (p.revents & POLLIN) {
			ssize_t r = read(c, back + got, n - got);
			assert_true(r > 0);
			got += (size_t)r;
		}
	}
}

static void streams_relay_both_ways_within_the_window(void **state)
{
	(void)state;
	int port[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, port),
			 0);
	struct guest_end *g = calloc(1, sizeof *g);
	g->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof a;
	assert_int_equal(bind(g->listener, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(g->listener, 8), 0);
	assert_int_equal(getsockname(g->listener, (struct sockaddr *)&a, &alen), 0);
	g->stop = eventfd(0, EFD_CLOEXEC);
	egress_mux_init(&g->m, port[0], NULL, NULL, true);
	assert_int_equal(pthread_create(&g->thread, NULL, guest_thread, g), 0);
	struct egress_relay *host;
	assert_int_equal(egress_relay_start(port[1], open_echo, NULL, &host), 0);

	/* Three connections at once, each many windows long. */
	enum { CONNS = 3, SIZE = 1 << 20 };
	uint8_t *out = malloc(SIZE), *back = malloc(SIZE);
	for (size_t i = 0; i < SIZE; i++)
		out[i] = (uint8_t)(i * 7 + i / 251);
	int c[CONNS];
	for (int k = 0; k < CONNS; k++) {
		c[k] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_int_equal(connect(c[k], (struct sockaddr *)&a, sizeof a), 0);
	}
	for (int k = 0; k < CONNS; k++) {
		memset(back, 0, SIZE);
		echo_round_trip(c[k], out, back, SIZE);
		assert_memory_equal(out, back, SIZE);
	}
	/* A close on the guest's side reaches the host's far end, which
	 * closes, and that close comes back as EOF. */
	shutdown(c[0], SHUT_WR);
	char x;
	assert_int_equal(read(c[0], &x, 1), 0);
	for (int k = 0; k < CONNS; k++)
		close(c[k]);
	char why[160] = "unset";
	egress_relay_stop(host, why, sizeof why);
	assert_string_equal(why, "");
	uint64_t one = 1;
	assert_int_equal(write(g->stop, &one, sizeof one), (ssize_t)sizeof one);
	pthread_join(g->thread, NULL);
	close(g->listener);
	close(g->stop);
	close(port[0]);
	free(g);
	free(out);
	free(back);
}

/* A bad frame from the guest ends the host's relay (fail closed) and
 * says why; the host goes on. */
static void a_bad_frame_ends_the_relay(void **state)
{
	(void)state;
	int port[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, port), 0);
	struct opened o;
	memset(&o, 0, sizeof o);
	struct egress_relay *host;
	assert_int_equal(egress_relay_start(port[1], open_pair, &o, &host), 0);
	struct egress_frame f = {.type = EGRESS_DATA, .id = 7, .len = 3};
	assert_int_equal(write(port[0], &f, sizeof f), (ssize_t)sizeof f);
	/* The relay closes its end of the port as it ends: EOF here. */
	char c;
	struct pollfd p = {.fd = port[0], .events = POLLIN};
	assert_true(poll(&p, 1, 30000) > 0);
	ssize_t r = read(port[0], &c, 1);
	assert_true(r <= 0);
	char why[160] = "";
	egress_relay_stop(host, why, sizeof why);
	assert_non_null(strstr(why, "DATA for stream 7, which is not open"));
	close(port[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_frames_reach_the_stream),
		cmocka_unit_test(bad_frames_end_the_port_with_a_reason),
		cmocka_unit_test(data_past_the_credit_is_refused),
		cmocka_unit_test(the_guest_refuses_an_open),
		cmocka_unit_test(streams_relay_both_ways_within_the_window),
		cmocka_unit_test(a_bad_frame_ends_the_relay),
	};
	return cmocka_run_group_tests_name("microvm egress port", tests, NULL, NULL);
}
