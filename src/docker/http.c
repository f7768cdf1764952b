/* HTTP/1.1 over a unix socket, for the Docker Engine API (see http.h). */
#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../linux/report.h"
#include "http.h"

/* Every wait on the daemon has a deadline: a hung or overloaded daemon gives
 * a sandbox_error, never a caller stuck forever. */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		double left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, (int)left + 1);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

int http_connect(struct http_conn *c, const char *socket_path, int timeout_ms,
		 struct aj_error *err)
{
	memset(c, 0, sizeof *c);
	c->socket_path = socket_path;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(socket_path) >= sizeof a.sun_path) {
		c->fd = -1;
		return error_set(err, -ENAMETOOLONG, "docker: socket path too long: %s",
				 socket_path);
	}
	memcpy(a.sun_path, socket_path, strlen(socket_path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		return error_set(err, -errno, "docker: socket: %s", errno_name(errno));
	double deadline = now_ms() + timeout_ms;
	int e = 0;
	/* A unix socket whose listen backlog is full answers EAGAIN and does
	 * not go on connecting in the background: try again until the
	 * deadline. */
	for (;;) {
		if (connect(c->fd, (struct sockaddr *)&a, sizeof a) == 0) {
			e = 0;
			break;
		}
		e = errno;
		if ((e == EAGAIN || e == EINTR) && now_ms() < deadline) {
			struct timespec ts = {0, 5 * 1000000L};
			nanosleep(&ts, NULL);
			continue;
		}
		if (e == EAGAIN)
			e = ETIMEDOUT;
		break;
	}
	if (e) {
		close(c->fd);
		c->fd = -1;
		return error_set(err, -e,
				 "docker: cannot reach the engine at %s: connect: %s%s", socket_path,
				 errno_name(e),
				 e == ENOENT || e == ECONNREFUSED ? " (is dockerd running?)"
				 : e == EACCES ? " (the caller may not use the docker socket)"
					       : "");
	}
	return 0;
}

void http_close(struct http_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

void http_reply_free(struct http_reply *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

static int send_all(struct http_conn *c, const char *p, size_t n, double deadline,
		    struct aj_error *err)
{
	while (n) {
		/* MSG_NOSIGNAL: a daemon that hangs up must not SIGPIPE the caller. */
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		int rc = w < 0 && (errno == EAGAIN || errno == EINTR) ? wait_fd(c->fd, POLLOUT, deadline)
								       : -(w < 0 ? errno : EPIPE);
		if (rc)
			return error_set(err, rc, "docker: sending to %s: %s", c->socket_path,
					 errno_name(-rc));
	}
	return 0;
}

/* Refills the buffer (after moving unread bytes to its start). 0, or -errno
 * (-EPIPE at end of stream). */
static int refill_buffer(struct http_conn *c, double deadline)
{
	if (c->pos > 0) {
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
	}
	if (c->len == sizeof c->buf)
		return -E2BIG;
	for (;;) {
		ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
		if (r > 0) {
			c->len += (size_t)r;
			return 0;
		}
		if (r == 0)
			return -EPIPE;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		int rc = wait_fd(c->fd, POLLIN, deadline);
		if (rc)
			return rc;
	}
}

static int read_error(struct http_conn *c, int rc, const char *what, struct aj_error *err)
{
	return error_set(err, rc, "docker: reading %s from %s: %s", what, c->socket_path,
			 rc == -EPIPE	 ? "the daemon closed the connection"
			 : rc == -E2BIG ? "line too long"
					: errno_name(-rc));
}

/* One line (CRLF-terminated) into line[], without the CRLF. */
static int read_line(struct http_conn *c, char *line, size_t n, double deadline,
		     struct aj_error *err)
{
	for (;;) {
		char *start = c->buf + c->pos;
		char *nl = memchr(start, '\n', c->len - c->pos);
		if (nl) {
			size_t l = (size_t)(nl - start);
			if (l && start[l - 1] == '\r')
				l--;
			if (l >= n)
				return read_error(c, -E2BIG, "a header", err);
			memcpy(line, start, l);
			line[l] = 0;
			c->pos += (size_t)(nl - start) + 1;
			return 0;
		}
		int rc = refill_buffer(c, deadline);
		if (rc)
			return read_error(c, rc, "a reply", err);
	}
}

/* Appends exactly n body bytes (or up to EOF when n is SIZE_MAX). */
static int read_body(struct http_conn *c, struct http_reply *r, size_t n, double deadline,
		     struct aj_error *err)
{
	while (n) {
		if (c->pos == c->len) {
			int rc = refill_buffer(c, deadline);
			if (rc == -EPIPE && n == SIZE_MAX)
				return 0;
			if (rc)
				return read_error(c, rc, "a reply body", err);
		}
		size_t take = c->len - c->pos;
		if (take > n)
			take = n;
		if (r->len + take > HTTP_MAX_BODY)
			return error_set(err, -EFBIG, "docker: a reply from %s passed %u MiB",
					 c->socket_path, HTTP_MAX_BODY >> 20);
		char *b = realloc(r->body, r->len + take + 1);
		if (!b)
			return error_set(err, -ENOMEM, "docker: out of memory");
		r->body = b;
		memcpy(r->body + r->len, c->buf + c->pos, take);
		r->len += take;
		r->body[r->len] = 0;
		c->pos += take;
		if (n != SIZE_MAX)
			n -= take;
	}
	return 0;
}

static int read_chunked(struct http_conn *c, struct http_reply *r, double deadline,
			struct aj_error *err)
{
	char line[256];
	for (;;) {
		int rc = read_line(c, line, sizeof line, deadline, err);
		if (rc)
			return rc;
		char *end;
		errno = 0;
		unsigned long long size = strtoull(line, &end, 16);
		if (end == line || errno || size > HTTP_MAX_BODY)
			return error_set(err, -EPROTO, "docker: bad chunk size from %s: %.40s",
					 c->socket_path, line);
		if (size == 0)
			break;
		if ((rc = read_body(c, r, (size_t)size, deadline, err)) ||
		    (rc = read_line(c, line, sizeof line, deadline, err)))
			return rc;
	}
	/* Trailers, up to the empty line. */
	do {
		int rc = read_line(c, line, sizeof line, deadline, err);
		if (rc)
			return rc;
	} while (line[0]);
	return 0;
}

struct head {
	int status;
	long long content_length; /* -1 if absent */
	int chunked;
	int close;
};

static int read_head(struct http_conn *c, struct head *h, double deadline, struct aj_error *err)
{
	char line[4096];
	int rc = read_line(c, line, sizeof line, deadline, err);
	if (rc)
		return rc;
	int minor;
	if (sscanf(line, "HTTP/1.%d %d", &minor, &h->status) != 2)
		return error_set(err, -EPROTO,
				 "docker: %s does not speak HTTP (is it the Docker socket?): %.60s",
				 c->socket_path, line);
	h->content_length = -1;
	h->chunked = 0;
	h->close = minor == 0;
	for (;;) {
		if ((rc = read_line(c, line, sizeof line, deadline, err)))
			return rc;
		if (!line[0])
			return 0;
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = 0;
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!strcasecmp(line, "Content-Length"))
			h->content_length = strtoll(v, NULL, 10);
		else if (!strcasecmp(line, "Transfer-Encoding") && strcasestr(v, "chunked"))
			h->chunked = 1;
		else if (!strcasecmp(line, "Connection") && strcasestr(v, "close"))
			h->close = 1;
	}
}

static int read_reply(struct http_conn *c, struct http_reply *r, double deadline,
		      struct aj_error *err)
{
	struct head h;
	int rc;
	memset(r, 0, sizeof *r);
	/* 1xx interim replies carry no body. */
	do {
		if ((rc = read_head(c, &h, deadline, err)))
			return rc;
	} while (h.status >= 100 && h.status < 200);
	r->status = h.status;
	if (h.status == 204 || h.status == 304)
		rc = 0;
	else if (h.chunked)
		rc = read_chunked(c, r, deadline, err);
	else if (h.content_length >= 0)
		rc = h.content_length > HTTP_MAX_BODY
			     ? error_set(err, -EFBIG, "docker: a reply from %s passed %u MiB",
					 c->socket_path, HTTP_MAX_BODY >> 20)
			     : read_body(c, r, (size_t)h.content_length, deadline, err);
	else
		rc = read_body(c, r, SIZE_MAX, deadline, err);
	if (!rc && !r->body && !(r->body = calloc(1, 1)))
		rc = error_set(err, -ENOMEM, "docker: out of memory");
	if (rc) {
		http_reply_free(r);
		return rc;
	}
	bool to_eof = h.status != 204 && h.status != 304 && !h.chunked && h.content_length < 0;
	if (h.close || to_eof)
		http_close(c); /* the next call fails cleanly instead of hanging */
	return 0;
}

static int send_head(struct http_conn *c, const char *method, const char *path,
		     const char *extra, double deadline, struct aj_error *err)
{
	if (c->fd < 0)
		return error_set(err, -ENOTCONN, "docker: the connection to %s was closed",
				 c->socket_path);
	char head[4096];
	int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: docker\r\n%s\r\n", method,
			 path, extra);
	if (n < 0 || (size_t)n >= sizeof head)
		return error_set(err, -ENAMETOOLONG, "docker: request too long: %s %.60s", method,
				 path);
	return send_all(c, head, (size_t)n, deadline, err);
}

int http_call(struct http_conn *c, const char *method, const char *path, const char *body,
	      size_t body_len, int timeout_ms, struct http_reply *r, struct aj_error *err)
{
	double deadline = now_ms() + timeout_ms;
	char extra[128];
	snprintf(extra, sizeof extra, "%sContent-Length: %zu\r\n",
		 body ? "Content-Type: application/json\r\n" : "", body ? body_len : 0);
	int rc = send_head(c, method, path, extra, deadline, err);
	if (!rc && body)
		rc = send_all(c, body, body_len, deadline, err);
	if (!rc)
		rc = read_reply(c, r, deadline, err);
	/* After a failure the connection's state is unknown (a reply may
	 * still come): no later call may reuse it. */
	if (rc)
		http_close(c);
	return rc;
}

int http_call_stream(struct http_conn *c, const char *method, const char *path, int body_fd,
		     const char *content_type, int timeout_ms, struct http_reply *r,
		     struct aj_error *err)
{
	double deadline = now_ms() + timeout_ms;
	char extra[160];
	snprintf(extra, sizeof extra, "Content-Type: %s\r\nTransfer-Encoding: chunked\r\n",
		 content_type);
	int rc = send_head(c, method, path, extra, deadline, err);
	enum { CHUNK = 1 << 16 };
	char *chunk = rc ? NULL : malloc(CHUNK);
	if (!rc && !chunk)
		rc = error_set(err, -ENOMEM, "docker: out of memory");
	while (!rc) {
		ssize_t n = read(body_fd, chunk, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = error_set(err, -errno, "docker: reading the upload: %s",
				       errno_name(errno));
			break;
		}
		char size[24];
		int sl = snprintf(size, sizeof size, "%zx\r\n", (size_t)n);
		if ((rc = send_all(c, size, (size_t)sl, deadline, err)) ||
		    (n && (rc = send_all(c, chunk, (size_t)n, deadline, err))) ||
		    (rc = send_all(c, "\r\n", 2, deadline, err)) || n == 0)
			break;
	}
	free(chunk);
	if (!rc)
		rc = read_reply(c, r, deadline, err);
	if (rc)
		http_close(c);
	return rc;
}

int http_upgrade(struct http_conn *c, const char *path, int timeout_ms, struct aj_error *err)
{
	double deadline = now_ms() + timeout_ms;
	int rc = send_head(c, "POST", path,
			   "Content-Length: 0\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n", deadline,
			   err);
	struct head h;
	if (!rc)
		rc = read_head(c, &h, deadline, err);
	if (!rc && h.status != 101) {
		/* An error reply: its message says why (no such container...). */
		struct http_reply body = {0};
		if (h.content_length > 0 && h.content_length < 4096)
			read_body(c, &body, (size_t)h.content_length, deadline, err);
		rc = error_set(err, -EPROTO, "docker: attach: HTTP %d %s", h.status,
			       body.body ? body.body : "");
		http_reply_free(&body);
	}
	return rc;
}
