/* The system-call policy, in libseccomp's terms: used at build time only. */
#ifndef AJ_SECCOMP_POLICY_H
#define AJ_SECCOMP_POLICY_H

#include <seccomp.h>

/* Adds every rule to a default-allow context. 0 or -errno. */
int seccomp_policy_add(scmp_filter_ctx ctx);

#endif
