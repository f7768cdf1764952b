/* The jail's door to the egress proxy (see egress_door.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress_door.h"
#include "egress_listen.h"

static int send_fd(int sock, int fd)
{
	char byte = 'L';
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof u);
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			   .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int egress_door_open(int sock, struct setup_error *e)
{
	const char *step = "";
	int l = egress_listen_loopback(0, &step);
	int rc = l < 0 ? l : send_fd(sock, l);
	if (l >= 0)
		close(l); /* the proxy holds it now: nothing in here does */
	close(sock);
	if (l < 0)
		return setup_fail(e, -l, "egress: %s", step);
	return rc ? setup_fail(e, -rc, "egress: hand the listener to the proxy") : 0;
}
