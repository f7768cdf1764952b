#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp.h"
#include "seccomp_filter.inc" /* generated: build/gen/seccomp_filter.inc */

int syscall_filter_apply(struct setup_error *e)
{
	const struct sock_fprog prog = {
		.len = sizeof policy_insns / sizeof policy_insns[0],
		.filter = (struct sock_filter *)policy_insns,
	};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return setup_fail(e, errno, "seccomp: load");
	return 0;
}
