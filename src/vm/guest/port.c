/* The channel to the host: the virtio-serial port boot.c opens, carrying
 * the frames of ../protocol.h. */
#include <errno.h>
#include <unistd.h>

#include "agent.h"

int port_fd = -1;

/* Reads exactly n bytes from the port. A read of 0 means no host is
 * connected (virtio_console's answer while the host end is closed, as it is
 * between the snapshot and a restore's connect): wait and try again. The
 * agent has nothing to do but wait for the host, so no bound here. */
int port_read(void *buf, size_t n)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = read(port_fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) {
			sleep_ms(5);
			continue;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* One frame: header, then the parts. A write blocks while no host is
 * connected, which is what we want. */
int send_frame(uint32_t type, const struct iovec *parts, int count)
{
	struct vm_frame_header h = {.type = type, .length = 0};
	for (int i = 0; i < count; i++)
		h.length += (uint32_t)parts[i].iov_len;
	int rc = write_full(port_fd, &h, sizeof h);
	for (int i = 0; i < count && rc == 0; i++)
		rc = write_full(port_fd, parts[i].iov_base, parts[i].iov_len);
	return rc;
}
