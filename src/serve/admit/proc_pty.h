/* A terminal over HTTP (docs/serve.md, "Terminals"):
 *
 *   POST /v1/sessions/ID/processes   {"pty": {"cols", "rows"}, "command"?
 *                                     | "argv"? (none: /bin/bash), "cwd"?,
 *                                     "env"?, "timeout"?} -> 201 {"pid"}
 *   POST .../processes/PID/resize    {"cols", "rows"} -> {"pid", "cols", "rows"}
 *
 * Its output is the events route's stdout, its keys the stdin route's
 * data (proc_call.h), as any background command's. */
#ifndef AJ_SERVE_PROC_PTY_H
#define AJ_SERVE_PROC_PTY_H

#include <jansson.h>
#include <stdint.h>

#include "agentjail.h"

/* A spawn's body that holds "pty": NULL with its size and *spawn_body
 * (new: the body as a spawn's, the shell when it names no command), or
 * the answer refusing it (400: a size that is none, "stdin" beside it). */
json_t *proc_pty_body(json_t *body, uint16_t size[2], json_t **spawn_body);
/* The resize route's request run on s: proc_call_run's answer. */
json_t *proc_pty_resize(struct aj_session *s, uint32_t pid, json_t *body);

#endif
