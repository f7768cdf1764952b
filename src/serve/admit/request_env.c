#include <errno.h>
#include <string.h>

#include "../../core/internal.h"
#include "request_env.h"

/* Whether base's own env sets the variable name (n bytes). */
static bool deployer_sets(const struct aj_config *base, const char *name, size_t n)
{
	for (uint32_t i = 0; i < base->env_count; i++)
		if (!strncmp(base->env[i], name, n) && base->env[i][n] == '=')
			return true;
	return false;
}

int request_env_parse(const struct aj_config *base, json_t *obj, struct request_env *out,
		      struct aj_error *err)
{
	out->count = out->bytes = 0;
	if (!obj || json_is_null(obj))
		return 0;
	if (!json_is_object(obj))
		return error_set(err, -EINVAL,
				 "env: must be an object of names to values ({\"NAME\": \"VALUE\"})");
	const char *name;
	json_t *v;
	json_object_foreach(obj, name, v)
	{
		const char *value = json_string_value(v);
		if (!value)
			return error_set(err, -EINVAL, "env.%.64s: the value must be a string", name);
		size_t n = strlen(name), vn = strlen(value);
		/* A NUL inside a name or value would cut it short unseen. */
		if (n != json_object_iter_key_len(json_object_key_to_iter(name)) ||
		    vn != json_string_length(v))
			return error_set(err, -EINVAL, "env.%.64s: holds a NUL byte", name);
		if (deployer_sets(base, name, n))
			return error_set(err, -EINVAL,
					 "env: %.64s is set by this server (--env); a request may "
					 "add variables, never replace the deployer's",
					 name);
		if (out->count >= AJ_MAX_ENV || out->bytes + n + vn + 2 > sizeof out->vars)
			return error_set(err, -EINVAL,
					 "env: more than %d variables or %d bytes with this "
					 "server's own",
					 AJ_MAX_ENV, AJ_MAX_ENV_BYTES);
		char *p = out->vars + out->bytes;
		memcpy(p, name, n);
		p[n] = '=';
		memcpy(p + n + 1, value, vn + 1);
		out->bytes += (uint32_t)(n + vn + 2);
		out->count++;
	}
	/* The names and values themselves, and the totals with the deployer's,
	 * by the library's own rules (env_check), in its own words. */
	struct aj_config c = *base;
	const char *vars[AJ_MAX_ENV];
	request_env_apply(base, out, &c, vars);
	if (base->env_count + out->count > AJ_MAX_ENV)
		return error_set(err, -EINVAL, "env: %u variables with this server's own, more than %d",
				 base->env_count + out->count, AJ_MAX_ENV);
	struct aj_error verr;
	if (env_check(&c, &verr))
		return error_set(err, -EINVAL, "%s", verr.message);
	return 0;
}

void request_env_apply(const struct aj_config *base, const struct request_env *e,
		       struct aj_config *cfg, const char *vars[AJ_MAX_ENV])
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < base->env_count && n < AJ_MAX_ENV; i++)
		vars[n++] = base->env[i];
	const char *p = e->vars;
	for (uint32_t i = 0; i < e->count && n < AJ_MAX_ENV; i++, p += strlen(p) + 1)
		vars[n++] = p;
	cfg->env = n ? vars : NULL;
	cfg->env_count = n;
}

json_t *request_env_to_json(const struct request_env *e)
{
	if (!e->count)
		return NULL;
	json_t *o = json_object();
	const char *p = e->vars;
	for (uint32_t i = 0; o && i < e->count; i++, p += strlen(p) + 1) {
		const char *eq = strchr(p, '=');
		if (json_object_setn_new(o, p, (size_t)(eq - p), json_string(eq + 1))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

bool request_env_same(const struct request_env *a, const struct request_env *b)
{
	return a->count == b->count && a->bytes == b->bytes && !memcmp(a->vars, b->vars, a->bytes);
}
