/* Content-Encoding: gzip on a request body (gunzip.h), by zlib. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gunzip.h"

int http_gunzip(const char *in, size_t n, size_t cap, char **out, size_t *out_len, char *why,
		size_t why_n)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	*out = NULL;
	*out_len = 0;
	/* 16 + MAX_WBITS: the gzip wrapper only (its header and CRC checked),
	 * not a zlib or raw stream under the gzip name. */
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return -ENOMEM;
	size_t size = n * 4 + 64, len = 0;
	if (size > cap + 1)
		size = cap + 1;
	char *buf = malloc(size + 1);
	int rc = buf ? 0 : -ENOMEM;
	z.next_in = (Bytef *)in;
	/* A body is bounded by serve's caps, far below zlib's uInt. */
	z.avail_in = n > UINT_MAX ? UINT_MAX : (uInt)n;
	while (!rc) {
		if (len == size) {
			if (size > cap) {
				rc = -EFBIG;
				snprintf(why, why_n, "the gzip body inflates past %zu bytes, the most "
					 "a file may be here", cap);
				break;
			}
			size_t grown = size * 2 > cap + 1 ? cap + 1 : size * 2;
			char *nb = realloc(buf, grown + 1);
			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
			size = grown;
		}
		z.next_out = (Bytef *)buf + len;
		z.avail_out = (uInt)(size - len);
		int zr = inflate(&z, Z_NO_FLUSH);
		len = size - z.avail_out;
		if (zr == Z_STREAM_END) {
			if (len > cap) {
				rc = -EFBIG;
				snprintf(why, why_n, "the gzip body inflates past %zu bytes, the most "
					 "a file may be here", cap);
			} else if (z.avail_in) {
				rc = -EINVAL;
				snprintf(why, why_n, "%u bytes follow the gzip stream's end",
					 z.avail_in);
			}
			break;
		}
		if (zr == Z_BUF_ERROR && z.avail_out) {
			rc = -EINVAL;
			snprintf(why, why_n, "the gzip body ends before its stream does");
		} else if (zr != Z_OK && zr != Z_BUF_ERROR) {
			rc = zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
			snprintf(why, why_n, "the body is not gzip: %s", z.msg ? z.msg : "corrupt");
		}
	}
	inflateEnd(&z);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}
