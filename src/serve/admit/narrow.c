#include <errno.h>
#include <math.h>
#include <string.h>

#include "../../core/internal.h"
#include "narrow.h"

enum field_kind { SECONDS, WHOLE };

static const struct {
	const char *name;
	enum field_kind kind;
	size_t offset;
} fields[] = {
	{"timeout_sec", SECONDS, offsetof(struct aj_limits, wall_sec)},
	{"cpu_sec", WHOLE, offsetof(struct aj_limits, cpu_sec)},
	{"memory_mb", WHOLE, offsetof(struct aj_limits, memory_mb)},
	{"pids", WHOLE, offsetof(struct aj_limits, pids)},
	{"file_size_mb", WHOLE, offsetof(struct aj_limits, file_size_mb)},
	{"disk_mb", WHOLE, offsetof(struct aj_limits, disk_mb)},
	{"output_kb", WHOLE, offsetof(struct aj_limits, output_kb)},
	{"open_files", WHOLE, offsetof(struct aj_limits, open_files)},
};
#define NFIELDS (sizeof fields / sizeof fields[0])

int limits_narrow(const struct aj_config *base, json_t *obj, struct aj_limits *out,
		  struct aj_error *err)
{
	*out = base->limits;
	if (!obj || json_is_null(obj))
		return 0;
	if (!json_is_object(obj))
		return error_set(err, -EINVAL, "limits: must be an object");
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		size_t i = 0;
		while (i < NFIELDS && strcmp(fields[i].name, key) != 0)
			i++;
		if (i == NFIELDS)
			return error_set(err, -EINVAL,
					 "limits.%.64s: unknown (timeout_sec, cpu_sec, memory_mb, "
					 "pids, file_size_mb, disk_mb, output_kb, open_files)",
					 key);
		char *slot = (char *)out + fields[i].offset;
		const char *name = fields[i].name;
		if (fields[i].kind == SECONDS) {
			double cap = *(double *)(void *)slot;
			if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
			    json_number_value(v) <= 0)
				return error_set(err, -EINVAL, "limits.%s: a positive number of seconds",
						 name);
			if (json_number_value(v) > cap)
				return error_set(err, -EINVAL,
						 "limits.%s: %g is more than this server allows (%g); "
						 "a call may only narrow the limits",
						 name, json_number_value(v), cap);
			*(double *)(void *)slot = json_number_value(v);
		} else {
			uint32_t cap = *(uint32_t *)(void *)slot;
			if (!json_is_integer(v) || json_integer_value(v) < 1)
				return error_set(err, -EINVAL, "limits.%s: a whole number, 1 or more",
						 name);
			if (json_integer_value(v) > (json_int_t)cap)
				return error_set(err, -EINVAL,
						 "limits.%s: %lld is more than this server allows (%u); "
						 "a call may only narrow the limits",
						 name, (long long)json_integer_value(v), cap);
			*(uint32_t *)(void *)slot = (uint32_t)json_integer_value(v);
		}
	}
	/* The library's own floors (a memory limit too small to start Python,
	 * say) hold too, named as the caller named them. */
	struct aj_config c = *base;
	c.limits = *out;
	struct aj_error verr;
	if (aj_config_validate(&c, &verr))
		return error_set(err, -EINVAL, "limits: %s", verr.message);
	return 0;
}

json_t *limits_to_json(const struct aj_limits *l)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < NFIELDS; i++) {
		const char *slot = (const char *)l + fields[i].offset;
		json_object_set_new(o, fields[i].name,
				    fields[i].kind == SECONDS
					    ? json_real(*(const double *)(const void *)slot)
					    : json_integer(*(const uint32_t *)(const void *)slot));
	}
	return o;
}

/* One list: which of rules[0..n) the request's array keeps. */
static uint32_t all_of(uint32_t n)
{
	return n >= 32 ? UINT32_MAX : (UINT32_C(1) << n) - 1;
}

static int narrow_list(const char *field, json_t *v, const char *const *rules, uint32_t n,
		       uint32_t *mask, bool *named, struct aj_error *err)
{
	*mask = all_of(n);
	*named = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return error_set(err, -EINVAL, "%s: must be an array of rules", field);
	*mask = 0;
	*named = true;
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		const char *rule = json_string_value(item);
		if (!rule)
			return error_set(err, -EINVAL, "%s: item %zu is not a string", field, i + 1);
		uint32_t k = 0;
		while (k < n && strcmp(rules[k], rule))
			k++;
		/* Exactly one of the deployer's, as written: a request that could
		 * name its own rule, or a wider pattern, would widen egress. */
		if (k == n)
			return error_set(err, -EINVAL,
					 "%s: '%.300s' is not one of this server's rules; a request "
					 "may only narrow them (drop rules), never add one",
					 field, rule);
		*mask |= UINT32_C(1) << k;
	}
	return 0;
}

int egress_narrow(const struct aj_config *base, json_t *body, struct egress_keep *out,
		  struct aj_error *err)
{
	int rc = narrow_list("allow_hosts", json_object_get(body, "allow_hosts"), base->allow_hosts,
			     base->allow_host_count, &out->hosts, &out->named_hosts, err);
	if (!rc)
		rc = narrow_list("allow_cidrs", json_object_get(body, "allow_cidrs"),
				 base->allow_cidrs, base->allow_cidr_count, &out->cidrs,
				 &out->named_cidrs, err);
	return rc;
}

void egress_keep_all(const struct aj_config *base, struct egress_keep *out)
{
	*out = (struct egress_keep){all_of(base->allow_host_count), all_of(base->allow_cidr_count),
				    false, false};
}

static uint32_t pick(const char *const *rules, uint32_t n, uint32_t mask, const char **out)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (mask & (UINT32_C(1) << i))
			out[k++] = rules[i];
	return k;
}

void egress_keep_apply(const struct aj_config *base, const struct egress_keep *k,
		       struct aj_config *cfg, const char *hosts[AJ_MAX_EGRESS_RULES],
		       const char *cidrs[AJ_MAX_EGRESS_RULES])
{
	cfg->allow_host_count = pick(base->allow_hosts, base->allow_host_count, k->hosts, hosts);
	cfg->allow_hosts = cfg->allow_host_count ? hosts : NULL;
	cfg->allow_cidr_count = pick(base->allow_cidrs, base->allow_cidr_count, k->cidrs, cidrs);
	cfg->allow_cidrs = cfg->allow_cidr_count ? cidrs : NULL;
}

static json_t *rules_json(const char *const *rules, uint32_t n, uint32_t mask)
{
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < n; i++)
		if ((mask & (UINT32_C(1) << i)) && json_array_append_new(a, json_string(rules[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int egress_keep_to_json(const struct aj_config *base, const struct egress_keep *k, json_t *obj)
{
	if (k->named_hosts &&
	    json_object_set_new(obj, "allow_hosts",
				rules_json(base->allow_hosts, base->allow_host_count, k->hosts)))
		return -1;
	if (k->named_cidrs &&
	    json_object_set_new(obj, "allow_cidrs",
				rules_json(base->allow_cidrs, base->allow_cidr_count, k->cidrs)))
		return -1;
	return 0;
}

static int strings_of(json_t *body, const char *field, const char **out, uint32_t *n,
		      struct aj_error *err)
{
	json_t *v = json_object_get(body, field);
	*n = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return error_set(err, -EINVAL, "%s: must be an array of rules", field);
	if (json_array_size(v) > AJ_MAX_EGRESS_RULES)
		return error_set(err, -EINVAL, "%s: more than %d rules", field, AJ_MAX_EGRESS_RULES);
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		if (!(out[i] = json_string_value(item)))
			return error_set(err, -EINVAL, "%s: item %zu is not a string", field, i + 1);
		*n = (uint32_t)i + 1;
	}
	return 0;
}

int egress_session_keep(struct aj_session *s, json_t *body, struct aj_error *err)
{
	const char *hosts[AJ_MAX_EGRESS_RULES], *cidrs[AJ_MAX_EGRESS_RULES];
	uint32_t nh, nc;
	int rc = strings_of(body, "allow_hosts", hosts, &nh, err);
	if (!rc)
		rc = strings_of(body, "allow_cidrs", cidrs, &nc, err);
	return rc ? rc : aj_session_egress_keep(s, hosts, nh, cidrs, nc, err);
}

static json_t *list_or_none(json_t *body, const char *field)
{
	json_t *v = json_object_get(body, field);
	return json_is_array(v) ? json_incref(v) : json_array();
}

json_t *egress_kept_json(json_t *body)
{
	return json_pack("{s:o, s:o}", "allow_hosts", list_or_none(body, "allow_hosts"),
			 "allow_cidrs", list_or_none(body, "allow_cidrs"));
}
