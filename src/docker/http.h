/* HTTP/1.1 over the Docker Engine's unix socket: just what the Engine API
 * needs (Content-Length and chunked bodies, a streamed request body, and the
 * 101 upgrade of attach), no more.
 *
 * Why not libcurl: the command is linked static-pie so that a process-tier
 * run starts in about 1 ms, and Debian's libcurl cannot be linked statically
 * (no static GSSAPI); linked dynamically, its ~20 libraries cost 3.5 ms on
 * every start of `agentjail`, whatever the tier (measured here). And attach
 * hijacks the connection, which needs the raw socket anyway. */
#ifndef AJ_DOCKER_HTTP_H
#define AJ_DOCKER_HTTP_H

#include <stddef.h>

#include "../core/internal.h"

struct http_conn {
	int fd;
	const char *socket_path;  /* for messages */
	char buf[16384];          /* bytes read past what was consumed */
	size_t pos, len;
};

struct http_reply {
	int status;
	char *body;  /* NUL-terminated, malloc'ed; "" when there was none */
	size_t len;
};

/* Largest reply body accepted: Engine API replies are small JSON; a daemon
 * (or something posing as one) must not make the caller allocate without
 * bound. */
#define HTTP_MAX_BODY (16u << 20)

int http_connect(struct http_conn *c, const char *socket_path, int timeout_ms,
		 struct aj_error *err);
void http_close(struct http_conn *c);

/* One request and its reply on a kept-alive connection. body may be NULL;
 * timeout_ms bounds the whole exchange. 0 or -errno with err set. */
int http_call(struct http_conn *c, const char *method, const char *path, const char *body,
	      size_t body_len, int timeout_ms, struct http_reply *r, struct aj_error *err);

/* The same with the request body read from body_fd until EOF and sent
 * chunked (an image's tar stream). */
int http_call_stream(struct http_conn *c, const char *method, const char *path, int body_fd,
		     const char *content_type, int timeout_ms, struct http_reply *r,
		     struct aj_error *err);

/* Sends a request that asks to upgrade the connection to a raw stream
 * (Docker's attach) and reads the 101 reply. Afterwards c->fd is the stream,
 * and c->buf[pos..len) holds stream bytes that came with the reply. */
int http_upgrade(struct http_conn *c, const char *path, int timeout_ms, struct aj_error *err);

void http_reply_free(struct http_reply *r);

#endif
