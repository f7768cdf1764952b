/* envd's process service: /process.Process/METHOD (process.c). */
#ifndef AJ_SERVE_E2B_PROCESS_H
#define AJ_SERVE_E2B_PROCESS_H

#include "common.h"

void e2b_process(struct e2b_call *c, const char *method);

#endif
