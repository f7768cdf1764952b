/* The jail's inside process: init's child, which becomes the program (or,
 * in a session, the interpreter; in warm mode, the zygote). It connects
 * stdio, applies the rlimits, drops to the run's uid with no groups and no
 * capabilities and no_new_privs, loads the seccomp filter and execs; see
 * jail_plan.c's theory of operation. It runs in a copy of a possibly
 * multi-threaded process: plain system calls only, no malloc. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../core/status.h"
#include "creds.h"
#include "jail_plan.h"
#include "rlimits.h"
#include "seccomp.h"

static int setup_fds(const struct plan *p, int *report, struct setup_error *e)
{
	/* Lift the pipe ends above 4 first so no dup2 below can clobber one (a
	 * caller whose own 0-2 were closed gets pipes there; a session's
	 * interpreter gets its request and reply pipes at 3 and 4). */
	int out = fcntl(p->out_w, F_DUPFD_CLOEXEC, 5);
	int err = fcntl(p->err_w, F_DUPFD_CLOEXEC, 5);
	int rep = fcntl(p->report_w, F_DUPFD_CLOEXEC, 5);
	/* A one-shot run's verdict pipe, for its interpreter's fd 3. */
	int verdict = p->verdict_w < 0 ? -1 : fcntl(p->verdict_w, F_DUPFD_CLOEXEC, 5);
	/* And its compiled launcher, for fd 4 (JAIL_LAUNCH_FD). */
	int launch = p->launch_fd < 0 ? -1 : fcntl(p->launch_fd, F_DUPFD_CLOEXEC, 5);
	if (out < 0 || err < 0 || rep < 0 || (p->verdict_w >= 0 && verdict < 0) ||
	    (p->launch_fd >= 0 && launch < 0))
		return setup_fail(e, errno, "stdio: dup");
	*report = rep;
	if (p->req_r >= 0) {
		/* The session interpreter's requests and replies at 3 and 4
		 * (the zygote's socket and helper library), lifted first like
		 * the others; dup2 clears close-on-exec. */
		int req = fcntl(p->req_r, F_DUPFD_CLOEXEC, 5);
		int repl = fcntl(p->rep_w, F_DUPFD_CLOEXEC, 5);
		if (req < 0 || repl < 0 || dup2(req, 3) < 0 || dup2(repl, 4) < 0)
			return setup_fail(e, errno, "session pipes: dup");
		close(req);
		close(repl);
	}
	/* stdin is /dev/null: the program cannot wait on or read the caller's. */
	int null = open("/dev/null", O_RDONLY);
	if (null < 0)
		return setup_fail(e, errno, "stdio: open /dev/null");
	if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		return setup_fail(e, errno, "stdio: dup2");
	/* Nothing else crosses exec: the report pipe is already close-on-exec.
	 * (A warm run has no exec: its process closes them all once set up.) */
	if (close_range(p->req_r >= 0 ? 5 : 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return setup_fail(e, errno, "stdio: close_range");
	/* But the verdict pipe, at fd 3 (dup2 clears close-on-exec): the
	 * launcher (src/core/launch.py) writes a byte there when a
	 * MemoryError ends the program, and makes it close-on-exec at once
	 * so the program's own children do not inherit it. */
	if (verdict >= 0 && (dup2(verdict, AJ_VERDICT_FD) < 0 || close(verdict) < 0))
		return setup_fail(e, errno, "verdict pipe: dup2");
	/* The compiled launcher at fd 4, read-only, which the interpreter
	 * opens as /dev/fd/4 (argv) and the launcher closes at once. */
	if (launch >= 0 && (dup2(launch, JAIL_LAUNCH_FD) < 0 || close(launch) < 0))
		return setup_fail(e, errno, "launcher: dup2");
	return 0;
}

/* What the zygote (root, in the host's user namespace) keeps of root's
 * capabilities, each for a step of a run's init or program process; the
 * rest (modules, raw I/O, ptrace, open_by_handle_at, the clock, ...) leave
 * its bounding set, so nothing it runs can gain them. */
static const int zygote_caps[] = {
	CAP_SYS_ADMIN, /* namespaces, mounts, sethostname */
	CAP_MKNOD,     /* the run's /dev nodes */
	CAP_CHOWN,     /* the workspace and program for the run's uid */
	CAP_DAC_OVERRIDE, /* writing the program into the run's 0700 workspace */
	CAP_FOWNER,    /* their modes */
	CAP_SETUID,    /* the program's uid */
	CAP_SETGID,    /* its gid and groups */
	CAP_SETPCAP,   /* emptying the program's bounding set */
	CAP_KILL,      /* init stopping a program of another uid */
	CAP_NET_ADMIN, /* a run's loopback up for the egress door (its own netns only) */
};

int jail_inside_prepare(const struct plan *p, int *report, struct setup_error *e)
{
	const struct jail_spec *s = p->s;
	int rc;

	/* The OOM killer takes the program and what it forks, never init: an
	 * init killed first ends the run as a sandbox failure instead of the
	 * memory limit at work (init is a copy of the caller, whose resident
	 * set can be large). Raising one's own score needs no privilege. (Not
	 * the zygote: every run's init is a copy of it, and its death would
	 * take every run on it.) */
	if (s->mode != JAIL_ZYGOTE) {
		/* Opened while dumpable, then written. init made itself not
		 * dumpable (init_build), and this process inherited that: its
		 * /proc/self files then belong to the host's root, whom a
		 * user namespace does not map, so even its own
		 * oom_score_adj is EACCES to open there. The open is the only
		 * check (the write asks only that the score go up), so the
		 * process is dumpable for the open alone: nothing of the
		 * run's uid but init exists in the sandbox yet, and it is
		 * not dumpable again before anything of the program runs. */
		bool reopen = s->userns && prctl(PR_SET_DUMPABLE, 1) == 0;
		int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		int oerr = errno;
		if (reopen && prctl(PR_SET_DUMPABLE, 0) < 0) {
			if (adj >= 0)
				close(adj);
			return setup_fail(e, errno, "prctl dumpable");
		}
		int arc = adj < 0 ? -oerr : write_full(adj, "1000", 4);
		if (adj >= 0)
			close(adj);
		if (arc)
			return setup_fail(e, -arc, "oom_score_adj");
	}
	if ((rc = setup_fds(p, report, e)))
		return rc;
	if (s->mode == JAIL_ZYGOTE) {
		/* The zygote keeps root and the capabilities it needs to make
		 * each run's namespaces and mounts and give the run its uid;
		 * each run then applies every step below itself (warm.c). It
		 * execs nothing but its own Python, and never will. */
		if ((rc = creds_limit_bounding_set(zygote_caps, sizeof zygote_caps /
								     sizeof zygote_caps[0], e)))
			return rc;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			return setup_fail(e, errno, "zygote: no_new_privs");
		return chdir("/") < 0 ? setup_fail(e, errno, "chdir /") : 0;
	}
	/* RLIMIT_NPROC counts per uid: the run's own uid when root, and
	 * per user namespace (kernel ucounts) otherwise, so one run's
	 * count is its own either way. */
	if ((rc = rlimits_apply(&p->limits, true, s->address_space_limit, e)) ||
	    (rc = creds_drop(s->uid, s->gid, s->userns, e)))
		return rc;
	/* A warm run's process changed uid without exec, which left it not
	 * dumpable: its /proc/self would be root's, so it could not list its
	 * own fds. Dumpable again, as exec would make a cold run's; its
	 * memory is a copy of the zygote's, which holds nothing of another
	 * run's (warm.c), and the filter below denies ptrace anyway. */
	if (s->mode == JAIL_WARM_RUN && prctl(PR_SET_DUMPABLE, 1) < 0)
		return setup_fail(e, errno, "prctl dumpable");
	if (chdir(JAIL_WORKSPACE) < 0)
		return setup_fail(e, errno, "chdir %s", JAIL_WORKSPACE);
	/* Last, so that everything above could still use what it denies. */
	return syscall_filter_apply(e);
}

void jail_inside_exec(const struct plan *p)
{
	struct setup_error e;
	int report = p->report_w;
	if (jail_inside_prepare(p, &report, &e) == 0) {
		execve(p->argv[0], p->argv, p->envp);
		setup_fail(&e, errno, "exec %s", p->argv[0]);
	}
	report_setup_failed(report, &e);
	_exit(127);
}
