/* The tools: run_python's CallToolResult and what every tool shares.
 * run_python's argument check is the library's tool_code_argument
 * (src/core/internal.h). */
#ifndef AJ_MCP_TOOL_H
#define AJ_MCP_TOOL_H

#include <jansson.h>
#include <stdbool.h>

#include "agentjail.h"
#include "../core/internal.h"
#include "../api/api.h"
#include "../api/tool_command.h"
#include "../api/tool_files.h"

#define TOOL_NAME AJ_TOOL_NAME

/* A CallToolResult: a text block a model reads well, an image block for
 * each image a session's call made, the contract's result as
 * structuredContent, isError unless the program exited 0. */
json_t *tool_result(const struct aj_result *res, enum aj_tier tier);

#endif
