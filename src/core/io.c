#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

/* The one loop of write_full, send_full and read_full: n bytes, retried on
 * EINTR; 0, -EIO when the other end stops short of them, or -errno. */
enum full_way { FULL_WRITE, FULL_SEND, FULL_READ };

static int full(int fd, char *p, size_t n, enum full_way way)
{
	while (n > 0) {
		ssize_t k = way == FULL_READ   ? read(fd, p, n)
			    : way == FULL_SEND ? send(fd, p, n, MSG_NOSIGNAL)
					       : write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int write_full(int fd, const void *buf, size_t n)
{
	return full(fd, (char *)buf, n, FULL_WRITE); /* only read from */
}

int send_full(int fd, const void *buf, size_t n)
{
	return full(fd, (char *)buf, n, FULL_SEND); /* only read from */
}

int read_full(int fd, void *buf, size_t n)
{
	return full(fd, buf, n, FULL_READ);
}

ssize_t read_small_file(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t k;
	do
		k = read(fd, buf, n - 1);
	while (k < 0 && errno == EINTR);
	int e = errno;
	close(fd);
	if (k < 0)
		return -e;
	buf[k] = '\0';
	return k;
}

int read_fd_up_to(int fd, size_t max, char **out, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	while (n <= max) {
		if (n == cap) {
			char *b = realloc(buf, cap * 2 + 1);
			if (!b) {
				free(buf);
				return -ENOMEM;
			}
			buf = b;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}
