/* Base64 (RFC 4648, with padding): how files and images travel in the
 * session protocol's JSON frames and in --json / MCP output. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t len, size_t *out_len)
{
	const unsigned char *p = data;
	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	size_t n = (len + 2) / 3 * 4;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? alphabet[v & 63] : '=';
	}
	*o = '\0';
	if (out_len)
		*out_len = n;
	return out;
}

/* Each byte's value, or -1 for one outside the alphabet: a table, since a
 * checkpoint's state crosses as tens of megabytes of it. */
static signed char values[256];
static pthread_once_t values_once = PTHREAD_ONCE_INIT;

static void values_make(void)
{
	memset(values, -1, sizeof values);
	for (int i = 0; i < 64; i++)
		values[(unsigned char)alphabet[i]] = (signed char)i;
}

int base64_decode(const char *s, size_t len, unsigned char **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	if (len % 4)
		return -EINVAL;
	pthread_once(&values_once, values_make);
	size_t pad = len && s[len - 1] == '=' ? (len > 1 && s[len - 2] == '=' ? 2 : 1) : 0;
	size_t n = len / 4 * 3 - pad;
	unsigned char *buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		bool bad = false;
		for (int k = 0; k < 4; k++) {
			/* '=' only as the padding its length said, at the end. */
			bool is_pad = u[i + k] == '=' && i + 4 == len && k >= 4 - (int)pad;
			v[k] = is_pad ? 0 : values[u[i + k]];
			bad |= v[k] < 0;
		}
		if (bad) {
			free(buf);
			return -EINVAL;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		if (o + 3 <= n) {
			buf[o++] = (unsigned char)(w >> 16);
			buf[o++] = (unsigned char)(w >> 8);
			buf[o++] = (unsigned char)w;
		} else {
			unsigned char b[3] = {(unsigned char)(w >> 16), (unsigned char)(w >> 8),
					      (unsigned char)w};
			for (int k = 0; k < 3 && o < n; k++)
				buf[o++] = b[k];
		}
	}
	buf[n] = '\0';
	*out = buf;
	*out_len = n;
	return 0;
}
