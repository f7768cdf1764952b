/* An HTTP/1.x request head (see http_head.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/http_token.h"
#include "http_head.h"

static enum http_head_result refuse_head(char *why, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static enum http_head_result refuse_head(char *why, size_t n, const char *fmt, ...)
{
	if (why && n) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return HTTP_HEAD_INVALID;
}

/* host[:port] or [v6]:port into h; a default port when none is written
 * (need_port: CONNECT must name one). */
static int authority(const char *s, size_t len, uint16_t dflt, bool need_port, struct http_head *h)
{
	const char *host = s, *colon = NULL;
	size_t hlen;
	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (!close)
			return -1;
		host = s + 1;
		hlen = (size_t)(close - host);
		if (close + 1 < s + len) {
			if (close[1] != ':')
				return -1;
			colon = close + 1;
		}
	} else {
		colon = memchr(s, ':', len);
		hlen = colon ? (size_t)(colon - s) : len;
	}
	if (hlen == 0 || hlen >= sizeof h->host)
		return -1;
	for (size_t i = 0; i < hlen; i++) {
		char c = host[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.' || (s[0] == '[' && c == ':')))
			return -1;
	}
	memcpy(h->host, host, hlen);
	h->host[hlen] = 0;
	if (!colon) {
		if (need_port)
			return -1;
		h->port = dflt;
		return 0;
	}
	const char *p = colon + 1, *end = s + len;
	if (p == end || end - p > 5)
		return -1;
	unsigned long v = 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535)
		return -1;
	h->port = (uint16_t)v;
	return 0;
}

/* The header lines from first to the head's end (its last CRLF CRLF). */
static enum http_head_result parse_headers(const char *first, const char *end,
					   struct http_head *h, bool origin, uint16_t dflt_port,
					   char *why, size_t n)
{
	int content_length = 0;
	bool chunked = false, host_seen = false;
	for (const char *l = first; l < end - 2;) {
		const char *le = memmem(l, (size_t)(end - l), "\r\n", 2);
		if (*l == ' ' || *l == '\t')
			return refuse_head(why, n, "obsolete line folding in a header");
		const char *colon = memchr(l, ':', (size_t)(le - l));
		if (!colon || colon == l)
			return refuse_head(why, n, "a header line without a name");
		for (const char *p = l; p < colon; p++)
			if (!http_tchar(*p))
				return refuse_head(why, n, "a header name is not a token");
		size_t nl = (size_t)(colon - l);
		const char *v = colon + 1;
		while (v < le && (*v == ' ' || *v == '\t'))
			v++;
		size_t vl = (size_t)(le - v);
		while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			vl--;
		if (nl == 14 && !strncasecmp(l, "Content-Length", 14)) {
			if (content_length++)
				return refuse_head(why, n, "two Content-Length headers");
			uint64_t cl = 0;
			if (!vl || vl > 15)
				return refuse_head(why, n, "Content-Length is not a number");
			for (size_t i = 0; i < vl; i++) {
				if (v[i] < '0' || v[i] > '9')
					return refuse_head(why, n, "Content-Length is not a number");
				cl = cl * 10 + (uint64_t)(v[i] - '0');
			}
			h->content_length = cl;
		} else if (nl == 17 && !strncasecmp(l, "Transfer-Encoding", 17)) {
			chunked = true;
			if (origin && (vl != 7 || strncasecmp(v, "chunked", 7)))
				return refuse_head(why, n, "a Transfer-Encoding other than chunked");
		} else if (nl == 6 && !strncasecmp(l, "Expect", 6)) {
			h->expect_continue = vl == 12 && !strncasecmp(v, "100-continue", 12);
		} else if (nl == 4 && !strncasecmp(l, "Host", 4) && origin) {
			if (host_seen)
				return refuse_head(why, n, "two Host headers");
			host_seen = true;
			if (authority(v, vl, dflt_port, false, h))
				return refuse_head(why, n, "the Host header is not a host name or address");
		} else if (nl == 4 && !strncasecmp(l, "Host", 4)) {
			if (host_seen)
				return refuse_head(why, n, "two Host headers");
			host_seen = true;
			/* The server must see the host the rules checked. */
			struct http_head hh = {0};
			if (authority(v, vl, h->connect ? h->port : 80, false, &hh) ||
			    strcasecmp(hh.host, h->host) || (!h->connect && hh.port != h->port))
				return refuse_head(why, n, "the Host header names another host than the target");
		}
		l = le + 2;
	}
	if (content_length && chunked)
		return refuse_head(why, n, "both Content-Length and Transfer-Encoding");
	if (origin && !host_seen)
		return refuse_head(why, n, "no Host header");
	h->has_body_length = content_length || chunked;
	h->chunked = chunked;
	return HTTP_HEAD_DONE;
}

static enum http_head_result parse(const char *buf, size_t len, size_t *used,
				   struct http_head *h, bool origin, uint16_t dflt_port, char *why,
				   size_t n)
{
	memset(h, 0, sizeof *h);
	const char *end = NULL;
	for (size_t i = 0; i + 3 < len && i + 4 <= HTTP_HEAD_MAX; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
			end = buf + i + 4;
			break;
		}
	if (!end)
		return len >= HTTP_HEAD_MAX ? HTTP_HEAD_TOO_LARGE : HTTP_HEAD_MORE;
	/* No NUL, and a CR only before LF, a LF only after CR. */
	for (const char *p = buf; p < end; p++) {
		if (!*p)
			return refuse_head(why, n, "a NUL byte in the request head");
		if ((*p == '\r' && p[1] != '\n') || (*p == '\n' && (p == buf || p[-1] != '\r')))
			return refuse_head(why, n, "a bare CR or LF in the request head");
	}
	/* The request line: METHOD SP TARGET SP HTTP/1.x CRLF. */
	const char *line_end = memmem(buf, (size_t)(end - buf), "\r\n", 2);
	const char *sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
	if (!sp1 || sp1 == buf || (size_t)(sp1 - buf) >= sizeof h->method)
		return refuse_head(why, n, "no method in the request line");
	for (const char *p = buf; p < sp1; p++)
		if (!http_tchar(*p))
			return refuse_head(why, n, "the method is not a token");
	memcpy(h->method, buf, (size_t)(sp1 - buf));
	const char *target = sp1 + 1;
	const char *sp2 = memchr(target, ' ', (size_t)(line_end - target));
	if (!sp2 || sp2 == target)
		return refuse_head(why, n, "no target in the request line");
	size_t vlen = (size_t)(line_end - sp2 - 1);
	if (vlen != 8 || (memcmp(sp2 + 1, "HTTP/1.1", 8) && memcmp(sp2 + 1, "HTTP/1.0", 8)))
		return refuse_head(why, n, "not HTTP/1.0 or HTTP/1.1");
	size_t tlen = (size_t)(sp2 - target);
	if (origin) {
		if (target[0] != '/')
			return refuse_head(why, n, "a request inside the tunnel must be in origin form "
					   "(GET /path)");
		for (const char *p = target; p < sp2; p++)
			if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
				return refuse_head(why, n, "a control or non-ASCII byte in the target");
		h->path_at = (size_t)(target - buf);
		h->path_len = tlen;
	} else if (!strcmp(h->method, "CONNECT")) {
		h->connect = true;
		if (authority(target, tlen, 0, true, h))
			return refuse_head(why, n, "CONNECT's target is not host:port");
	} else {
		if (tlen < 8 || strncasecmp(target, "http://", 7))
			return refuse_head(why, n, "a proxied request's target must be an absolute http:// URL "
					   "(https goes through CONNECT)");
		const char *auth = target + 7;
		const char *slash = memchr(auth, '/', tlen - 7);
		size_t alen = slash ? (size_t)(slash - auth) : tlen - 7;
		if (memchr(auth, '@', alen))
			return refuse_head(why, n, "user information in the URL");
		if (authority(auth, alen, 80, false, h))
			return refuse_head(why, n, "the URL's host is not a host name or address");
		h->path_at = slash ? (size_t)(slash - buf) : 0;
		h->path_len = slash ? (size_t)(sp2 - slash) : 0;
	}
	h->headers_at = (size_t)(line_end + 2 - buf);
	enum http_head_result hr = parse_headers(line_end + 2, end, h, origin, dflt_port, why, n);
	if (hr != HTTP_HEAD_DONE)
		return hr;
	*used = (size_t)(end - buf);
	return HTTP_HEAD_DONE;
}

enum http_head_result http_head_parse(const char *buf, size_t len, size_t *used,
				      struct http_head *h, char *why, size_t n)
{
	return parse(buf, len, used, h, false, 0, why, n);
}

enum http_head_result http_origin_parse(const char *buf, size_t len, size_t *used,
					struct http_head *h, uint16_t dflt_port, char *why, size_t n)
{
	return parse(buf, len, used, h, true, dflt_port, why, n);
}
