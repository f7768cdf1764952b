#include <errno.h>
#include <math.h>
#include <string.h>

#include "../core/internal.h"
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
