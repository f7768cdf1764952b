/* A caller's own limits for one run or session: each may only narrow the
 * deployer's, never widen it, and a value out of range is refused with its
 * name rather than quietly clamped. */
#ifndef AJ_SERVE_NARROW_H
#define AJ_SERVE_NARROW_H

#include <jansson.h>

#include "agentjail.h"

/* Fills *out from base and the JSON object obj (NULL: base as it is).
 * 0, or -EINVAL with err naming the field ("limits.memory_mb: ..."). */
int limits_narrow(const struct aj_config *base, json_t *obj, struct aj_limits *out,
		  struct aj_error *err);
/* The limits as a JSON object with the same field names. */
json_t *limits_to_json(const struct aj_limits *l);

#endif
