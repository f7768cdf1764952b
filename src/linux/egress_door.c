/* The jail's door to the egress proxy (see egress_door.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../core/contract.h"
#include "egress_door.h"

/* The namespace's loopback comes down; the proxy's door is on it. Only
 * loopback: the namespace has no other interface, so no route out. */
static int loopback_up(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	memcpy(ifr.ifr_name, "lo", 3);
	int rc = 0;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		rc = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (!rc && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

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
	int rc = loopback_up();
	if (rc) {
		close(sock);
		return setup_fail(e, -rc, "egress: bring the loopback up");
	}
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0) {
		rc = setup_fail(e, errno, "egress: socket");
		close(sock);
		return rc;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(CONTRACT_EGRESS_PORT),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(l, (struct sockaddr *)&a, sizeof a) < 0)
		rc = setup_fail(e, errno, "egress: bind 127.0.0.1:%d", CONTRACT_EGRESS_PORT);
	else if (listen(l, 128) < 0)
		rc = setup_fail(e, errno, "egress: listen");
	else if ((rc = send_fd(sock, l)))
		rc = setup_fail(e, -rc, "egress: hand the listener to the proxy");
	close(l); /* the proxy holds it now: nothing in here does */
	close(sock);
	return rc;
}
