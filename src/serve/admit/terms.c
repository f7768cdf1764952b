/* run_terms (narrow.h): a request's limits, egress rules and variables,
 * read, applied and passed on together, so every route and both backends
 * narrow the deployer's config the same way. */
#include <string.h>

#include "../../core/internal.h"
#include "narrow.h"

void terms_default(const struct aj_config *base, struct run_terms *t)
{
	t->limits = base->limits;
	egress_keep_all(base, &t->keep);
	t->env.count = t->env.bytes = 0;
}

int terms_narrow(const struct aj_config *base, json_t *body, struct run_terms *t,
		 const char **code, struct aj_error *err)
{
	int rc;
	if ((rc = limits_narrow(base, json_object_get(body, "limits"), &t->limits, err))) {
		*code = "bad_limits";
	} else if ((rc = egress_narrow(base, body, &t->keep, err))) {
		*code = "bad_egress";
	} else if ((rc = request_env_parse(base, json_object_get(body, "env"), &t->env, err))) {
		*code = "bad_env";
	}
	return rc;
}

void terms_apply(const struct aj_config *base, const struct run_terms *t, struct aj_config *cfg,
		 struct terms_lists *lists)
{
	*cfg = *base;
	cfg->limits = t->limits;
	egress_keep_apply(base, &t->keep, cfg, lists->hosts, lists->cidrs);
	request_env_apply(base, &t->env, cfg, lists->env);
}

int terms_to_json(const struct aj_config *base, const struct run_terms *t, json_t *obj)
{
	if (json_object_set_new(obj, "limits", limits_to_json(&t->limits)))
		return -1;
	/* The rules the request kept, by name: the worker narrows its own. */
	if (egress_keep_to_json(base, &t->keep, obj))
		return -1;
	json_t *env = request_env_to_json(&t->env);
	if (t->env.count && (!env || json_object_set_new(obj, "env", env)))
		return -1;
	return 0;
}

bool terms_same(const struct run_terms *a, const struct run_terms *b)
{
	const struct aj_limits *x = &a->limits, *y = &b->limits;
	return a->keep.hosts == b->keep.hosts && a->keep.cidrs == b->keep.cidrs &&
	       x->wall_sec == y->wall_sec && x->cpu_sec == y->cpu_sec &&
	       x->memory_mb == y->memory_mb && x->pids == y->pids &&
	       x->file_size_mb == y->file_size_mb && x->disk_mb == y->disk_mb &&
	       x->output_kb == y->output_kb && x->open_files == y->open_files &&
	       request_env_same(&a->env, &b->env);
}
