/* The end of a chunked request body (RFC 9112 7.1), found by the egress
 * proxy's interceptor so that it forwards one request and nothing past it:
 * a program cannot slip a second request, unchecked and without the rules
 * of the secret's host, behind the first one's body. It counts; it never
 * changes a byte. Pure; the fuzzer drives it. */
#ifndef AJ_EGRESS_CHUNKED_H
#define AJ_EGRESS_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum chunked_state {
	CHUNK_SIZE,      /* hex digits of a chunk's size */
	CHUNK_EXT,       /* ";ext" up to the CR */
	CHUNK_SIZE_LF,   /* the LF after the size line's CR */
	CHUNK_DATA,      /* left bytes of data */
	CHUNK_DATA_CR,   /* the CRLF after a chunk's data */
	CHUNK_DATA_LF,
	CHUNK_TRAILER,   /* a trailer line (or the last, empty one) starts */
	CHUNK_TRAILER_LINE,
	CHUNK_TRAILER_LF,
	CHUNK_END_LF,    /* the LF of the empty line that ends the body */
	CHUNK_DONE,
	CHUNK_BAD,
};

struct chunked {
	enum chunked_state st;
	uint64_t left;     /* CHUNK_DATA: bytes of data left; CHUNK_SIZE: the size so far */
	unsigned digits;   /* of the size, at most 15 */
	size_t line;       /* bytes of the current trailer or extension line */
};

/* Reads buf[0..len): the number of bytes that belong to the body (all of
 * them, or fewer when the body ends within). c->st is CHUNK_DONE once it
 * ended, CHUNK_BAD when the framing is broken. */
size_t chunked_scan(struct chunked *c, const char *buf, size_t len);

#endif
