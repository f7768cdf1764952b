/* A process's output as E2B's process stream (process_stream.c). */
#ifndef AJ_SERVE_E2B_PROCESS_STREAM_H
#define AJ_SERVE_E2B_PROCESS_STREAM_H

#include "common.h"

/* Answers c->rs with pid's stream (pty: its output is a terminal's). */
void e2b_process_stream(struct e2b_call *c, uint32_t pid, bool pty);

#endif
