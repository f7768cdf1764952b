/* run_python's CallToolResult. The tools' definitions, argument checks and
 * text are the library's (src/api/tool.c, tool_files.c), shared with every
 * other front end. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../api/api.h"
#include "tool.h"

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
