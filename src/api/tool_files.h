/* The tools a model is offered, as MCP Tool objects, and the session's file
 * tools (upload_file, download_file, list_files) with their calls: in the
 * library, so that `agentjail mcp`, serve's /mcp and the language bindings
 * offer the same tools with the same words. */
#ifndef AJ_CORE_TOOL_FILES_H
#define AJ_CORE_TOOL_FILES_H

#include <jansson.h>

#include "../core/internal.h"

struct tool_packages; /* api.h */

enum tool_kind {
	TOOL_RUN_PYTHON = 0,
	TOOL_UPLOAD_FILE,
	TOOL_DOWNLOAD_FILE,
	TOOL_LIST_FILES,
	TOOL_RUN_COMMAND,
};

/* The tools that run something, as the deployer chose them (agentjail mcp
 * --tools): a bit for each kind. run_python alone unless told: a shell
 * widens what a model does at once. */
#define TOOL_BIT(kind) (1u << (kind))
#define TOOLS_RUNNING (TOOL_BIT(TOOL_RUN_PYTHON) | TOOL_BIT(TOOL_RUN_COMMAND))
#define TOOLS_DEFAULT TOOL_BIT(TOOL_RUN_PYTHON)

/* The Tool objects for tools/list: those of tools (TOOL_BITs) the sandbox
 * can offer (run_python, its session form with sessions; run_command only
 * with sessions), and with sessions the file tools. packages:
 * tool_packages_of's verdict (NULL: not known). NULL on ENOMEM. */
json_t *tool_list(const struct aj_config *cfg, bool sessions, unsigned tools,
		  const struct tool_packages *packages);
const char *tool_name(enum tool_kind kind);
/* 0 with *out, or -1 for a name that is not one of the list's tools. */
int tool_find(const char *name, bool sessions, unsigned tools, enum tool_kind *out);
/* A running tool's name (len bytes) as its TOOL_BIT: 0 for no such tool. */
unsigned tool_bit_named(const char *name, size_t len);
/* A CallToolResult with isError and one text block (printf-style). */
json_t *tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
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
