/* run_python: its definition, argument checks and result content. */
#ifndef AJ_MCP_TOOL_H
#define AJ_MCP_TOOL_H

#include <jansson.h>

#include "agentjail.h"

#define TOOL_NAME "run_python"

/* The Tool object for tools/list: schemas, annotations, and a description
 * that tells the model the limits it runs under. */
json_t *tool_definition(const struct aj_config *cfg);
/* 0 with the code, or -1 with why (the arguments do not fit the schema). */
int tool_arguments(json_t *args, const char **code, size_t *len, char *why, size_t n);
/* A CallToolResult: a text block a model reads well, the contract's result
 * as structuredContent, isError unless the program exited 0. */
json_t *tool_result(const struct aj_result *res, enum aj_tier tier);

#endif
