/* The egress proxy's forward-request rewrite (src/egress/forward.c): every
 * head the parser accepts, rewritten as the origin server gets it. The
 * output must fit the bound the proxy allocates, be one head (origin-form
 * request line, headers, one blank line at its end only), carry exactly one
 * Host and none of the proxy's own headers, and end the connection after
 * this request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/egress/forward.h"
#include "src/egress/http_head.h"

#include "head_lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct http_head h;
	size_t used = 0;
	char why[200];
	if (http_head_parse(buf, size, &used, &h, why, sizeof why) != HTTP_HEAD_DONE || h.connect)
		return 0;
	char *out = malloc(used + EGRESS_FORWARD_EXTRA);
	if (!out)
		return 0;
	/* Poisoned past the head so that a write beyond n is seen below. */
	memset(out, 0xa5, used + EGRESS_FORWARD_EXTRA);
	size_t n = egress_forward_head(buf, used, &h, out);
	size_t ml = strlen(h.method);
	const char *end = n >= 4 ? memmem(out, n, "\r\n\r\n", 4) : NULL;
	if (n > used + EGRESS_FORWARD_EXTRA || n < ml + 2 || memcmp(out, h.method, ml) ||
	    out[ml] != ' ' || out[ml + 1] != '/' || end != out + n - 4 ||
	    lines_named(out, n - 2, "host:") != 1 || lines_named(out, n - 2, "connection:") != 1 ||
	    lines_named(out, n - 2, "proxy-connection:") != 0 ||
	    lines_named(out, n - 2, "proxy-authorization:") != 0 || lines_named(out, n - 2, "keep-alive:") != 0 ||
	    memchr(out, 0, n))
		__builtin_trap();
	free(out);
	return 0;
}
