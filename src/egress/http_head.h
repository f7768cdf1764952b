/* An HTTP/1.x request head as the egress proxy reads it from the sandbox:
 * CONNECT host:port (a tunnel), or a forward-proxy request in absolute form
 * (GET http://host[:port]/path). Strict: anything a server and the proxy
 * could read two ways is refused (obsolete line folding, bare CR or LF, a
 * Content-Length beside a Transfer-Encoding, two Content-Lengths, a Host
 * that disagrees with the target), so that what the rules checked is what
 * the server receives. Pure; the fuzzer drives it. */
#ifndef AJ_EGRESS_HTTP_HEAD_H
#define AJ_EGRESS_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest head the proxy buffers. */
#define HTTP_HEAD_MAX 16384

enum http_head_result {
	HTTP_HEAD_DONE,     /* a whole head: *used bytes */
	HTTP_HEAD_MORE,     /* no end of head yet (and under the cap) */
	HTTP_HEAD_INVALID,  /* refuse with 400 (why says why) */
	HTTP_HEAD_TOO_LARGE,/* past HTTP_HEAD_MAX: 431 */
};

struct http_head {
	bool connect;              /* CONNECT; else a forward request */
	char method[16];
	char host[256];            /* a name or an IP literal (IPv6 without brackets) */
	uint16_t port;
	size_t path_at, path_len;  /* forward: the origin-form path in the buffer */
	size_t headers_at;         /* the first header line in the buffer */
	bool has_body_length;      /* a Content-Length or chunked body follows */
	uint64_t content_length;   /* with a Content-Length: its value */
	bool chunked;              /* Transfer-Encoding: chunked, exactly */
	bool expect_continue;      /* Expect: 100-continue */
};

enum http_head_result http_head_parse(const char *buf, size_t len, size_t *used,
				      struct http_head *h, char *why, size_t n);

/* A request in origin form (GET /path HTTP/1.1), as a program sends it
 * inside a TLS tunnel the proxy intercepts (intercept.c): the target must
 * start with '/', a Host header is required and names h->host (and
 * h->port, dflt_port when it names none); a Transfer-Encoding other than
 * exactly "chunked" is refused, as the proxy must find the body's end. */
enum http_head_result http_origin_parse(const char *buf, size_t len, size_t *used,
					struct http_head *h, uint16_t dflt_port, char *why, size_t n);

#endif
