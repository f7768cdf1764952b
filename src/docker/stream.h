/* The attach stream of a container without a tty: stdout and stderr
 * multiplexed in frames (an 8-byte header: stream, 0, 0, 0, size as 32-bit
 * big-endian; then the bytes), and the report boot.py ends stderr with. */
#ifndef AJ_DOCKER_STREAM_H
#define AJ_DOCKER_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/internal.h"
#include "../linux/report.h"
#include "../linux/supervise.h"

struct docker_demux {
	unsigned char head[8];
	size_t head_len;
	int stream;       /* of the frame being read: 1 stdout, 2 stderr */
	uint32_t left;    /* its bytes still to come */
};

/* Payload bytes of one stream, as the demux found them. */
struct docker_piece {
	int stream;       /* 1 stdout, 2 stderr; another: not the program's */
	const char *data;
	size_t len;       /* 0: the bytes taken were a header's */
};

/* Takes the next piece of n (> 0) bytes of the stream, in any split:
 * returns how many bytes it used; *piece says which stream's payload they
 * were, if any. */
size_t docker_demux_next(struct docker_demux *d, const char *p, size_t n,
			 struct docker_piece *piece);

/* Feeds n bytes of the stream, in any split. Returns true once a capture
 * had to drop bytes (its cap was passed). A frame for another stream
 * (stdin echo) is skipped. */
bool docker_demux_feed(struct docker_demux *d, const char *p, size_t n, struct capture *out,
		       struct capture *err);

#endif
