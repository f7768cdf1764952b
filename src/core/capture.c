#include <stdlib.h>
#include <string.h>

#include "internal.h"

void capture_init(struct capture *c, size_t limit)
{
	memset(c, 0, sizeof *c);
	c->limit = limit;
}

bool capture_append(struct capture *c, const char *data, size_t n)
{
	size_t room = c->limit - c->len;
	size_t take = n < room ? n : room;

	if (take > 0 && c->len + take > c->alloc) {
		/* Grow geometrically but never past the cap: a flood costs at
		 * most `limit` bytes of the supervisor's memory. */
		size_t want = c->alloc ? c->alloc * 2 : 4096;
		while (want < c->len + take)
			want *= 2;
		if (want > c->limit)
			want = c->limit;
		char *p = realloc(c->buf, want + 1);
		if (!p) {
			c->truncated = true;
			return true;
		}
		c->buf = p;
		c->alloc = want;
	}
	if (take > 0) {
		memcpy(c->buf + c->len, data, take);
		c->len += take;
	}
	if (take < n)
		c->truncated = true;
	return take < n;
}

void capture_append_tail(struct capture *c, const char *data, size_t n)
{
	if (n >= c->limit) {
		/* All that was kept, and the start of this, fall off. */
		c->truncated |= c->len > 0 || n > c->limit;
		data += n - c->limit;
		n = c->limit;
		c->len = 0;
	} else if (c->len + n > c->limit) {
		size_t drop = c->len + n - c->limit;
		memmove(c->buf, c->buf + drop, c->len - drop);
		c->len -= drop;
		c->scanned = c->scanned > drop ? c->scanned - drop : 0;
		c->truncated = true;
	}
	capture_append(c, data, n);
}

char *capture_take(struct capture *c, size_t *len)
{
	char *out = c->buf;
	if (!out)
		out = calloc(1, 1);
	else
		out[c->len] = '\0';
	if (len)
		*len = out ? c->len : 0;
	c->buf = NULL;
	c->len = c->alloc = c->scanned = 0;
	return out;
}

void capture_free(struct capture *c)
{
	free(c->buf);
	c->buf = NULL;
	c->len = c->alloc = c->scanned = 0;
}
