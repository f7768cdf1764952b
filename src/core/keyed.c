/* "key value" lines (see keyed.h). libc only: the guest agent builds it. */
#include <stdlib.h>
#include <string.h>

#include "keyed.h"

uint64_t keyed_value(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, n) == 0 && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}
