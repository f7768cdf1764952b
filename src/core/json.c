#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Jansson only takes valid UTF-8: program output is repaired first, so a
 * binary flood still yields one parseable object. */
static json_t *bytes_to_json(const char *buf, size_t len)
{
	size_t n;
	char *fixed = utf8_repair(buf ? buf : "", buf ? len : 0, &n);
	if (!fixed)
		return NULL;
	json_t *s = json_stringn_nocheck(fixed, n);
	free(fixed);
	return s;
}

static json_t *text_or_null(const char *s)
{
	return s ? bytes_to_json(s, strlen(s)) : json_null();
}

/* One decimal is all a latency reading deserves. */
static json_t *ms(double v)
{
	return json_real(round(v * 10.0) / 10.0);
}

/* [{"name", "mime", "data" (base64), "bytes"}]. */
static json_t *images_to_json(const struct aj_result *res)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < res->image_count; i++) {
		const struct aj_image *im = &res->images[i];
		char *b64 = base64_encode(im->data, im->len, NULL);
		json_t *e = json_pack("{s:o, s:s, s:s, s:I}", "name", text_or_null(im->name), "mime",
				      im->mime, "data", b64 ? b64 : "", "bytes", (json_int_t)im->len);
		free(b64);
		if (!e || json_array_append_new(a, e)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* The proxy writes the log; a log that does not parse (it always should)
 * still reaches the reader, as its text, rather than failing the result. */
static json_t *egress_log_to_json(const char *log)
{
	json_t *j = json_loads(log, JSON_REJECT_DUPLICATES, NULL);
	return j ? j : text_or_null(log);
}

json_t *result_to_json_object(const struct aj_result *res, enum aj_tier tier)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = 0;
	bad |= json_object_set_new(o, "tier", json_string(aj_tier_name(tier)));
	bad |= json_object_set_new(o, "status", json_string(aj_status_name(res->status)));
	bad |= json_object_set_new(o, "exit_code",
				   res->has_exit_code ? json_integer(res->exit_code) : json_null());
	bad |= json_object_set_new(o, "signal",
				   res->signal ? json_integer(res->signal) : json_null());
	bad |= json_object_set_new(o, "stdout", bytes_to_json(res->stdout_buf, res->stdout_len));
	bad |= json_object_set_new(o, "stderr", bytes_to_json(res->stderr_buf, res->stderr_len));
	bad |= json_object_set_new(o, "stdout_truncated", json_boolean(res->stdout_truncated));
	bad |= json_object_set_new(o, "stderr_truncated", json_boolean(res->stderr_truncated));
	bad |= json_object_set_new(o, "wall_ms", ms(res->wall_ms));
	bad |= json_object_set_new(o, "cpu_ms", ms(res->cpu_ms));
	bad |= json_object_set_new(o, "memory_kb", json_integer((json_int_t)res->memory_kb));
	bad |= json_object_set_new(o, "message", text_or_null(res->message));
	/* Only a session's call can return images: a plain run's object keeps
	 * the contract's keys exactly. */
	if (res->image_count || res->images_dropped)
		bad |= json_object_set_new(o, "images", images_to_json(res));
	if (res->images_dropped)
		bad |= json_object_set_new(o, "images_dropped",
					   json_integer((json_int_t)res->images_dropped));
	/* Only with egress rules: without them the object keeps the contract's
	 * keys exactly, as above. The log is the proxy's own JSON, nested as
	 * an object so that a reader parses the answer once. */
	if (res->egress_log)
		bad |= json_object_set_new(o, "egress", egress_log_to_json(res->egress_log));
	/* Only when a session's background commands outlive the call. */
	if (res->background_count) {
		json_t *pids = json_array();
		for (size_t i = 0; pids && i < res->background_count; i++)
			bad |= json_array_append_new(pids, json_integer(res->background_pids[i]));
		bad |= !pids || json_object_set_new(o, "background", pids);
	}
	/* Only a notebook cell's (aj_session_run_value) that ended with one. */
	if (res->value_text)
		bad |= json_object_set_new(o, "value",
					   res->value_html
						   ? json_pack("{s:s, s:s}", "text", res->value_text,
							       "html", res->value_html)
						   : json_pack("{s:s}", "text", res->value_text));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void result_background_from_json(json_t *o, struct aj_result *res)
{
	json_t *pids = json_object_get(o, "background");
	size_t n = json_array_size(pids), k = 0;
	if (!n)
		return;
	if (n > AJ_MAX_BACKGROUND_LISTED)
		n = AJ_MAX_BACKGROUND_LISTED;
	uint32_t *v = calloc(n, sizeof *v);
	for (size_t i = 0; v && i < n; i++) {
		json_t *p = json_array_get(pids, i);
		json_int_t pid = json_integer_value(p);
		if (json_is_integer(p) && pid > 1 && pid <= INT32_MAX)
			v[k++] = (uint32_t)pid;
	}
	free(res->background_pids);
	res->background_pids = k ? v : NULL;
	res->background_count = k;
	if (!k)
		free(v);
}

char *aj_result_to_json(const struct aj_result *res, enum aj_tier tier)
{
	json_t *o = result_to_json_object(res, tier);
	if (!o)
		return NULL;
	char *out = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_REAL_PRECISION(12));
	json_decref(o);
	return out;
}
