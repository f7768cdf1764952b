/* envd's files: GET and POST /files, /filesystem.Filesystem/METHOD (files.c). */
#ifndef AJ_SERVE_E2B_FILES_H
#define AJ_SERVE_E2B_FILES_H

#include "common.h"

void e2b_files(struct e2b_call *c);
void e2b_filesystem(struct e2b_call *c, const char *method);

#endif
