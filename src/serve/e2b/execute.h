/* The code interpreter's port: /execute and /contexts (execute.c). */
#ifndef AJ_SERVE_E2B_EXECUTE_H
#define AJ_SERVE_E2B_EXECUTE_H

#include "common.h"

void e2b_code(struct e2b_call *c);

#endif
