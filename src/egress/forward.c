/* The forward request head (see forward.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "forward.h"

/* The headers a proxy consumes (RFC 9110 7.6.1): they were meant for it,
 * not for the origin. */
static bool hop_by_hop(const char *line, size_t len)
{
	static const char *const names[] = {"connection:", "proxy-connection:", "keep-alive:",
					    "proxy-authorization:", "proxy-authenticate:"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		size_t n = strlen(names[i]);
		if (len >= n && !strncasecmp(line, names[i], n))
			return true;
	}
	return false;
}

size_t egress_forward_head(const char *buf, size_t used, const struct http_head *h, char *out)
{
	const char *line_end = memmem(buf, used, "\r\n", 2);
	const char *version = line_end - 8; /* "HTTP/1.x": the parser checked it */
	size_t n = strlen(h->method);
	memcpy(out, h->method, n);
	out[n++] = ' ';
	if (h->path_len) {
		memcpy(out + n, buf + h->path_at, h->path_len);
		n += h->path_len;
	} else {
		out[n++] = '/';
	}
	out[n++] = ' ';
	memcpy(out + n, version, 10); /* "HTTP/1.x\r\n" */
	n += 10;
	bool host_seen = false;
	for (size_t at = h->headers_at; at + 2 <= used;) {
		const char *l = buf + at;
		const char *e = memmem(l, used - at, "\r\n", 2);
		size_t len = (size_t)(e - l);
		if (len == 0)
			break;
		if (!hop_by_hop(l, len)) {
			memcpy(out + n, l, len + 2);
			n += len + 2;
		}
		host_seen |= len >= 5 && !strncasecmp(l, "host:", 5);
		at += len + 2;
	}
	/* A request in absolute form may come without Host; an HTTP/1.1
	 * origin refuses one without it, and the target's is the one the
	 * rules checked (RFC 9112 3.2.2). (A Host that disagreed was refused
	 * by the parser.) */
	if (!host_seen) {
		bool v6 = strchr(h->host, ':') != NULL;
		n += (size_t)sprintf(out + n, "Host: %s%s%s", v6 ? "[" : "", h->host, v6 ? "]" : "");
		if (h->port != 80)
			n += (size_t)sprintf(out + n, ":%u", h->port);
		memcpy(out + n, "\r\n", 2);
		n += 2;
	}
	/* One request per connection: a client reusing it for another host
	 * would reach this one. */
	memcpy(out + n, "Connection: close\r\n\r\n", 21);
	return n + 21;
}
