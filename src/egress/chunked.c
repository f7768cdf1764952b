/* A chunked body's end (see chunked.h). */
#include "chunked.h"

/* A trailer or extension line longer than this is refused: the proxy
 * holds nothing of it, but a line without end would keep a thread. */
#define LINE_MAX_BYTES 8192

static int hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

size_t chunked_scan(struct chunked *c, const char *buf, size_t len)
{
	size_t i = 0;
	while (i < len && c->st != CHUNK_DONE && c->st != CHUNK_BAD) {
		char ch = buf[i];
		switch (c->st) {
		case CHUNK_SIZE: {
			int h = hex(ch);
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
				continue;
			}
			i++;
			break;
		}
		case CHUNK_EXT:
			if (ch == '\r')
				c->st = CHUNK_SIZE_LF;
			else if (ch == '\n' || ++c->line > LINE_MAX_BYTES)
				c->st = CHUNK_BAD;
			if (c->st != CHUNK_BAD)
				i++;
			break;
		case CHUNK_SIZE_LF:
			if (ch != '\n') {
				c->st = CHUNK_BAD;
				continue;
			}
			i++;
			c->digits = 0;
			c->st = c->left ? CHUNK_DATA : CHUNK_TRAILER;
			break;
		case CHUNK_DATA: {
			size_t take = len - i;
			if ((uint64_t)take > c->left)
				take = (size_t)c->left;
			i += take;
			c->left -= take;
			if (!c->left)
				c->st = CHUNK_DATA_CR;
			break;
		}
		case CHUNK_DATA_CR:
			if (ch != '\r') {
				c->st = CHUNK_BAD;
				continue;
			}
			c->st = CHUNK_DATA_LF;
			i++;
			break;
		case CHUNK_TRAILER_LF:
			if (ch != '\n') {
				c->st = CHUNK_BAD;
				continue;
			}
			c->st = CHUNK_TRAILER;
			i++;
			break;
		case CHUNK_DATA_LF:
			if (ch != '\n') {
				c->st = CHUNK_BAD;
				continue;
			}
			c->st = CHUNK_SIZE;
			c->left = 0;
			i++;
			break;
		case CHUNK_TRAILER:
			if (ch == '\r') {
				c->st = CHUNK_END_LF;
			} else if (ch == '\n') {
				c->st = CHUNK_BAD;
				continue;
			} else {
				c->st = CHUNK_TRAILER_LINE;
				c->line = 1;
			}
			i++;
			break;
		case CHUNK_TRAILER_LINE:
			if (ch == '\r') {
				c->st = CHUNK_TRAILER_LF; /* its LF, then the next line */
			} else if (ch == '\n' || ++c->line > LINE_MAX_BYTES) {
				c->st = CHUNK_BAD;
				continue;
			}
			i++;
			break;
		case CHUNK_END_LF:
			if (ch != '\n') {
				c->st = CHUNK_BAD;
				continue;
			}
			c->st = CHUNK_DONE;
			i++;
			break;
		default:
			break;
		}
	}
	return i;
}
