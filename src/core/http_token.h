/* RFC 9110's token characters (a method, a header name), the one rule the
 * egress proxy's head parser (src/egress/http_head.c) and the secrets'
 * checks (secret.c) apply. libc only; the fuzzers drive both users. */
#ifndef AJ_CORE_HTTP_TOKEN_H
#define AJ_CORE_HTTP_TOKEN_H

#include <stdbool.h>
#include <string.h>

static inline bool http_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

#endif
