/* Caps on a JSON request body checked before jansson parses it: a cheap
 * scan of the text for how many values it holds and how deeply they nest.
 *
 * Why: jansson spends ~240 bytes per value it builds, so an 8 MiB body of
 * [{},{},...] (2.8 million values) costs 0.6 GiB to parse, twenty such
 * bodies at once more than the machine has. No request of the API or of
 * MCP needs more than a few hundred values: the caps refuse the rest in
 * one pass over bytes the server already holds, before any value is made. */
#ifndef AJ_SERVE_JSON_CAPS_H
#define AJ_SERVE_JSON_CAPS_H

#include <stddef.h>

/* Values (every object, array, member value, element, string, number and
 * literal) a request body may hold, and how deeply objects and arrays may
 * nest in it. */
#define JSON_CAP_VALUES 10000
#define JSON_CAP_DEPTH 32

enum json_caps_verdict { JSON_CAPS_OK, JSON_CAPS_VALUES, JSON_CAPS_DEPTH };

/* Whether the n bytes at text are within the caps (whether or not they
 * are valid JSON: the parser says that), and else which one they pass.
 * respond.c's request_json_caps answers it. */
enum json_caps_verdict json_caps_check(const char *text, size_t n);

#endif
