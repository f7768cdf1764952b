/* The tools' list, finding a tool by name, an error result, and run_python's
 * CallToolResult. run_python's definition, argument check and text are the
 * library's (src/core/tool.c), shared with every other front end. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "files.h"
#include "tool.h"

json_t *tool_list(const struct aj_config *cfg, bool sessions)
{
	json_t *list = json_array();
	if (!list || json_array_append_new(list, tool_definition_object(cfg, sessions))) {
		json_decref(list);
		return NULL;
	}
	if (sessions && file_tools_append(list, cfg)) {
		json_decref(list);
		return NULL;
	}
	return list;
}

static const char *const names[] = {
	[TOOL_RUN_PYTHON] = TOOL_NAME,
	[TOOL_UPLOAD_FILE] = "upload_file",
	[TOOL_DOWNLOAD_FILE] = "download_file",
	[TOOL_LIST_FILES] = "list_files",
};

const char *tool_name(enum tool_kind kind)
{
	return names[kind];
}

int tool_find(const char *name, bool sessions, enum tool_kind *out)
{
	/* Without sessions the file tools do not exist: there is no sandbox
	 * that outlives a call to hold the files. */
	size_t n = sessions ? sizeof names / sizeof names[0] : 1;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, names[i])) {
			*out = (enum tool_kind)i;
			return 0;
		}
	return -1;
}

json_t *tool_error(const char *fmt, ...)
{
	char text[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	size_t len;
	char *fixed = utf8_repair(text, strlen(text), &len);
	json_t *out = fixed ? json_pack("{s:[{s:s, s:s%}], s:b}", "content", "type", "text", "text",
					fixed, len, "isError", 1)
			    : NULL;
	free(fixed);
	return out;
}

/* One MCP image content block for each image, after the text block. */
static int append_images(json_t *content, const struct aj_result *res)
{
	for (size_t i = 0; i < res->image_count; i++) {
		const struct aj_image *im = &res->images[i];
		char *b64 = base64_encode(im->data, im->len, NULL);
		json_t *block = b64 ? json_pack("{s:s, s:s, s:s}", "type", "image", "data", b64,
						"mimeType", im->mime)
				    : NULL;
		free(b64);
		if (!block || json_array_append_new(content, block))
			return -1;
	}
	return 0;
}

json_t *tool_result(const struct aj_result *res, enum aj_tier tier)
{
	/* The text is the library's (aj_result_text), the words every front
	 * end gives a model. */
	size_t text_len;
	char *text = result_text(res, &text_len);
	json_t *structured = result_to_json_object(res, tier);
	json_t *out = NULL;
	if (text && structured)
		out = json_pack("{s:[{s:s, s:s%}], s:o, s:b}", "content", "type", "text", "text", text,
				text_len, "structuredContent", structured,
				/* Anything but a clean exit is for the model to correct. */
				"isError", res->status != AJ_STATUS_OK);
	else
		json_decref(structured);
	free(text);
	if (out && append_images(json_object_get(out, "content"), res)) {
		json_decref(out);
		out = NULL;
	}
	return out;
}
