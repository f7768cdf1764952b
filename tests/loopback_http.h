/* A loopback HTTP server a test starts itself (127.0.0.1, a port the kernel
 * chooses), for the egress tests: it answers every request with 200 and a
 * body naming the token and the path asked for, and counts the requests.
 * Header-only, like harness.h. */
#ifndef AJ_TEST_LOOPBACK_HTTP_H
#define AJ_TEST_LOOPBACK_HTTP_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

struct loopback_http {
	int listener, stop;
	uint16_t port;
	char token[64];
	atomic_int requests;
	pthread_t thread;
};

static inline void loopback_http_answer(struct loopback_http *h, int c)
{
	char req[4096];
	size_t n = 0;
	struct pollfd p = {.fd = c, .events = POLLIN};
	/* The head, bounded in size and time: a test's client is quick. */
	while (n < sizeof req - 1 && poll(&p, 1, 10000) > 0) {
		ssize_t r = read(c, req + n, sizeof req - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[n] = '\0';
	char path[256] = "?";
	sscanf(req, "%*s %255s", path);
	char body[512], out[1024];
	int bl = snprintf(body, sizeof body, "loopback %s %s\n", h->token, path);
	int ol = snprintf(out, sizeof out,
			  "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
			  "Connection: close\r\n\r\n%s",
			  bl, body);
	(void)!write(c, out, (size_t)ol);
	atomic_fetch_add(&h->requests, 1);
}

static inline void *loopback_http_serve(void *arg)
{
	struct loopback_http *h = arg;
	for (;;) {
		struct pollfd p[2] = {{.fd = h->listener, .events = POLLIN},
				      {.fd = h->stop, .events = POLLIN}};
		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			return NULL;
		int c = accept4(h->listener, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		loopback_http_answer(h, c);
		close(c);
	}
}

/* 0, or -1 if the machine has no loopback to listen on. */
static inline int loopback_http_start(struct loopback_http *h, const char *token)
{
	memset(h, 0, sizeof *h);
	snprintf(h->token, sizeof h->token, "%s", token);
	h->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	if (h->listener < 0 || bind(h->listener, (struct sockaddr *)&a, sizeof a) < 0 ||
	    listen(h->listener, 16) < 0 ||
	    getsockname(h->listener, (struct sockaddr *)&a, &len) < 0)
		return -1;
	h->port = ntohs(a.sin_port);
	h->stop = eventfd(0, EFD_CLOEXEC);
	if (h->stop < 0 || pthread_create(&h->thread, NULL, loopback_http_serve, h))
		return -1;
	return 0;
}

static inline void loopback_http_stop(struct loopback_http *h)
{
	uint64_t one = 1;
	(void)!write(h->stop, &one, sizeof one);
	pthread_join(h->thread, NULL);
	close(h->listener);
	close(h->stop);
}

#endif
