/* The attach stream (see stream.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>

#include "stream.h"

size_t docker_demux_next(struct docker_demux *d, const char *p, size_t n,
			 struct docker_piece *piece)
{
	piece->len = 0;
	if (d->left == 0) {
		size_t take = sizeof d->head - d->head_len;
		if (take > n)
			take = n;
		memcpy(d->head + d->head_len, p, take);
		d->head_len += take;
		if (d->head_len == sizeof d->head) {
			d->head_len = 0;
			d->stream = d->head[0];
			d->left = (uint32_t)d->head[4] << 24 | (uint32_t)d->head[5] << 16 |
				  (uint32_t)d->head[6] << 8 | d->head[7];
		}
		return take;
	}
	size_t take = d->left < n ? d->left : n;
	piece->stream = d->stream;
	piece->data = p;
	piece->len = take;
	d->left -= (uint32_t)take;
	return take;
}

bool docker_demux_feed(struct docker_demux *d, const char *p, size_t n, struct capture *out,
		       struct capture *err)
{
	bool dropped = false;
	while (n) {
		struct docker_piece piece;
		size_t used = docker_demux_next(d, p, n, &piece);
		if (piece.len && piece.stream == 1)
			dropped |= capture_append(out, piece.data, piece.len);
		else if (piece.len && piece.stream == 2)
			dropped |= capture_append(err, piece.data, piece.len);
		p += used;
		n -= used;
	}
	return dropped;
}

