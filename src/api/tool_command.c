/* The run_command tool as a model sees it: a shell command in its sandbox
 * session (aj_session_exec), for every front end that offers it (the MCP
 * server, when the deployer turns it on: a shell widens what a model does
 * at once, though not what the sandbox lets it do). Its definition says
 * exactly what is there, the check of its arguments, and its call; the
 * result's text is run_python's (result_text). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/internal.h"
#include "api.h"
#include "tool_command.h"

#define WS AJ_SESSION_WORKSPACE

static void command_description(const struct aj_config *cfg, char *desc, size_t n)
{
	const struct aj_limits *l = &cfg->limits;
	bool egress = cfg->allow_host_count || cfg->allow_cidr_count;
	snprintf(desc, n,
		 "Run a shell command in the sandbox session and get back its stdout, stderr and "
		 "exit status. The command is run by /bin/sh -c, a POSIX shell (bash's own syntax, "
		 "such as [[ ]] or arrays, may not be there), in the same sandbox as run_python: "
		 "the working directory is the workspace " WS ", where run_python's files and "
		 "uploaded files are, and the programs are those the sandbox's system has "
		 "(python3, and the usual command-line tools of a small Linux system; anything "
		 "else, try it). %s Each call is a new shell: cd and variables do not carry over, "
		 "files do. Its stdin is empty. Limits per call: %g s of wall-clock time (give a "
		 "shorter 'timeout' in seconds if you want), %u s of CPU, %u KiB of output per "
		 "stream (more is cut and stops the command). For the whole session: %u MiB of "
		 "memory, %u processes and threads, %u MiB of disk, files up to %u MiB. When the "
		 "command ends or its time is up, what it left running in the background is "
		 "killed. Read the result's status: ok, error (non-zero exit; see stderr), "
		 "timeout, memory or output_limit.",
		 egress ? "The network reaches only the hosts this deployment allows, through a "
			  "proxy."
			: "There is no network.",
		 l->wall_sec, l->cpu_sec, l->output_kb, l->memory_mb, l->pids, l->disk_mb,
		 l->file_size_mb);
}

json_t *command_tool_definition(const struct aj_config *cfg)
{
	char desc[2000];
	command_description(cfg, desc, sizeof desc);
	bool egress = cfg->allow_host_count || cfg->allow_cidr_count;
	json_t *input = json_pack(
		"{s:s, s:{s:{s:s, s:s}, s:{s:s, s:i, s:f, s:s}}, s:[s], s:b}", "type", "object",
		"properties", "command", "type", "string", "description",
		"The command line, as for /bin/sh -c (pipes, redirections and && work).",
		"timeout", "type", "number", "exclusiveMinimum", 0, "maximum", cfg->limits.wall_sec,
		"description", "Seconds the command may take (default and most: the limit above).",
		"required", "command",
		/* Nothing else: no directory, variable or limit the agent could
		 * reach past its workspace with. */
		"additionalProperties", 0);
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name",
			 COMMAND_TOOL_NAME, "title", "Run a shell command in the sandbox",
			 "description", desc, "inputSchema", input, "outputSchema",
			 tool_output_schema(false), "annotations", "title",
			 "Run a shell command in the sandbox",
			 /* It may change or delete the session's files. */
			 "readOnlyHint", 0, "destructiveHint", 1, "idempotentHint", 0,
			 /* It reaches outside only where egress rules allow. */
			 "openWorldHint", egress);
}

int command_tool_arguments(json_t *args, char *why, size_t n)
{
	if (!json_is_object(args)) {
		snprintf(why, n, "arguments must be an object with a string 'command'");
		return -1;
	}
	const char *key;
	json_t *v;
	json_object_foreach(args, key, v) {
		if (strcmp(key, "command") && strcmp(key, "timeout")) {
			snprintf(why, n, "unexpected argument '%.64s': " COMMAND_TOOL_NAME
				 " takes 'command' and 'timeout'", key);
			return -1;
		}
	}
	json_t *c = json_object_get(args, "command"), *t = json_object_get(args, "timeout");
	if (!json_is_string(c)) {
		snprintf(why, n, "'command' must be a string holding the command line");
		return -1;
	}
	/* Read as a C string from here: a NUL would cut the command short. */
	if (memchr(json_string_value(c), '\0', json_string_length(c))) {
		snprintf(why, n, "'command' holds a NUL byte (\\u0000)");
		return -1;
	}
	if (t && (!json_is_number(t) || !(json_number_value(t) > 0) ||
		  !isfinite(json_number_value(t)))) {
		snprintf(why, n, "'timeout' must be a positive number of seconds");
		return -1;
	}
	return 0;
}

int command_tool_exec(struct aj_session *s, json_t *args, struct aj_cancel *cancel,
		      const struct aj_stream *stream, struct aj_result *res)
{
	json_t *t = json_object_get(args, "timeout");
	struct aj_exec x = {.command = json_string_value(json_object_get(args, "command")),
			    .timeout_sec = t ? json_number_value(t) : 0};
	return aj_session_exec(s, &x, cancel, stream, res);
}
