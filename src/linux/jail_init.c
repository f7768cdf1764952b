/* init's steps every mode of the jail shares (jail_plan.h): PID 1 of the
 * sandbox, still privileged there, never exec'ing. See jail_plan.c's theory of
 * operation. It runs in a copy of a possibly multi-threaded process: plain
 * system calls only, no malloc, no locks. */
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "creds.h"
#include "egress_door.h"
#include "jail_plan.h"
#include "mounts.h"
#include "spawn.h"
#include "supervise.h"

/* Whether fd names another namespace than the one this process is in. */
static bool spare_is_new(int fd, const char *name)
{
	char path[32];
	struct stat spare, own;
	snprintf(path, sizeof path, "/proc/self/ns/%s", name);
	return fstat(fd, &spare) == 0 && stat(path, &own) == 0 &&
	       (spare.st_ino != own.st_ino || spare.st_dev != own.st_dev);
}

int jail_init_build(const struct plan *p, struct setup_error *e)
{
	const struct jail_spec *s = p->s;
	int rc;

	/* Die with the supervisor (a warm run's: with the zygote, which dies
	 * with the host; a run made ahead: with the process tier's thread that
	 * made it, which lives as long as the sandbox). (A supervisor that
	 * died before this line is caught by jail_init_wait_go: its end of the life
	 * socket is closed.) Init's death
	 * then ends the whole namespace. A session's or a zygote's sandbox
	 * outlives the thread that made it: its life socket stands in. */
	if ((s->mode == JAIL_RUN || s->mode == JAIL_WARM_RUN) &&
	    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(1);
	/* The application's signal mask and handlers are not init's. */
	if ((rc = child_reset_signals()))
		return setup_fail(e, -rc, "signals: reset");
	/* Into the run's cgroups (v1) while the host's cgroupfs is in view,
	 * before anything is charged or forked (a warm run: through the
	 * files the host opened). */
	if ((rc = cgroup_join_self(s->join_cgroups, e)))
		return rc;
	for (int i = 0; i < s->n_join_cgroup_fds; i++)
		if ((rc = write_full(s->join_cgroup_fds[i], "0", 1)))
			return setup_fail(e, -rc, "cgroup: join");
	/* A warm run's network, ipc and uts namespaces, made ahead by the
	 * zygote (jail_warm_prepare_ns), or a cold run's, by the host
	 * (jail_spare_ns_make), joined here, before anything uses them. */
	for (int i = 0; (s->mode == JAIL_WARM_RUN || s->join_spare_ns) && i < 3; i++) {
		if (s->spare_ns[i] < 0)
			continue;
		/* A namespace made ahead must be a new one: were it the one
		 * init was cloned into (the host's, or the zygote's), the run
		 * would share its network, ipc or hostname. Refused, never
		 * joined. */
		if (!spare_is_new(s->spare_ns[i], jail_spare_ns_names[i]))
			return setup_fail(e, EINVAL, "the run's %s namespace made ahead is its "
						     "maker's own",
					  jail_spare_ns_names[i]);
		if (setns(s->spare_ns[i], jail_spare_ns_types[i]) < 0)
			return setup_fail(e, errno, "join the run's %s namespace",
					  jail_spare_ns_names[i]);
	}
	int keep[] = {p->out_w, p->err_w, p->report_w, p->life_r, p->req_r, p->rep_w,
		      s->mode == JAIL_WARM_RUN ? s->code_fd : -1, s->egress_fd};
	/* A copy of every fd the supervisor's process had (another thread's
	 * run, a server socket; in a warm run, the zygote's socket) must not
	 * stay open in here. */
	close_fds_except(keep, 8);

	/* A caller that changed uids is not dumpable, which makes its
	 * /proc/self files root's and the map unwritable: nothing runs in
	 * here yet, so being dumpable for the next three writes is safe. */
	if (s->userns) {
		prctl(PR_SET_DUMPABLE, 1);
		if ((rc = userns_map_self(s->outer_uid, s->outer_gid, e)))
			return rc;
	}
	/* init holds a copy of the supervisor's memory: a program sharing its
	 * uid (the user-namespace case) must not read it through ptrace or
	 * /proc/1/mem; and its command line, which anyone in the namespace can
	 * read, is the application's. (A warm run's init is a copy of the
	 * zygote, whose command line and environment are the run's own and
	 * which its program process inherits: left as they are.) */
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return setup_fail(e, errno, "prctl dumpable");
	if (s->mode != JAIL_WARM_RUN)
		child_scrub_args_and_env();
	/* A session keyring of its own: the caller's (and the secrets in it)
	 * is out of reach even before the filter denies keyctl. */
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0)
		return setup_fail(e, errno, "keyring: join a new session keyring");
	/* A session of its own: no controlling terminal to inject keystrokes
	 * into (TIOCSTI) or to send signals to the caller's job. */
	if (setsid() < 0)
		return setup_fail(e, errno, "setsid");
	if (sethostname("sandbox", 7) < 0)
		return setup_fail(e, errno, "uts namespace: sethostname");
	/* The proxy's door, in the run's own network namespace, before any
	 * program runs (a program could otherwise take the port first). */
	if (s->egress_fd >= 0 && (rc = egress_door_open(s->egress_fd, e)))
		return rc;
	if ((rc = mount_make_private(e)) || (rc = s->setup_root(s, e)))
		return rc;
	if ((rc = init_install_stop_handler()))
		return setup_fail(e, -rc, "signals: stop handler");
	return 0;
}

int jail_init_cgroup_ns(const struct jail_spec *s, struct setup_error *e)
{
	if (s->cgroup_ns && unshare(CLONE_NEWCGROUP) < 0)
		return setup_fail(e, errno, "cgroup namespace: unshare");
	return 0;
}

bool jail_init_wait_go(int life_r)
{
	char c;
	ssize_t n;
	while ((n = read(life_r, &c, 1)) < 0 && errno == EINTR)
		;
	return n == 1;
}

/* SIGCHLD only interrupts ppoll (jail_sigchld_only_in_ppoll). */
static void on_child(int sig)
{
	(void)sig; /* only interrupts ppoll */
}

int jail_sigchld_only_in_ppoll(sigset_t *during)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_child;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCHLD, &sa, NULL) < 0 || sigprocmask(SIG_BLOCK, &chld, during) < 0)
		return -errno;
	sigdelset(during, SIGCHLD);
	return 0;
}

void jail_init_until_go(const struct plan *p)
{
	struct setup_error e;
	if (jail_init_build(p, &e))
		jail_init_fail(p, &e);
	if (!jail_init_wait_go(p->life_r))
		_exit(1);
	if (jail_init_cgroup_ns(p->s, &e))
		jail_init_fail(p, &e);
}

void jail_init_take_program(const struct plan *p, int fd)
{
	struct setup_error e;
	uint64_t len;
	if (read_full(fd, &len, sizeof len)) {
		setup_fail(&e, EPIPE, "workspace: the program's source did not come");
		jail_init_fail(p, &e);
	}
	if (jail_write_program(p->s, fd, len, JAIL_WORKSPACE "/" JAIL_PROGRAM, &e))
		jail_init_fail(p, &e);
}

int jail_init_verdict_pipe(const struct plan *p, struct plan *run)
{
	int fds[2];
	*run = *p;
	/* Close-on-exec: the inside process dup2s the write end to fd 3
	 * (which clears it) just before exec; nothing else inherits either. */
	if (pipe2(fds, O_CLOEXEC) < 0 || fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0) {
		struct setup_error e;
		setup_fail(&e, errno, "verdict pipe");
		jail_init_fail(p, &e);
	}
	run->verdict_w = fds[1];
	return fds[0];
}

pid_t jail_init_start_inside(const struct plan *p, const char *what)
{
	int fd = -1;
	pid_t pid = spawn_clone(0, &fd);
	if (pid < 0) {
		struct setup_error e;
		setup_fail(&e, -pid, "%s", what);
		jail_init_fail(p, &e);
	}
	if (pid == 0)
		jail_inside_exec(p);
	close(fd);
	close(p->out_w);
	if (p->err_w != p->out_w)
		close(p->err_w);
	if (p->verdict_w >= 0)
		close(p->verdict_w); /* the program's alone: its EOF is no one's business */
	return pid;
}

int jail_init_wait(const struct plan *p, pid_t pid, const sigset_t *during)
{
	for (;;) {
		int ws;
		pid_t r;
		while ((r = waitpid(-1, &ws, WNOHANG)) > 0)
			if (r == pid)
				return ws;
		struct pollfd pf = {.fd = p->life_r, .events = POLLIN};
		if (ppoll(&pf, 1, NULL, during) == 1 && pf.revents) {
			kill(-1, SIGKILL);
			_exit(0);
		}
	}
}

void jail_init_fail(const struct plan *p, const struct setup_error *e)
{
	report_setup_failed(p->report_w, e);
	_exit(1);
}
