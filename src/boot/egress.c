/* The egress proxy's unix socket for boot.py's sandboxes (see egress.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../linux/report.h"
#include "egress.h"

#define SOCKET_NAME "proxy.sock"

int boot_egress_socket(const char *dir, uid_t uid, gid_t gid, struct aj_error *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if ((size_t)snprintf(a.sun_path, sizeof a.sun_path, "%s/" SOCKET_NAME, dir) >=
	    sizeof a.sun_path)
		return error_set(err, -ENAMETOOLONG,
				 "egress: %s/" SOCKET_NAME " is longer than a unix socket's path "
				 "may be (%zu bytes): choose a shorter state_dir",
				 dir, sizeof a.sun_path - 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return error_set(err, -errno, "egress: socket: %s", errno_name(errno));
	const char *step = "bind";
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    /* connect needs write permission on the socket: the sandbox's uid
	     * alone, as the directory (no other user of the host gets in). */
	    (step = "chown", chown(a.sun_path, uid, gid) < 0) ||
	    (step = "chmod", chmod(a.sun_path, 0600) < 0) || (step = "chown", chown(dir, uid, gid) < 0) ||
	    (step = "listen", listen(fd, 128) < 0)) {
		int e = errno;
		close(fd);
		return error_set(err, -e, "egress: %s %s: %s", step, a.sun_path, errno_name(e));
	}
	return fd;
}

void boot_egress_remove(const char *dir)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/" SOCKET_NAME, dir);
	unlink(path);
	rmdir(dir);
}
