/* The system-call policy every sandbox on the host kernel runs under. It is
 * compiled once, at build time, by tools/gen_filter.c: to BPF, which the
 * library carries (seccomp.c) and needs no libseccomp for at run time, and to
 * a Docker seccomp profile (JSON) for the docker tier. The rules go through a
 * sink, so both come from this one list. */
#include <errno.h>
#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>

#include "seccomp_policy.h"

/* Denied calls fail with EPERM, not a kill: the program sees an ordinary
 * error it can report, and the agent reads why. */
#define DENY EPERM

/* One rule: the call fails with errno_ret when every argument comparison
 * holds. */
static int rule(const struct policy_sink *s, int errno_ret, const char *name, unsigned n,
		const struct scmp_arg_cmp *args)
{
	return s->rule(s->ctx, errno_ret, name, n, args);
}

/* Groups of calls denied outright, each with its reason. */
static const struct {
	const char *why;
	const char *const names[16];
} denied[] = {
	{"filesystems: a program must not remount, pivot or chroot its way out of "
	 "the view it was given, nor mount an unbounded tmpfs of its own",
	 {"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
	  "fsconfig", "fsmount", "fspick", "mount_setattr"}},
	{"namespaces: a new user namespace is where most kernel privilege-escalation "
	 "bugs are reached from; setns would join another's",
	 {"unshare", "setns"}},
	{"other processes' memory and state",
	 {"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"}},
	{"kernel attack surface no Python program needs",
	 {"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
	  "io_uring_register", "lookup_dcookie", "fanotify_init", "name_to_handle_at",
	  "open_by_handle_at"}},
	{"kernel keyrings: a key planted in the uid's keyring would outlive the run, and "
	 "the caller's session keyring holds the caller's secrets",
	 {"keyctl", "add_key", "request_key"}},
	{"the machine itself",
	 {"reboot", "kexec_load", "kexec_file_load", "init_module", "finit_module",
	  "delete_module", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog",
	  "iopl", "ioperm"}},
	{"the clock is the host's",
	 {"settimeofday", "clock_settime", "clock_adjtime", "adjtimex"}},
	{"memory outside every limit: SysV segments and queues stay resident after "
	 "the program lets go, and memfds are not counted by RLIMIT_AS",
	 {"shmget", "msgget", "semget", "memfd_create", "memfd_secret"}},
};


/* Sockets: only the families of an (empty) network. Unix sockets would reach
 * host services through their socket files (a read-only mount does not stop
 * connect), vsock would reach the hypervisor, and the rest are attack
 * surface. socketpair(AF_UNIX) stays allowed: asyncio and multiprocessing
 * use it between the program's own processes. */
static int restrict_sockets(const struct policy_sink *s)
{
	int rc;
	for (int family = 0; family < AF_MAX; family++) {
		if (family == AF_INET || family == AF_INET6 || family == AF_NETLINK)
			continue;
		struct scmp_arg_cmp a[] = {SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)family)};
		if ((rc = rule(s, DENY, "socket", 1, a)))
			return rc;
	}
	struct scmp_arg_cmp beyond[] = {SCMP_A0(SCMP_CMP_GE, (scmp_datum_t)AF_MAX)};
	if ((rc = rule(s, DENY, "socket", 1, beyond)))
		return rc;
	/* Netlink only for routing queries (if_nameindex), which see the
	 * empty namespace; audit, uevents and the rest are the host's. */
	struct scmp_arg_cmp netlink[] = {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
					 SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE)};
	return rule(s, DENY, "socket", 2, netlink);
}

static int restrict_process_creation(const struct policy_sink *s)
{
	int rc;
	/* clone with any namespace flag: the namespaces the sandbox gave are
	 * the only ones. (CLONE_NEWTIME shares clone's exit-signal byte and
	 * works only through unshare and clone3, both refused.) */
	static const scmp_datum_t ns_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
						 CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
						 CLONE_NEWNET};
	for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
		struct scmp_arg_cmp a[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i])};
		if ((rc = rule(s, DENY, "clone", 1, a)))
			return rc;
	}
	/* clone3 takes its flags in memory a filter cannot read: make it
	 * unavailable, and glibc falls back to clone, which is checked. */
	if ((rc = rule(s, ENOSYS, "clone3", 0, NULL)))
		return rc;
	/* personality: only the default, PER_LINUX. Any other execution
	 * domain or flag (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE) weakens the
	 * process. (A query, 0xffffffff, is refused too; Python never asks.) */
	struct scmp_arg_cmp not_linux[] = {SCMP_A0(SCMP_CMP_NE, 0)};
	if ((rc = rule(s, DENY, "personality", 1, not_linux)))
		return rc;
	return 0;
}

int seccomp_policy_emit(const struct policy_sink *s)
{
	int rc = 0;
	for (size_t g = 0; !rc && g < sizeof denied / sizeof denied[0]; g++)
		for (size_t i = 0; !rc && denied[g].names[i]; i++)
			rc = rule(s, DENY, denied[g].names[i], 0, NULL);
	if (!rc)
		rc = restrict_sockets(s);
	if (!rc)
		rc = restrict_process_creation(s);
	return rc;
}
