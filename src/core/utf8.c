#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there
 * are not one; *bad is then the length of the maximal invalid subpart, so
 * that each one becomes exactly one U+FFFD (Unicode 15, section 3.9). */
static size_t sequence_length(const unsigned char *s, size_t n, size_t *bad)
{
	unsigned char c = s[0];
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		need = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0;          /* overlong */
		else if (c == 0xED)
			hi = 0x9F;          /* surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90;          /* overlong */
		else if (c == 0xF4)
			hi = 0x8F;          /* above U+10FFFF */
	} else {
		*bad = 1;
		return 0;
	}
	for (size_t i = 1; i < need; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xBF;
	}
	return need;
}

char *utf8_repair(const char *in, size_t n, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)in;
	/* Worst case: every byte becomes the 3-byte U+FFFD. */
	char *out = malloc(n * 3 + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t bad = 0;
		size_t len = sequence_length(s + i, n - i, &bad);
		if (len) {
			memcpy(out + o, s + i, len);
			o += len;
			i += len;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i += bad;
		}
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}

bool utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, bad;
	while (i < n) {
		size_t k = sequence_length(p + i, n - i, &bad);
		if (!k)
			return false;
		i += k;
	}
	return true;
}
