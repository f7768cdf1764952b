/* The kernel's "key value" lines (a cgroup's memory.events, oom_control),
 * read once for the host and the microvm guest, which compiles this file. */
#ifndef AJ_KEYED_H
#define AJ_KEYED_H

#include <stdint.h>

/* The number after "KEY " at the start of a line of text; 0 if no line has
 * it. */
uint64_t keyed_value(const char *text, const char *key);

#endif
