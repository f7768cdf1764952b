/* The host's fixtures for the hostile programs (see fixtures.h). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <errno.h>
#include <stdlib.h>

#include "fixtures.h"
#include "programs.h"

int hostile_tcp_listener(const char *ip, int *port)
{
	errno = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t al = sizeof a;
	if (fd < 0 || inet_pton(AF_INET, ip, &a.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&a, &al)) {
		int e = errno ? errno : EINVAL; /* inet_pton sets none */
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

int hostile_unix_listener(const char *path)
{
	struct sockaddr_un u = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof u.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(u.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* 0666: anyone may connect, as to a host service's socket; only the
	 * sandbox's boundary may stop the program. */
	if (fd < 0 || bind(fd, (struct sockaddr *)&u, sizeof u) || chmod(path, 0666) ||
	    listen(fd, 64)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int hostile_drain(int fd)
{
	int got = 0, c;
	while (fd >= 0 && (c = accept(fd, NULL, NULL)) >= 0) {
		close(c);
		got = 1;
	}
	return got;
}

int hostile_secret_make(char *dir, char *file, size_t file_n, const char *token)
{
	if (!mkdtemp(dir)) /* 0700 */
		return -1;
	snprintf(file, file_n, "%s/secret", dir);
	int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, token, strlen(token));
	int e = errno;
	close(fd);
	if (w != (ssize_t)strlen(token)) {
		errno = w < 0 ? e : EIO;
		return -1;
	}
	return 0;
}

int hostile_markers_take(const char *marker, const char *token, const char *cwd, char *first,
			 size_t first_n)
{
	int found = 0;
	if (first && first_n)
		first[0] = '\0';
	for (size_t i = 0;; i++) {
		const char *d = hostile_marker_dirs[i] ? hostile_marker_dirs[i] : cwd;
		if (!d)
			break;
		char p[PATH_MAX + 128];
		snprintf(p, sizeof p, "%s/%s%s", strcmp(d, "/") ? d : "", marker, token);
		struct stat st;
		if (lstat(p, &st) == 0) {
			if (!found++ && first)
				snprintf(first, first_n, "%s", p);
			unlink(p);
		}
		if (!hostile_marker_dirs[i])
			break;
	}
	return found;
}
