/* The JSON caps' scan (json_caps.h): string-aware, so a '[' or ',' inside
 * a string is no value; an upper bound on the values jansson would build
 * (every '[' and '{' is one, every ',' and ':' starts at most one more,
 * and a container's first element is at most one per container: at most
 * twice the count),
 * exact enough to refuse nothing a real request holds. */
#include <stdbool.h>

#include "json_caps.h"

enum json_caps_verdict json_caps_check(const char *text, size_t n)
{
	size_t values = 1, depth = 0;
	bool in_string = false;
	for (size_t i = 0; i < n; i++) {
		char c = text[i];
		if (in_string) {
			if (c == '\\')
				i++; /* the escaped byte cannot end the string */
			else if (c == '"')
				in_string = false;
			continue;
		}
		switch (c) {
		case '"':
			in_string = true;
			break;
		case '[':
		case '{':
			if (++values > JSON_CAP_VALUES)
				return JSON_CAPS_VALUES;
			if (++depth > JSON_CAP_DEPTH)
				return JSON_CAPS_DEPTH;
			break;
		case ']':
		case '}':
			if (depth)
				depth--;
			break;
		case ',':
		case ':':
			if (++values > JSON_CAP_VALUES)
				return JSON_CAPS_VALUES;
			break;
		}
	}
	return JSON_CAPS_OK;
}
