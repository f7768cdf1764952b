/* The JSON caps' scan (json_caps.h): string-aware, so a '[' or ',' inside
 * a string is no value; an upper bound on the values jansson would build
 * (every '[' and '{' is one, every ',' and ':' starts at most one more,
 * and a container's first element is at most one per container: at most
 * twice the count),
 * exact enough to refuse nothing a real request holds. */
#include <stdbool.h>

#include "json_caps.h"

static int too_many(struct http_response *rs)
{
	respond_error(rs, 413, "json_too_many_values",
		      "the body's JSON holds more than %d values", JSON_CAP_VALUES);
	return -1;
}

int json_caps_check(const char *text, size_t n, struct http_response *rs)
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
				return too_many(rs);
			if (++depth > JSON_CAP_DEPTH) {
				respond_error(rs, 400, "json_too_deep",
					      "the body's JSON nests deeper than %d levels",
					      JSON_CAP_DEPTH);
				return -1;
			}
			break;
		case ']':
		case '}':
			if (depth)
				depth--;
			break;
		case ',':
		case ':':
			if (++values > JSON_CAP_VALUES)
				return too_many(rs);
			break;
		}
	}
	return 0;
}
