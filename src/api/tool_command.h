/* The run_command tool (tool_command.c): a shell command in the model's
 * sandbox session, offered where the deployer turns it on. */
#ifndef AJ_API_TOOL_COMMAND_H
#define AJ_API_TOOL_COMMAND_H

#include <jansson.h>

#include "agentjail.h"

#define COMMAND_TOOL_NAME "run_command"

/* Its MCP Tool object, the limits of cfg (a session's) in its words. */
json_t *command_tool_definition(const struct aj_config *cfg);
/* 0, or -1 with why (the arguments do not fit its inputSchema). */
int command_tool_arguments(json_t *args, char *why, size_t n);
/* Runs the command args name (checked by command_tool_arguments) in s:
 * aj_session_exec's return and res. -EINVAL (and the other refusals of
 * aj_session_exec) are the arguments' fault, res saying why. */
int command_tool_exec(struct aj_session *s, json_t *args, struct aj_cancel *cancel,
		      const struct aj_stream *stream, struct aj_result *res);

#endif
