/* The environment variables a request adds for its run or session (the
 * body's "env": {"NAME": "VALUE", ...}), beside the ones the deployer set
 * with --env. The same rules as --env hold (src/core/env.c: no loader,
 * proxy or interpreter variable that would weaken the sandbox), and a
 * request never replaces a variable the deployer set. */
#ifndef AJ_SERVE_REQUEST_ENV_H
#define AJ_SERVE_REQUEST_ENV_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agentjail.h"

/* Held whole in the struct ("NAME=VALUE\0" count times), so a copy is a
 * plain assignment and a run that outlives its request keeps its own. */
struct request_env {
	uint32_t count, bytes;
	char vars[AJ_MAX_ENV_BYTES];
};

/* From obj (NULL or null: none) over base's own env. 0, or -EINVAL with
 * err naming the variable and why ("env: LD_PRELOAD may not be set: ..."). */
int request_env_parse(const struct aj_config *base, json_t *obj, struct request_env *out,
		      struct aj_error *err);
/* cfg->env: base's variables, then e's; the pointers are written into
 * vars, which must live as long as cfg is used. */
void request_env_apply(const struct aj_config *base, const struct request_env *e,
		       struct aj_config *cfg, const char *vars[AJ_MAX_ENV]);
/* e as the request gave it ({"NAME": "VALUE"}), for a worker behind the
 * queue; NULL when e holds none or memory is out. */
json_t *request_env_to_json(const struct request_env *e);
bool request_env_same(const struct request_env *a, const struct request_env *b);

#endif
