/* libFuzzer target: the HTTP client's reply parser (src/docker/http.c): the
 * status line, headers, Content-Length or chunked bodies and the upgrade
 * reply, as the Docker Engine's socket (or something posing as it) sends
 * them. The input is what arrives on the socket; a socketpair carries it. */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "src/docker/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 200000)
		return 0;
	bool upgrade = data[0] & 1;
	data++;
	size--;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	/* The reply waits in the socket; the request the client writes goes
	 * to the other end, read by nobody (its buffer holds it). */
	int big = 1 << 20;
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	if (write(sv[1], data, size) != (ssize_t)size) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	shutdown(sv[1], SHUT_WR);
	struct http_conn c;
	memset(&c, 0, sizeof c);
	c.fd = sv[0];
	c.socket_path = "fuzz";
	struct aj_error err = {0};
	if (upgrade) {
		http_upgrade(&c, "/attach", 1000, &err);
	} else {
		struct http_reply r = {0};
		if (http_call(&c, "GET", "/version", NULL, 0, 1000, &r, &err) == 0)
			http_reply_free(&r);
	}
	/* A failed call closes the connection itself (fd -1). */
	if (c.fd >= 0)
		close(c.fd);
	close(sv[1]);
	return 0;
}
