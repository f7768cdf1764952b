/* The egress door's listener (see egress_listen.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../core/contract.h"
#include "egress_listen.h"

/* A new namespace's (or VM's) loopback is down; the kernel gives it
 * 127.0.0.1/8 and ::1 as it comes up. Only loopback: there is no other
 * interface, so still no route out. */
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
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (!rc && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int egress_listen_loopback(int flags, const char **step)
{
	int rc = loopback_up();
	if (rc) {
		*step = "bring the loopback up";
		return rc;
	}
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (l < 0) {
		*step = "socket";
		return -errno;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(CONTRACT_EGRESS_PORT),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	*step = "bind 127.0.0.1:" CONTRACT_EGRESS_PORT_TEXT;
	if (bind(l, (struct sockaddr *)&a, sizeof a) == 0) {
		*step = "listen";
		if (listen(l, 128) == 0)
			return l;
	}
	rc = -errno;
	close(l);
	return rc;
}
