/* The forward-proxy request as the origin server gets it (src/egress/
 * forward.c), from a head http_head_parse accepted: origin-form target, the
 * proxy's own headers dropped, a Host naming the target, one request per
 * connection. Pure; the fuzzer drives it. */
#ifndef AJ_EGRESS_FORWARD_H
#define AJ_EGRESS_FORWARD_H

#include <stddef.h>

#include "http_head.h"

/* What the rewrite may add to a head: a Host line and Connection: close. */
#define EGRESS_FORWARD_EXTRA 320

/* Writes the head (buf's first used bytes, parsed into h) into out, which
 * holds used + EGRESS_FORWARD_EXTRA bytes; returns its length. */
size_t egress_forward_head(const char *buf, size_t used, const struct http_head *h, char *out);

#endif
