/* What the egress fuzz targets check of a head they were given back: how
 * many of its lines start with a header's name (any case). A line without
 * its CRLF is a broken head: the target traps. */
#ifndef AJ_FUZZ_HEAD_LINES_H
#define AJ_FUZZ_HEAD_LINES_H

#include <string.h>
#include <strings.h>

static inline size_t lines_named(const char *out, size_t n, const char *name)
{
	size_t count = 0, nl = strlen(name);
	for (const char *l = out; l < out + n;) {
		const char *e = memmem(l, (size_t)(out + n - l), "\r\n", 2);
		if (!e)
			__builtin_trap();
		if ((size_t)(e - l) >= nl && !strncasecmp(l, name, nl))
			count++;
		l = e + 2;
	}
	return count;
}

#endif
