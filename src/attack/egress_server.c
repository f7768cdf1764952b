/* The egress cases' origin server (see egress_server.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../core/locked.h"
#include "egress_server.h"

#define MAX_CONNS 64
#define SEEN_MAX (64u << 10)

struct egress_server {
	int listener, stop_fd;
	pthread_t thread;
	pthread_mutex_t lock;
	unsigned accepted, closed;
	char seen[SEEN_MAX + 1];
	size_t seen_len;
	pthread_t conn_threads[MAX_CONNS];
	int conn_fds[MAX_CONNS];
	unsigned n_conns;
};

struct conn_arg {
	struct egress_server *s;
	int fd;
};

static void note(struct egress_server *s, const char *b, size_t n)
{
	pthread_mutex_lock(&s->lock);
	if (n > SEEN_MAX - s->seen_len)
		n = SEEN_MAX - s->seen_len;
	memcpy(s->seen + s->seen_len, b, n);
	s->seen_len += n;
	s->seen[s->seen_len] = 0;
	pthread_mutex_unlock(&s->lock);
}

/* Waits for fd (events) or the stop; true if fd is ready. */
static bool ready(struct egress_server *s, int fd, short events, int ms)
{
	struct pollfd pf[2] = {{.fd = fd, .events = events}, {.fd = s->stop_fd, .events = POLLIN}};
	return poll(pf, 2, ms) > 0 && !pf[1].revents && pf[0].revents;
}

static bool origin_send_all(struct egress_server *s, int fd, const char *b, size_t n)
{
	while (n) {
		if (!ready(s, fd, POLLOUT, 30000))
			return false;
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno != EAGAIN)
			return false;
		if (w > 0) {
			b += w;
			n -= (size_t)w;
		}
	}
	return true;
}

static void answer(struct egress_server *s, int fd, const char *path, size_t body_bytes)
{
	char head[256], chunk[1024];
	memset(chunk, 'x', sizeof chunk);
	unsigned long n;
	if (sscanf(path, "/big/%lu", &n) == 1) {
		int hn = snprintf(head, sizeof head,
				  "HTTP/1.1 200 OK\r\nContent-Length: %lu\r\nConnection: close\r\n\r\n", n);
		if (!origin_send_all(s, fd, head, (size_t)hn))
			return;
		static char big[64 << 10];
		memset(big, 'x', sizeof big);
		while (n) {
			size_t k = n < sizeof big ? n : sizeof big;
			if (!origin_send_all(s, fd, big, k))
				return;
			n -= k;
		}
	} else if (!strcmp(path, "/slow")) {
		static const char h[] = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
		if (!origin_send_all(s, fd, h, sizeof h - 1))
			return;
		for (int i = 0; i < 300; i++) {
			if (!origin_send_all(s, fd, chunk, sizeof chunk))
				return;
			if (ready(s, fd, POLLIN | POLLRDHUP, 100))
				return; /* the peer closed (or sent more: not expected) */
		}
	} else {
		char body[600];
		int bn = body_bytes ? snprintf(body, sizeof body, "got %zu\n", body_bytes)
				    : snprintf(body, sizeof body, "egress-ok %.500s\n", path);
		int hn = snprintf(head, sizeof head,
				  "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", bn);
		if (origin_send_all(s, fd, head, (size_t)hn))
			origin_send_all(s, fd, body, (size_t)bn);
	}
}

static void *conn_main(void *arg)
{
	struct conn_arg a = *(struct conn_arg *)arg;
	free(arg);
	char buf[8192];
	size_t have = 0;
	char *end = NULL;
	while (!end && have < sizeof buf - 1 && ready(a.s, a.fd, POLLIN, 30000)) {
		ssize_t r = recv(a.fd, buf + have, sizeof buf - 1 - have, MSG_DONTWAIT);
		if (r <= 0)
			break;
		note(a.s, buf + have, (size_t)r);
		have += (size_t)r;
		buf[have] = 0;
		end = strstr(buf, "\r\n\r\n");
	}
	if (end) {
		char method[16] = "", path[512] = "";
		sscanf(buf, "%15s %511s", method, path);
		size_t body = 0, want = 0;
		const char *cl = strcasestr(buf, "\r\ncontent-length:");
		if (cl)
			want = strtoul(cl + 17, NULL, 10);
		body = have - (size_t)(end + 4 - buf);
		while (body < want && ready(a.s, a.fd, POLLIN, 30000)) {
			ssize_t r = recv(a.fd, buf, sizeof buf, MSG_DONTWAIT);
			if (r <= 0)
				break;
			body += (size_t)r;
		}
		answer(a.s, a.fd, path, strcmp(method, "POST") ? 0 : body);
	}
	shutdown(a.fd, SHUT_WR);
	pthread_mutex_lock(&a.s->lock);
	a.s->closed++;
	pthread_mutex_unlock(&a.s->lock);
	return NULL;
}

static void *origin_accept_main(void *arg)
{
	struct egress_server *s = arg;
	while (ready(s, s->listener, POLLIN, -1)) {
		int fd = accept4(s->listener, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&s->lock);
		struct conn_arg *a = malloc(sizeof *a);
		if (s->n_conns == MAX_CONNS || !a) {
			free(a);
			close(fd);
		} else {
			*a = (struct conn_arg){s, fd};
			s->accepted++;
			s->conn_fds[s->n_conns] = fd;
			if (pthread_create(&s->conn_threads[s->n_conns], NULL, conn_main, a)) {
				free(a);
				close(fd);
			} else {
				s->n_conns++;
			}
		}
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

int egress_server_start(struct egress_server **out, int *port)
{
	struct egress_server *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->stop_fd = eventfd(0, EFD_CLOEXEC);
	s->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int rc = 0;
	if (s->stop_fd < 0 || s->listener < 0 || bind(s->listener, (struct sockaddr *)&a, sizeof a) ||
	    listen(s->listener, 64) || getsockname(s->listener, (struct sockaddr *)&a, &len))
		rc = -errno;
	else if ((rc = -pthread_create(&s->thread, NULL, origin_accept_main, s)) == 0) {
		*port = ntohs(a.sin_port);
		*out = s;
		return 0;
	}
	if (s->listener >= 0)
		close(s->listener);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	free(s);
	return rc;
}

unsigned egress_server_connections(struct egress_server *s)
{
	return read_locked(&s->lock, &s->accepted);
}

unsigned egress_server_closed(struct egress_server *s)
{
	return read_locked(&s->lock, &s->closed);
}

bool egress_server_saw(struct egress_server *s, const char *needle)
{
	pthread_mutex_lock(&s->lock);
	bool yes = strstr(s->seen, needle) != NULL;
	pthread_mutex_unlock(&s->lock);
	return yes;
}

void egress_server_stop(struct egress_server *s)
{
	if (!s)
		return;
	uint64_t one = 1;
	(void)!write(s->stop_fd, &one, sizeof one);
	pthread_join(s->thread, NULL);
	for (unsigned i = 0; i < s->n_conns; i++) {
		pthread_join(s->conn_threads[i], NULL);
		close(s->conn_fds[i]);
	}
	close(s->listener);
	close(s->stop_fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
