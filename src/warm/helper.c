/* The warm helper: the C a zygote (zygote.py) loads to start each run. It is
 * a shared library of its own (build/warm-helper.so, linked from the jail's
 * objects and libc only), which the host embeds and hands the zygote as a
 * memfd, so it works in any view: the host's (process tier) or an image's
 * (container tier), wherever agentjail is installed.
 *
 * agentjail_warm_spawn checks the request and gives it to jail_plan.c's
 * jail_warm_spawn, the same init and inside steps as a cold run's (see
 * jail_plan.c and warm.c for what differs). Nothing here allocates: it runs in
 * the zygote, whose memory every later run copies, and in the run's init. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/contract.h"
#include "../linux/jail.h"
#include "protocol.h"

/* A warm run's view: the zygote's own (the host's read-only, or the image
 * pivoted to), with the run's own /dev, tmpfs and /proc over it. */
static int warm_setup_root(const struct jail_spec *s, struct setup_error *e)
{
	return jail_populate_root(s, "", e);
}

static void reply_error(struct warm_reply *r, int err, const char *what)
{
	r->err = err;
	snprintf(r->message, sizeof r->message, "warm: %s", what);
}

int agentjail_warm_spawn(const void *msg, size_t len, const int *fds, int nfds, int *pidfd,
			 void *reply, size_t reply_len, const int *spare_ns);
int agentjail_warm_prepare(int *spare_ns);
char *const *agentjail_warm_egress_environment(void);

/* In a run's program process: whether its request asked for egress. */
static int run_has_egress;

/* In a run's program process: E1's egress rows, which the zygote adds to
 * the program's os.environ (the zygote's own environment is E1's base
 * rows, as every run's), or NULL without egress. The rows are the C
 * table's, never a copy in Python. */
__attribute__((visibility("default"))) char *const *agentjail_warm_egress_environment(void)
{
	return run_has_egress ? contract_egress_environment : NULL;
}

/* Between runs: the next run's network, ipc and uts namespaces, made now
 * so that making them is off that run's clock. 0, or -errno (the run then
 * makes its own in the clone, as a cold run does). */
__attribute__((visibility("default"))) int agentjail_warm_prepare(int *spare_ns)
{
	return jail_warm_prepare_ns(spare_ns);
}

/* Returns init's pid (> 0, with *pidfd) in the zygote, 0 in the run's
 * program process, or -errno in the zygote; reply (a struct warm_reply) is
 * filled in the zygote. */
__attribute__((visibility("default"))) int agentjail_warm_spawn(const void *msg, size_t len,
								const int *fds, int nfds,
								int *pidfd, void *reply,
								size_t reply_len,
								const int *spare_ns)
{
	struct warm_request q;
	struct warm_reply r = {.magic = WARM_MAGIC};
	if (reply_len != sizeof r)
		return -EINVAL;
	*pidfd = -1;
	if (len != sizeof q) {
		reply_error(&r, -EPROTO, "a request of the wrong size");
		goto out;
	}
	memcpy(&q, msg, sizeof q);
	r.seq = q.seq;
	if (q.magic != WARM_MAGIC || q.n_cgroup_fds > WARM_MAX_CGROUP_FDS ||
	    q.egress > 1 || q.ahead > 1 || nfds != WARM_FD_CGROUP + q.n_cgroup_fds + q.egress ||
	    (q.cgroup_v2 && q.n_cgroup_fds != 1) ||
	    q.uid == 0 || q.gid == 0) {
		reply_error(&r, -EPROTO, "a malformed request");
		goto out;
	}
	/* CPython's own fork protocol around a fork it does not make itself,
	 * as os.fork() does: before it (the import lock taken, before-fork
	 * hooks), after it in the zygote, and after it in the program's process
	 * (its locks and thread records repaired, at-fork hooks: random
	 * reseeds there). Each is called holding the GIL: the zygote calls
	 * this through ctypes.PyDLL. (Python 3.13 aborts an after-fork that
	 * had no before-fork.) */
	static void (*before_fork)(void), (*after_parent)(void), (*after_child)(void);
	if (!before_fork) {
		before_fork = (void (*)(void))dlsym(RTLD_DEFAULT, "PyOS_BeforeFork");
		after_parent = (void (*)(void))dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Parent");
		after_child = (void (*)(void))dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Child");
	}
	if (!before_fork || !after_parent || !after_child) {
		before_fork = NULL;
		reply_error(&r, -ENOSYS, "the zygote's Python has no PyOS_BeforeFork and "
					 "PyOS_AfterFork_Parent/_Child");
		goto out;
	}
	struct aj_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.limits = q.limits;
	struct jail_spec s = {
		.cfg = &cfg,
		.cancel_fd = -1,
		.uid = q.uid,
		.gid = q.gid,
		.outer_uid = geteuid(),
		.outer_gid = getegid(),
		.address_space_limit = q.address_space_limit,
		.cgroup_ns = q.cgroup_ns,
		.own_users = q.own_users,
		.into_cgroup = q.cgroup_v2,
		.cgroup_fd = q.cgroup_v2 ? fds[WARM_FD_CGROUP] : -1,
		.join_cgroup_fds = q.cgroup_v2 ? NULL : fds + WARM_FD_CGROUP,
		.n_join_cgroup_fds = q.cgroup_v2 ? 0 : q.n_cgroup_fds,
		.setup_root = warm_setup_root,
		.code_fd = fds[WARM_FD_CODE],
		.code_after_go = q.ahead,
		.zygote_fd = -1,
		.helper_fd = -1,
		.spare_ns = {spare_ns[0], spare_ns[1], spare_ns[2]},
		.egress_fd = q.egress ? fds[WARM_FD_CGROUP + q.n_cgroup_fds] : -1,
	};
	before_fork();
	pid_t pid = jail_warm_spawn(&s, fds[WARM_FD_OUT], fds[WARM_FD_ERR], fds[WARM_FD_REPORT],
				    pidfd);
	if (pid == 0) {
		after_child();
		run_has_egress = q.egress;
		return 0; /* the run's program process */
	}
	after_parent();
	if (pid < 0)
		reply_error(&r, pid, "clone the run's init");
	else
		r.err = 0;
out:
	memcpy(reply, &r, sizeof r);
	return r.err ? r.err : 1;
}
