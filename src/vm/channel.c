#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../core/internal.h"
#include "channel.h"
#include "protocol.h"

int channel_connect(const char *path, double deadline_ms, int alive_pidfd)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof a.sun_path)
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, strlen(path) + 1);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
			return fd;
		int e = errno;
		close(fd);
		/* QEMU creates the socket a moment after it starts; if it died
		 * instead, say so now rather than at the deadline. */
		if ((e != ENOENT && e != ECONNREFUSED) || now_ms() >= deadline_ms)
			return -e;
		struct pollfd alive = {.fd = alive_pidfd, .events = POLLIN};
		if (alive_pidfd >= 0 && poll(&alive, 1, 0) > 0)
			return -ECHILD;
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

int channel_send(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	struct vm_frame_header h = {.type = type, .length = (uint32_t)(alen + blen)};
	int rc;
	/* QEMU's socket: a VM that is gone is -EPIPE, not SIGPIPE. */
	if ((rc = send_full(fd, &h, sizeof h)) || (alen && (rc = send_full(fd, a, alen))) ||
	    (blen && (rc = send_full(fd, b, blen))))
		return rc;
	return 0;
}

/* One read from QEMU's socket before the deadline: what read() gave (at
 * least one byte), 0 at the end of the stream, or -errno. */
struct socket_reader {
	int fd;
	double deadline_ms;
	int cancel_fd;
};

static ssize_t read_socket(void *ctx, void *buf, size_t n)
{
	const struct socket_reader *s = ctx;
	for (;;) {
		double left = s->deadline_ms - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd[2] = {{.fd = s->fd, .events = POLLIN},
					{.fd = s->cancel_fd, .events = POLLIN}};
		int r = poll(pfd, 2, (int)left + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (pfd[1].revents)
			return -ECANCELED;
		if (r == 0)
			continue;
		ssize_t got = read(s->fd, buf, n);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return -errno;
		return got;
	}
}

/* Reads exactly n bytes, in as many pieces as the reads bring. */
static int read_exact(channel_read_fn *read_some, void *ctx, void *buf, size_t n)
{
	char *p = buf;
	while (n > 0) {
		ssize_t got = read_some(ctx, p, n);
		if (got < 0)
			return (int)got;
		if (got == 0)
			return -EPIPE;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int channel_decode(channel_read_fn *read_some, void *ctx, uint32_t *type, void **payload,
		   uint32_t *len)
{
	struct vm_frame_header h;
	int rc = read_exact(read_some, ctx, &h, sizeof h);
	if (rc)
		return rc;
	/* The guest is not trusted: a length it claims is only allocated
	 * up to the largest frame either side ever sends. */
	if (h.length > VM_MAX_FRAME)
		return -EPROTO;
	char *buf = malloc(h.length + 1);
	if (!buf)
		return -ENOMEM;
	if ((rc = read_exact(read_some, ctx, buf, h.length))) {
		free(buf);
		return rc;
	}
	buf[h.length] = '\0';
	*type = h.type;
	*payload = buf;
	*len = h.length;
	return 0;
}

int channel_recv(int fd, double deadline_ms, int cancel_fd, uint32_t *type, void **payload,
		 uint32_t *len)
{
	struct socket_reader s = {.fd = fd, .deadline_ms = deadline_ms, .cancel_fd = cancel_fd};
	return channel_decode(read_socket, &s, type, payload, len);
}
