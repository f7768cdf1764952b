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
	if ((rc = write_full(fd, &h, sizeof h)) || (alen && (rc = write_full(fd, a, alen))) ||
	    (blen && (rc = write_full(fd, b, blen))))
		return rc;
	return 0;
}

/* Reads exactly n bytes before the deadline. */
static int read_exact(int fd, void *buf, size_t n, double deadline_ms, int cancel_fd)
{
	char *p = buf;
	while (n > 0) {
		double left = deadline_ms - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd[2] = {{.fd = fd, .events = POLLIN}, {.fd = cancel_fd, .events = POLLIN}};
		int r = poll(pfd, 2, (int)left + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (pfd[1].revents)
			return -ECANCELED;
		if (r == 0)
			continue;
		ssize_t got = read(fd, p, n);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -EPIPE;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int channel_recv(int fd, double deadline_ms, int cancel_fd, uint32_t *type, void **payload,
		 uint32_t *len)
{
	struct vm_frame_header h;
	int rc = read_exact(fd, &h, sizeof h, deadline_ms, cancel_fd);
	if (rc)
		return rc;
	if (h.length > VM_MAX_FRAME)
		return -EPROTO;
	char *buf = malloc(h.length + 1);
	if (!buf)
		return -ENOMEM;
	if ((rc = read_exact(fd, buf, h.length, deadline_ms, cancel_fd))) {
		free(buf);
		return rc;
	}
	buf[h.length] = '\0';
	*type = h.type;
	*payload = buf;
	*len = h.length;
	return 0;
}
