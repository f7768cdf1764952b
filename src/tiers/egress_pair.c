/* The host's end of the jail's egress door (see egress_pair.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../egress/proxy.h"
#include "egress_pair.h"

int egress_pair_open(struct egress_proxy *p, int *child_fd, struct aj_error *err)
{
	*child_fd = -1;
	if (!p)
		return 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return error_set(err, -errno, "egress: socketpair: %s", strerror(errno));
	int rc = egress_proxy_add_listener_from(p, sv[0]);
	if (rc) {
		close(sv[1]);
		return error_set(err, rc, "egress: the proxy cannot take the sandbox's door: %s",
				 strerror(-rc));
	}
	*child_fd = sv[1];
	return 0;
}
