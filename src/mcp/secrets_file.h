/* A deployer's secrets file (issue 39, docs/secrets.md): the text
 * aj_config.secrets holds, read from a file the CLI's --secrets and the MCP
 * config's "secrets" name. Here, below src/cli, because both read it: the
 * MCP config file (src/mcp/config.c) and the option parser every command
 * shares (src/cli/options.c, which serve and worker link too). */
#ifndef AJ_MCP_SECRETS_FILE_H
#define AJ_MCP_SECRETS_FILE_H

#include "agentjail.h"

/* The largest secrets file read: every secret's largest value with room to
 * spare for JSON's escapes (a \uXXXX takes six bytes for two or three of
 * UTF-8), its hosts and request rules, and pretty-printing. A file past it
 * is not a secrets file, and a bound keeps a wrong path (a log, a device
 * behind a symlink) from being read whole into memory. */
#define SECRETS_FILE_MAX (AJ_MAX_SECRETS * (3 * AJ_MAX_SECRET_BYTES + 4096))

/* Reads path whole into *text (malloc'd, NUL-terminated; free it with
 * secrets_text_free) and checks it as aj_config_validate will
 * (secret_set_parse), so that a mistake is named with its file. Refused,
 * -errno with err's message starting with path, never with a value: a
 * file that cannot be opened, is not a regular file, can be read or
 * written by other users than its owner (mode & 077), is empty, larger
 * than SECRETS_FILE_MAX, holds a NUL byte, or is not a valid secrets
 * array. */
int secrets_file_read(const char *path, char **text, struct aj_error *err);
/* Wipes the text (it holds the values) and frees it; NULL is nothing. */
void secrets_text_free(char *text);

#endif
