#ifndef AJ_MCP_SERVER_H
#define AJ_MCP_SERVER_H

#include <stdio.h>

#include "config.h"

/* Serves MCP on in/out until EOF; every run goes through sandbox. Returns
 * the process exit code. */
int mcp_serve(const struct mcp_config *cfg, struct aj_sandbox *sandbox, FILE *in, FILE *out);

#endif
