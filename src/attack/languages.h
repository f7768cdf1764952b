/* The hostile programs in the other languages a sandbox runs: the core
 * attacks of the table (programs.h) written again as a shell line and as
 * JavaScript, so that `agentjail attack` judges a command and a JavaScript
 * run by the very checks on the host that judge the Python program (the
 * same needs, the same fixtures, the same verdict). Each one is bounded as
 * the Python one is, even where a tier failed to hold it. They run only
 * inside a tier, never bare. */
#ifndef AJ_ATTACK_LANGUAGES_H
#define AJ_ATTACK_LANGUAGES_H

#include "programs.h"

/* "python", "shell", "js". */
const char *hostile_lang_name(enum hostile_lang lang);

/* The name --lang takes ("python", "shell" or "sh", "js" or "javascript"):
 * 0, else -1 (out unchanged). */
int hostile_lang_parse(const char *name, enum hostile_lang *out);

/* The program's code in lang, placeholders unfilled (those of programs.h,
 * each inside the language's '...' literal), or NULL where the table has
 * no such program. For the shell, *tools (if tools is non-NULL) gets the
 * commands the line needs besides /bin/sh, space-separated. */
const char *hostile_code(enum hostile_id id, enum hostile_lang lang, const char **tools);

/* The Python program a shell line runs as on every tier: it checks that
 * /bin/sh and the tools are in the sandbox's image (else exits 127, as a
 * shell does for a command not found, saying which is missing), gives
 * SIGPIPE and SIGXFSZ back their default (Python ignores both, and a
 * shell started from a terminal has them), and replaces itself with
 * /bin/sh -c LINE: the exit code and output are the shell's (malloc'd;
 * NULL: out of memory). */
char *hostile_shell_program(const char *line, const char *tools);

#endif
