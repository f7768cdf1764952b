#ifndef AJ_SERVE_GUNZIP_H
#define AJ_SERVE_GUNZIP_H

#include <stddef.h>

/* A request body sent with Content-Encoding: gzip, inflated into *out (a
 * malloc'ed buffer of *out_len bytes, NUL after them) by zlib. cap bounds
 * what it may inflate to: past it the answer is -EFBIG (a small body that
 * inflates past every limit is a bomb, refused before it is held whole).
 * -EINVAL with why filled for what is not gzip or ends early; -ENOMEM. */
int http_gunzip(const char *in, size_t n, size_t cap, char **out, size_t *out_len, char *why,
		size_t why_n);

#endif
