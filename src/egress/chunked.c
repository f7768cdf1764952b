/* A chunked body's end (see chunked.h). */
#include "chunked.h"

/* A trailer or extension line longer than this is refused: the proxy
 * holds nothing of it, but a line without end would keep a thread. */
#define LINE_MAX_BYTES 8192

static int chunk_hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* One byte of the framing (every state but CHUNK_DATA): whether it was
 * taken (false: the framing is broken, c->st is CHUNK_BAD). */
static bool chunk_byte(struct chunked *c, char ch)
{
	switch (c->st) {
	case CHUNK_SIZE: {
		int h = chunk_hex(ch);
		if (h >= 0 && c->digits < 15) {
			c->left = c->left * 16 + (uint64_t)h;
			c->digits++;
		} else if (h < 0 && c->digits && ch == ';') {
			c->st = CHUNK_EXT;
			c->line = 0;
		} else if (h < 0 && c->digits && ch == '\r') {
			c->st = CHUNK_SIZE_LF;
		} else {
			c->st = CHUNK_BAD;
			return false;
		}
		return true;
	}
	case CHUNK_EXT:
		if (ch == '\r')
			c->st = CHUNK_SIZE_LF;
		else if (ch == '\n' || ++c->line > LINE_MAX_BYTES)
			c->st = CHUNK_BAD;
		return c->st != CHUNK_BAD;
	case CHUNK_SIZE_LF:
		if (ch != '\n') {
			c->st = CHUNK_BAD;
			return false;
		}
		c->digits = 0;
		c->st = c->left ? CHUNK_DATA : CHUNK_TRAILER;
		return true;
	case CHUNK_DATA_CR:
		if (ch != '\r') {
			c->st = CHUNK_BAD;
			return false;
		}
		c->st = CHUNK_DATA_LF;
		return true;
	case CHUNK_TRAILER_LF:
		if (ch != '\n') {
			c->st = CHUNK_BAD;
			return false;
		}
		c->st = CHUNK_TRAILER;
		return true;
	case CHUNK_DATA_LF:
		if (ch != '\n') {
			c->st = CHUNK_BAD;
			return false;
		}
		c->st = CHUNK_SIZE;
		c->left = 0;
		return true;
	case CHUNK_TRAILER:
		if (ch == '\r') {
			c->st = CHUNK_END_LF;
		} else if (ch == '\n') {
			c->st = CHUNK_BAD;
			return false;
		} else {
			c->st = CHUNK_TRAILER_LINE;
			c->line = 1;
		}
		return true;
	case CHUNK_TRAILER_LINE:
		if (ch == '\r') {
			c->st = CHUNK_TRAILER_LF; /* its LF, then the next line */
		} else if (ch == '\n' || ++c->line > LINE_MAX_BYTES) {
			c->st = CHUNK_BAD;
			return false;
		}
		return true;
	case CHUNK_END_LF:
		if (ch != '\n') {
			c->st = CHUNK_BAD;
			return false;
		}
		c->st = CHUNK_DONE;
		return true;
	default:
		return false;
	}
}

size_t chunked_scan(struct chunked *c, const char *buf, size_t len)
{
	size_t i = 0;
	while (i < len && c->st != CHUNK_DONE && c->st != CHUNK_BAD) {
		if (c->st == CHUNK_DATA) {
			size_t take = len - i;
			if ((uint64_t)take > c->left)
				take = (size_t)c->left;
			i += take;
			c->left -= take;
			if (!c->left)
				c->st = CHUNK_DATA_CR;
		} else if (chunk_byte(c, buf[i])) {
			i++;
		}
	}
	return i;
}
