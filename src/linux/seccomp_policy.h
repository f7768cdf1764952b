/* The system-call policy, in libseccomp's terms: used at build time only
 * (tools/gen_filter.c), by two sinks: one adds the rules to a libseccomp
 * filter, the other writes them as a Docker seccomp profile. */
#ifndef AJ_SECCOMP_POLICY_H
#define AJ_SECCOMP_POLICY_H

#include <seccomp.h>

struct policy_sink {
	/* Everything not named by a rule is allowed. A rule: the call `name`
	 * fails with errno_ret when all n comparisons hold (n may be 0). A
	 * name this architecture does not have is the sink's to skip. */
	int (*rule)(void *ctx, int errno_ret, const char *name, unsigned n,
		    const struct scmp_arg_cmp *args);
	void *ctx;
};

/* Sends every rule to the sink. 0 or the sink's first error. */
int seccomp_policy_emit(const struct policy_sink *s);

#endif
