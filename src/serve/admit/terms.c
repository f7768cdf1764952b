/* run_terms (narrow.h): a request's limits, egress rules, variables and
 * language, read, applied and passed on together, so every route and both backends
 * narrow the deployer's config the same way. */
#include <errno.h>
#include <string.h>

#include "../../core/internal.h"
#include "narrow.h"

void terms_default(const struct aj_config *base, struct run_terms *t)
{
	t->limits = base->limits;
	egress_keep_all(base, &t->keep);
	t->env.count = t->env.bytes = 0;
	t->lang = AJ_LANG_PYTHON;
	t->secrets = NULL;
}

int language_field(json_t *body, enum aj_language *out, struct aj_error *err)
{
	json_t *v = json_object_get(body, "language");
	*out = AJ_LANG_PYTHON;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return error_set(err, -EINVAL, "language: expected a string, one of " AJ_LANGUAGE_NAMES);
	if (aj_language_parse(json_string_value(v), out))
		return error_set(err, -EINVAL, "language: '%.40s' is not one of " AJ_LANGUAGE_NAMES,
				 json_string_value(v));
	return 0;
}

int terms_narrow(const struct aj_config *base, json_t *body, struct run_terms *t,
		 const char **code, struct aj_error *err)
{
	int rc;
	t->secrets = NULL; /* joined by the route, which knows the key */
	if ((rc = limits_narrow(base, json_object_get(body, "limits"), &t->limits, err))) {
		*code = "bad_limits";
	} else if ((rc = egress_narrow(base, body, &t->keep, err))) {
		*code = "bad_egress";
	} else if ((rc = request_env_parse(base, json_object_get(body, "env"), &t->env, err))) {
		*code = "bad_env";
	} else if ((rc = language_field(body, &t->lang, err))) {
		*code = "bad_language";
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
	if (t->secrets)
		cfg->secrets = t->secrets;
}

int terms_to_json(const struct aj_config *base, const struct run_terms *t, json_t *obj)
{
	/* Redis is no place for a credential: routes refuse secrets with a
	 * queue, and this is the last door. */
	if (t->secrets)
		return -1;
	if (json_object_set_new(obj, "limits", limits_to_json(&t->limits)))
		return -1;
	/* The rules the request kept, by name: the worker narrows its own. */
	if (egress_keep_to_json(base, &t->keep, obj))
		return -1;
	json_t *env = request_env_to_json(&t->env);
	if (t->env.count && (!env || json_object_set_new(obj, "env", env)))
		return -1;
	/* Python's runs say nothing: the request a worker without languages
	 * reads is the one it always read (the op says the rest:
	 * queue_run_request). */
	if (t->lang != AJ_LANG_PYTHON &&
	    json_object_set_new(obj, "language", json_string(aj_language_name(t->lang))))
		return -1;
	return 0;
}

/* The language is not compared: a sandbox runs any of them (terms_same
 * picks a cached sandbox). */
bool terms_same(const struct run_terms *a, const struct run_terms *b)
{
	const struct aj_limits *x = &a->limits, *y = &b->limits;
	/* A sandbox holding a key's or a request's credentials serves that
	 * run alone: never another key's run, and never kept past it. */
	if (a->secrets || b->secrets)
		return false;
	return a->keep.hosts == b->keep.hosts && a->keep.cidrs == b->keep.cidrs &&
	       x->wall_sec == y->wall_sec && x->cpu_sec == y->cpu_sec &&
	       x->memory_mb == y->memory_mb && x->pids == y->pids &&
	       x->file_size_mb == y->file_size_mb && x->disk_mb == y->disk_mb &&
	       x->output_kb == y->output_kb && x->open_files == y->open_files &&
	       request_env_same(&a->env, &b->env);
}
