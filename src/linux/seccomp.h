/* The system-call filter (policy and reasons: seccomp_policy.c), compiled
 * to BPF at build time and applied in the sandbox child just before exec with
 * one plain system call. */
#ifndef AJ_SECCOMP_H
#define AJ_SECCOMP_H

#include "report.h"

/* In the child, after no_new_privs: from here on the filter holds, for the
 * program and everything it starts. */
int syscall_filter_apply(struct setup_error *e);

#endif
