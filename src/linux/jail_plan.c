/* The jail engine shared by the process and container tiers.
 *
 * Theory of operation
 * -------------------
 * Three processes take part in a run.
 *
 *  supervisor  the caller of aj_run, on the host. It makes three pipes
 *              (stdout, stderr, report) and a life socket, and clones init
 *              into new pid, mount, network, ipc and uts namespaces (and a
 *              user namespace when not root), into the run's cgroup where the
 *              tier has one (cgroup v2) (jail_run_prepare); then says "go" on
 *              the life socket and sends the program's source after it
 *              (jail_run_ready). Then it supervises (supervise.c): reads and
 *              caps both streams, keeps the wall clock from the program's
 *              start, and stops the sandbox by signalling init. The process
 *              tier prepares a run's sandbox ahead, in a thread of its own,
 *              so that a run's wait is only its program's (process.c).
 *
 *  init        PID 1 of the new pid namespace, still privileged there, never
 *              exec'ing. It joins the run's cgroups itself (v1), resets what
 *              it inherited (signals, fds, keyring, session, its copy of the
 *              caller's argv), has the tier build
 *              the filesystem view (setup_root), waits for "go", writes the
 *              source that follows it into the workspace, forks the inside
 *              process and reports that it started, then reaps every process of the namespace
 *              until the program ends, reports the program's wait status and
 *              usage on the report pipe, and exits. The kernel then SIGKILLs
 *              all that is left in the namespace (a setsid() double-forked
 *              daemon included) and frees its mounts, so nothing of the run
 *              outlives init. init dies with the supervisor (PDEATHSIG), so a
 *              killed supervisor leaves nothing behind either.
 *
 *  inside      init's child. Connects stdio (stdin /dev/null, stdout/stderr
 *              the pipes), applies the rlimits, drops to the run's uid with
 *              no groups and no capabilities (bounding set emptied too) and
 *              no_new_privs, loads the seccomp filter (seccomp_policy.c), and
 *              execs `python3 -I -u main.py` in the workspace with an
 *              environment built from nothing.
 *
 * Any failed setup step is reported on the report pipe as "step: ERRNO" and
 * the run is refused (sandbox_error): nothing runs with less than promised.
 *
 * Sessions
 * --------
 * A session's sandbox is built the same way (jail_session_start) and lives
 * until the session closes. Init then does not wait for one "go": each 's'
 * on the life socket starts a session interpreter (src/core/repl.py as
 * `python3 -I -u -c`) through exactly the inside steps above, with two more
 * pipes as its fds 3 (requests) and 4 (replies). While it runs, init reaps
 * orphans and watches the life socket; when the interpreter ends (a crash, a
 * limit, or the supervisor's stop signal at a call's wall clock), init kills
 * whatever it left (its state is gone with it), reports its wait status and
 * waits for the next 's'. EOF on the life socket (the session closed, or its
 * process died) ends init, and with it the whole sandbox. A session's init
 * has no PDEATHSIG: that fires when the creating *thread* exits, and a
 * session outlives the call that opened it; the life socket's EOF stands in.
 * The per-call supervision is src/linux/session_io.c.
 *
 * Warm mode
 * ---------
 * A zygote's sandbox (jail_zygote_start) is built the same way; its inside
 * process keeps the privilege to make each run's namespaces and execs the
 * zygote. Each warm run's init is cloned by the zygote (jail_warm_spawn) and
 * its program's process returns to the zygote's Python instead of exec'ing.
 *
 * Where it is
 * -----------
 * One file per mode holds its init body and its entry point: jail_run.c,
 * jail_session.c, jail_warm.c (the zygote and its runs). The steps the modes
 * share are written once: this file (the supervisor's), jail_init.c
 * (init's), jail_inside.c (the inside process's), jail_root.c (the view's
 * writable places); jail_plan.h lists them.
 *
 * Between clone and execve the code runs in a copy of a possibly
 * multi-threaded process: plain system calls only, no malloc, no locks, no
 * glibc wrapper that acts on "all threads" (see creds.c).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../core/contract.h"
#include "jail_plan.h"
#include "ns.h"
#include "spawn.h"

const unsigned long jail_base_namespaces =
	CLONE_NEWPID |  /* sees and signals only its own processes; init's end kills them all */
	CLONE_NEWNS |   /* its mounts (its view, private tmpfs, /proc) are its own */
	CLONE_NEWNET |  /* no interface but a down loopback: no network at all */
	CLONE_NEWIPC |  /* SysV IPC and POSIX queues apart from the host and other runs */
	CLONE_NEWUTS;   /* its own hostname */

const int jail_spare_ns_types[3] = {CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS};
const char *const jail_spare_ns_names[3] = {"net", "ipc", "uts"};

void jail_plan_init(struct plan *p, const struct jail_spec *s, enum jail_mode mode)
{
	memset(p, 0, sizeof *p);
	p->spec = *s;
	p->spec.mode = mode;
	p->s = &p->spec;
	p->limits = s->cfg->limits;
	p->out_w = p->err_w = p->report_w = p->life_r = p->req_r = p->rep_w = p->verdict_w = p->launch_fd = -1;
	/* Rule E1: the contract's rows, the egress rows when the run has a
	 * proxy (the clients find it), the deployer's checked variables. A
	 * warm run's process is the zygote's fork: it has the zygote's, which
	 * were made here from the sandbox's config. */
	contract_environment_fill(p->envp, s->egress_fd >= 0, s->cfg);
}

int jail_pipes_open(struct jail_pipes *jp, struct plan *p)
{
	enum jail_mode mode = p->s->mode;
	int rc;
	for (int i = 0; i < 2; i++)
		jp->out[i] = jp->err[i] = jp->report[i] = jp->life[i] = jp->req[i] = jp->rep[i] = -1;
	if ((rc = pipe_cloexec(jp->out, 1)) ||
	    (mode != JAIL_ZYGOTE && (rc = pipe_cloexec(jp->err, 1))) ||
	    (rc = pipe_cloexec(jp->report, 1)))
		return rc;
	/* The life channel ("go", a session's "s", a one-shot run's source
	 * after "go") is a socket, so that a write to an init that is gone
	 * fails (send_full's MSG_NOSIGNAL) instead of raising SIGPIPE in the
	 * caller; its EOF ends init as a pipe's did. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, jp->life) < 0)
		return -errno;
	if (mode == JAIL_SESSION &&
	    ((rc = pipe_cloexec(jp->req, 0)) || (rc = pipe_cloexec(jp->rep, 1))))
		return rc;
	p->out_w = jp->out[1];
	/* The zygote's stdout and stderr are one pipe: what it says before it
	 * is ready (an import that failed) goes into the host's error. */
	p->err_w = mode == JAIL_ZYGOTE ? jp->out[1] : jp->err[1];
	p->report_w = jp->report[1];
	p->life_r = jp->life[0];
	if (mode == JAIL_SESSION) {
		p->req_r = jp->req[0];
		p->rep_w = jp->rep[1];
	}
	return 0;
}

void jail_pipes_close_child_ends(struct jail_pipes *jp)
{
	jail_close_fd(&jp->out[1]);
	jail_close_fd(&jp->err[1]);
	jail_close_fd(&jp->report[1]);
	jail_close_fd(&jp->life[0]);
	jail_close_fd(&jp->req[0]);
	jail_close_fd(&jp->rep[1]);
}

void jail_pipes_close(struct jail_pipes *jp)
{
	for (int i = 0; i < 2; i++) {
		jail_close_fd(&jp->out[i]);
		jail_close_fd(&jp->err[i]);
		jail_close_fd(&jp->report[i]);
		jail_close_fd(&jp->life[i]);
		jail_close_fd(&jp->req[i]);
		jail_close_fd(&jp->rep[i]);
	}
}

int jail_clone_init(const struct plan *p, void (*body)(const struct plan *p), pid_t *pid,
		    int *pidfd, struct aj_error *err)
{
	const struct jail_spec *s = p->s;
	unsigned long flags = jail_base_namespaces | (s->userns ? CLONE_NEWUSER : 0);
	/* Namespaces made ahead are joined by init instead (jail_init.c). */
	for (int i = 0; s->join_spare_ns && i < 3; i++)
		if (s->spare_ns[i] >= 0)
			flags &= ~(unsigned long)jail_spare_ns_types[i];
	pid_t child = s->into_cgroup ? spawn_clone_into_cgroup(flags, s->cgroup_fd, pidfd)
				     : spawn_clone(flags, pidfd);
	if (child == 0) {
		body(p);
		_exit(1); /* a body never returns; init must not go on as the caller */
	}
	if (child > 0) {
		*pid = child;
		return 0;
	}
	/* clone names no culprit when it fails: find out which namespace this
	 * machine refuses. */
	if (ns_probe(flags, err) == 0)
		error_set(err, child, "clone: %s", errno_name(-child));
	return child;
}

void jail_kill_reap(int pidfd)
{
	pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
	siginfo_t si;
	while (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR)
		;
}

void jail_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}
