/* A loopback HTTP server a test starts itself (127.0.0.1, a port the kernel
 * chooses), for the egress cases: every request gets BODY, and the server
 * counts them. */
#ifndef AJ_TEST_EGRESS_SERVER_H
#define AJ_TEST_EGRESS_SERVER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct egress_server {
	int fd;
	int port;
	char body[64];
	atomic_int served;
	pthread_t thread;
};

static void *egress_server_loop(void *arg)
{
	struct egress_server *s = arg;
	for (;;) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			return NULL; /* closed: the test is done */
		char req[4096];
		size_t len = 0;
		ssize_t n;
		while (len < sizeof req - 1 && (n = read(c, req + len, sizeof req - 1 - len)) > 0) {
			len += (size_t)n;
			req[len] = 0;
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		char reply[256];
		int rl = snprintf(reply, sizeof reply,
				  "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
				  "%zu\r\nConnection: close\r\n\r\n%s",
				  strlen(s->body), s->body);
		if (strstr(req, "\r\n\r\n")) {
			atomic_fetch_add(&s->served, 1);
			if (write(c, reply, (size_t)rl) < 0)
				perror("egress server: write");
		}
		close(c);
	}
}

static inline void egress_server_start(struct egress_server *s, const char *body)
{
	memset(s, 0, sizeof *s);
	snprintf(s->body, sizeof s->body, "%s", body);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s->fd, 16), 0);
	assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->thread, NULL, egress_server_loop, s), 0);
}

static inline void egress_server_stop(struct egress_server *s)
{
	/* shutdown wakes the accept; then the thread ends. */
	shutdown(s->fd, SHUT_RDWR);
	pthread_join(s->thread, NULL);
	close(s->fd);
}

#endif
