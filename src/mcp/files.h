/* The session's file tools: upload_file, download_file, list_files. */
#ifndef AJ_MCP_FILES_H
#define AJ_MCP_FILES_H

#include <jansson.h>

#include "agentjail.h"
#include "tool.h"

/* Appends the three Tool objects to list: 0, or -1 on ENOMEM. */
int file_tools_append(json_t *list, const struct aj_config *cfg);
/* 0, or -1 with why (the arguments do not fit the tool's schema). */
int file_tool_arguments(enum tool_kind kind, json_t *args, char *why, size_t n);
/* Does the call on s and returns its CallToolResult. What the library
 * refuses (a path outside the workspace, a file too large, a closed
 * session) is a result with isError and the library's message. note, if
 * not NULL, opens the text (a new session replaced one that closed). NULL
 * on ENOMEM. */
json_t *file_tool_call(enum tool_kind kind, struct aj_session *s, json_t *args,
		       const char *note);

#endif
