/* The tools: run_python's CallToolResult and what every tool shares.
 * run_python's argument check is the library's tool_code_argument
 * (src/core/internal.h). */
#ifndef AJ_MCP_TOOL_H
#define AJ_MCP_TOOL_H

#include <jansson.h>
#include <stdbool.h>

#include "agentjail.h"
#include "../core/internal.h"

#define TOOL_NAME AJ_TOOL_NAME

enum tool_kind { TOOL_RUN_PYTHON = 0, TOOL_UPLOAD_FILE, TOOL_DOWNLOAD_FILE, TOOL_LIST_FILES };

/* The Tool objects for tools/list: schemas, annotations, and descriptions
 * that tell the model the limits it runs under. run_python alone, or with
 * sessions its session form and the file tools. NULL on ENOMEM. */
json_t *tool_list(const struct aj_config *cfg, bool sessions);
const char *tool_name(enum tool_kind kind);
/* 0 with *out, or -1 for a name that is not one of the list's tools. */
int tool_find(const char *name, bool sessions, enum tool_kind *out);
/* A CallToolResult with isError and one text block (printf-style). */
json_t *tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A CallToolResult: a text block a model reads well, an image block for
 * each image a session's call made, the contract's result as
 * structuredContent, isError unless the program exited 0. */
json_t *tool_result(const struct aj_result *res, enum aj_tier tier);

#endif
