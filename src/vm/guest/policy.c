/* The protections every program in the guest starts under, the host tiers'
 * own: no_new_privs, then the seccomp policy. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
/* The host tiers' system-call policy, compiled to BPF by build-vm.sh from
 * src/linux/seccomp_policy.c: policy_insns[]. */
#include "seccomp_filter.inc"

int apply_policy(void)
{
	const struct sock_fprog prog = {
		.len = sizeof policy_insns / sizeof policy_insns[0],
		.filter = (struct sock_filter *)policy_insns,
	};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}
