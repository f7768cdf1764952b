#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "wire.h"

static char *dup_field(json_t *o, const char *k, size_t *len)
{
	json_t *v = json_object_get(o, k);
	const char *s = json_is_string(v) ? json_string_value(v) : "";
	size_t n = json_is_string(v) ? json_string_length(v) : 0;
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	if (len)
		*len = n;
	return p;
}

static int bad(struct aj_result *res, const char *what)
{
	aj_result_free(res);
	result_init(res);
	result_sandbox_error(res, "queue: a worker's result is malformed: %s", what);
	return -EPROTO;
}

int result_from_json(json_t *o, struct aj_result *res, enum aj_tier *tier)
{
	result_init(res);
	if (!json_is_object(o))
		return bad(res, "not an object");
	const char *status = json_string_value(json_object_get(o, "status"));
	int s = 0;
	while (s < AJ_STATUS_COUNT && (!status || strcmp(status, aj_status_name(s))))
		s++;
	if (s == AJ_STATUS_COUNT)
		return bad(res, "status");
	res->status = (enum aj_status)s;
	if (tier && aj_tier_parse(json_string_value(json_object_get(o, "tier")) ?: "", tier))
		return bad(res, "tier");
	json_t *ec = json_object_get(o, "exit_code");
	res->has_exit_code = json_is_integer(ec);
	res->exit_code = res->has_exit_code ? (int)json_integer_value(ec) : 0;
	res->signal = (int)json_integer_value(json_object_get(o, "signal"));
	free(res->stdout_buf);
	free(res->stderr_buf);
	res->stdout_buf = dup_field(o, "stdout", &res->stdout_len);
	res->stderr_buf = dup_field(o, "stderr", &res->stderr_len);
	res->stdout_truncated = json_is_true(json_object_get(o, "stdout_truncated"));
	res->stderr_truncated = json_is_true(json_object_get(o, "stderr_truncated"));
	res->wall_ms = json_number_value(json_object_get(o, "wall_ms"));
	res->cpu_ms = json_number_value(json_object_get(o, "cpu_ms"));
	res->memory_kb = (uint64_t)json_integer_value(json_object_get(o, "memory_kb"));
	if (json_is_string(json_object_get(o, "message")))
		res->message = dup_field(o, "message", NULL);
	/* The worker's proxy log, kept as the text aj_result holds it. */
	json_t *egress = json_object_get(o, "egress");
	if (json_is_object(egress) &&
	    !(res->egress_log = json_dumps(egress, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		return bad(res, "out of memory");
	if (!res->stdout_buf || !res->stderr_buf)
		return bad(res, "out of memory");
	result_background_from_json(o, res);
	json_t *value = json_object_get(o, "value");
	if (json_is_string(json_object_get(value, "text"))) {
		if (!(res->value_text = dup_field(value, "text", NULL)))
			return bad(res, "out of memory");
		if (json_is_string(json_object_get(value, "html")) &&
		    !(res->value_html = dup_field(value, "html", NULL)))
			return bad(res, "out of memory");
	}
	json_t *imgs = json_object_get(o, "images");
	if (json_is_array(imgs) && json_array_size(imgs)) {
		res->images = calloc(json_array_size(imgs), sizeof *res->images);
		if (!res->images)
			return bad(res, "out of memory");
		size_t i;
		json_t *im;
		json_array_foreach(imgs, i, im)
		{
			struct aj_image *d = &res->images[res->image_count];
			json_t *data = json_object_get(im, "data");
			if (!json_is_string(data) ||
			    base64_decode(json_string_value(data), json_string_length(data), &d->data,
					  &d->len))
				return bad(res, "an image's data");
			d->name = dup_field(im, "name", NULL);
			d->mime = dup_field(im, "mime", NULL);
			res->image_count++;
			if (!d->name || !d->mime)
				return bad(res, "out of memory");
		}
	}
	res->images_dropped = (size_t)json_integer_value(json_object_get(o, "images_dropped"));
	return 0;
}

json_t *file_list_to_json(struct aj_file_info *entries, size_t count)
{
	static const char *const types[] = {"file", "directory", "symlink", "other"};
	json_t *a = json_array();
	for (size_t i = 0; a && i < count; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:I}", "name", entries[i].name,
						   "type", types[entries[i].type], "size",
						   (json_int_t)entries[i].size));
	aj_file_list_free(entries, count);
	return a;
}
