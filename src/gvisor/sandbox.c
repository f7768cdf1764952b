/* One gVisor sandbox, from its start to its end: see sandbox.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../boot/egress.h"
#include "../egress/proxy.h"
#include "../gvisor/bundle.h"
#include "../boot/rundir.h"
#include "../gvisor/runsc.h"
#include "../gvisor/sandbox.h"
#include "../linux/spawn.h"
#include "../linux/supervise.h"
#include "../linux/tree.h"

/* Memory: each process's address space is memory_mb (RLIMIT_AS, enforced
 * by the sentry: MemoryError, as on the process tier). The cgroup around
 * the whole sandbox is the backstop, and its OOM killer can only take the
 * sentry (all guest memory is the sentry's), which ends the sandbox, a
 * session's too. So it allows twice the limit, plus runsc, sentry and
 * gofer themselves (about 45 MiB for print(1) here): gVisor copies more on
 * fork than Linux does, and a bomb of 64 Python processes held by
 * RLIMIT_NPROC took 335 MiB (at 256 + 64 the sentry was killed). */
#define GVISOR_MEMORY_FACTOR 2
#define GVISOR_RUNTIME_MB 64
/* The host's pids cgroup counts gVisor's own threads (about 30 for runsc,
 * gofer and sentry) and, on ptrace, about ten host tasks per guest process
 * (a fork bomb held at 64 by RLIMIT_NPROC peaked at 627 here): it only
 * backstops the sentry, and RLIMIT_NPROC inside bounds the program. A limit
 * near the program's own kills the sentry itself (640 did, under a fork
 * bomb: runsc exits 2 without a word). */
#define GVISOR_HOST_TASKS 256
#define GVISOR_TASKS_PER_PROCESS 32
/* How long the end of a sandbox may take: SIGKILL to each of its processes
 * and its keeper reaping them all (a fork bomb's 600 ptrace tasks take well
 * under a second here, more under load). A result means the sandbox is
 * gone; one that cannot be ended in this time is reported, not waited for
 * without end. */
#define END_BOUND_MS 10000.0

static int sandbox_make(const struct gvisor_host *st, const struct aj_config *cfg,
			struct egress_proxy *egress, struct gvisor_sandbox *sb, struct aj_error *err)
{
	memset(sb, 0, sizeof *sb);
	sb->slot.lock_fd = -1;
	int rc = slot_acquire(cfg, &sb->slot, err);
	if (rc)
		return rc;
	struct aj_limits host = cfg->limits;
	host.memory_mb = GVISOR_MEMORY_FACTOR * host.memory_mb + GVISOR_RUNTIME_MB;
	host.pids = GVISOR_HOST_TASKS + GVISOR_TASKS_PER_PROCESS * cfg->limits.pids;
	if ((rc = cgroup_create(&st->cgroups, &host, &sb->cg, err)))
		return rc;
	sb->have_cg = true;
	/* The cgroup's name is unique on the machine (pid, counter, time):
	 * so are the run directory and runsc's container id, which must be
	 * (its control socket's name is global). */
	const char *name = strrchr(sb->cg.dir[0], '/');
	name = name ? name + 1 : sb->cg.dir[0];
	snprintf(sb->id, sizeof sb->id, "agentjail-%.80s", name);
	char dir[PATH_MAX], sub[PATH_MAX + 16];
	snprintf(dir, sizeof dir, "%.3000s/%.200s", st->run_base, name);
	if (mkdir(dir, 0700) < 0)
		return error_set(err, -errno, "gvisor: mkdir %s: %s", dir, errno_name(errno));
	/* Only now the run's to remove: never a directory it did not make. */
	memcpy(sb->dir, dir, sizeof dir);
	snprintf(sub, sizeof sub, "%s/bundle", sb->dir);
	if (mkdir(sub, 0700) < 0)
		return error_set(err, -errno, "gvisor: mkdir %s: %s", sub, errno_name(errno));
	char egress_dir[PATH_MAX + 16];
	if (egress) {
		/* Removed with the run directory (sandbox_destroy). */
		snprintf(egress_dir, sizeof egress_dir, "%s/egress", sb->dir);
		if (mkdir(egress_dir, 0700) < 0)
			return error_set(err, -errno, "gvisor: mkdir %s: %s", egress_dir,
					 errno_name(errno));
		int fd = boot_egress_socket(egress_dir, sb->slot.uid, sb->slot.gid, err);
		if (fd < 0)
			return fd;
		if ((rc = egress_proxy_add_listener(egress, fd))) /* owns fd */
			return error_set(err, rc, "egress: the proxy would not take its socket: %s",
					 errno_name(-rc));
	}
	struct gvisor_bundle b = {.root = st->root, .python = cfg->python, .uid = sb->slot.uid,
				  .gid = sb->slot.gid, .limits = &cfg->limits, .cfg = cfg,
				  .ro_binds = cfg->ro_binds, .ro_bind_count = cfg->ro_bind_count,
				  .egress_dir = egress ? egress_dir : NULL};
	if ((rc = gvisor_bundle_write(sub, &b, err)))
		return rc;
	snprintf(sub, sizeof sub, "%s/state", sb->dir);
	if (mkdir(sub, 0700) < 0)
		return error_set(err, -errno, "gvisor: mkdir %s: %s", sub, errno_name(errno));
	return 0;
}

/* Nothing of the sandbox remains: its processes, cgroup, bundle and
 * runsc's state. 0, or -errno with err naming what is left. */
static int sandbox_destroy(struct gvisor_sandbox *sb, struct aj_error *err)
{
	int rc = 0;
	if (sb->have_cg) {
		if (cgroup_kill_all(&sb->cg) < 0)
			rc = error_set(err, -EBUSY, "gvisor: processes of %s would not die", sb->id);
		struct aj_error e = {0};
		if (cgroup_destroy(&sb->cg, &e) && !rc)
			rc = error_set(err, e.code, "%s", e.message);
		sb->have_cg = false;
	}
	if (sb->dir[0]) {
		int r = tree_remove(sb->dir);
		if (r && !rc)
			rc = error_set(err, r, "gvisor: removing %s: %s", sb->dir, errno_name(-r));
		sb->dir[0] = 0;
	}
	slot_release(&sb->slot);
	return rc;
}

static void started_close_fds(struct gvisor_started *s)
{
	int *fds[] = {&s->keeper_pidfd, &s->in_fd, &s->out_fd, &s->err_fd};
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/* What is left of a sandbox that would not end, for the message: the
 * processes its cgroup still lists (a few of them by name). */
static void describe_left(const struct gvisor_sandbox *sb, pid_t keeper, char *out, size_t n)
{
	const struct cgroup_run *cg = &sb->cg;
	char path[512];
	snprintf(path, sizeof path, "%.400s/cgroup.procs", cg->dir[cg->version == 2 ? 0 : CG_PIDS]);
	FILE *f = sb->have_cg ? fopen(path, "re") : NULL;
	int pid, count = 0;
	size_t used = 0;
	char named[300] = "";
	while (f && fscanf(f, "%d", &pid) == 1) {
		if (count++ >= 4)
			continue;
		char comm_path[64], comm[32] = "?";
		snprintf(comm_path, sizeof comm_path, "/proc/%d/comm", pid);
		FILE *c = fopen(comm_path, "re");
		if (c && fgets(comm, sizeof comm, c))
			comm[strcspn(comm, "\n")] = 0;
		if (c)
			fclose(c);
		int w = snprintf(named + used, sizeof named - used, "%s%d (%s)", used ? ", " : "",
				 pid, comm);
		if (w > 0 && (size_t)w < sizeof named - used)
			used += (size_t)w;
	}
	if (f)
		fclose(f);
	snprintf(out, n, "%d process%s in its cgroup%s%s%s, and its keeper (pid %d) still reaping",
		 count, count == 1 ? "" : "es", count ? ": " : "", named, count > 4 ? ", ..." : "",
		 (int)keeper);
}

/* Ends every process of a started sandbox and reaps its keeper, within
 * END_BOUND_MS. The keeper ends only once nothing of the sandbox is left
 * (gvisor/runsc.c), so its end is the proof that the sandbox is gone.
 * 0 with *si how the keeper ended (as runsc did), or -EBUSY with err
 * naming what was left, the keeper killed (its orphans go to PID 1). */
int gvisor_started_end(struct gvisor_started *s, siginfo_t *si, struct aj_error *err)
{
	memset(si, 0, sizeof *si);
	if (s->keeper_pidfd < 0)
		return 0;
	const double until = now_ms() + END_BOUND_MS;
	struct pollfd p = {.fd = s->keeper_pidfd, .events = POLLIN};
	while (poll(&p, 1, 0) <= 0) {
		if (now_ms() >= until) {
			char left[400];
			describe_left(&s->sb, s->keeper_pid, left, sizeof left);
			error_set(err, -EBUSY, "gvisor: the sandbox %s did not end within %.0f s: %s",
				  s->sb.id, END_BOUND_MS / 1000.0, left);
			pidfd_send_signal(s->keeper_pidfd, SIGKILL, NULL, 0);
			spawn_reap(s->keeper_pidfd, si);
			close(s->keeper_pidfd);
			s->keeper_pidfd = -1;
			return -EBUSY;
		}
		/* Again and again: a process forked as a pass read the list
		 * is in the cgroup for the next. */
		if (s->sb.have_cg)
			cgroup_kill_all(&s->sb.cg);
		poll(&p, 1, 20);
	}
	spawn_reap(s->keeper_pidfd, si);
	close(s->keeper_pidfd);
	s->keeper_pidfd = -1;
	return 0;
}

/* Ends a started sandbox that never ran (or whose run is over): nothing of
 * it is left, or err says what is. */
int gvisor_started_destroy(struct gvisor_started *s, struct aj_error *err)
{
	siginfo_t si;
	int rc = gvisor_started_end(s, &si, err);
	started_close_fds(s);
	struct aj_error e = {0};
	int rc2 = sandbox_destroy(&s->sb, rc ? &e : err);
	return rc ? rc : rc2;
}

int gvisor_start(const struct gvisor_host *st, const char *platform, const struct aj_config *cfg,
		 struct egress_proxy *egress, struct gvisor_started *s, struct aj_error *err)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
	s->keeper_pidfd = s->in_fd = s->out_fd = s->err_fd = -1;
	s->egress = egress != NULL;
	int rc = sandbox_make(st, cfg, egress, &s->sb, err);
	if (rc)
		goto fail;
	/* stdin is a socket: a send to a sandbox that is gone fails with
	 * EPIPE (MSG_NOSIGNAL), where a pipe would raise SIGPIPE in the
	 * caller. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 || pipe_cloexec(out, 1) < 0 ||
	    pipe_cloexec(errp, 1) < 0) {
		rc = error_set(err, -errno, "gvisor: pipe: %s", errno_name(errno));
		goto fail;
	}
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	char bundle[PATH_MAX + 16], state[PATH_MAX + 16];
	snprintf(bundle, sizeof bundle, "%s/bundle", s->sb.dir);
	snprintf(state, sizeof state, "%s/state", s->sb.dir);
	struct runsc_launch launch = {.runsc = st->runsc, .platform = platform, .state = state,
				      .bundle = bundle, .id = s->sb.id, .cg = &s->sb.cg,
				      .in_fd = in[0], .out_fd = out[1], .err_fd = errp[1],
				      .host_uds = s->egress};
	pid_t pid = runsc_spawn(&launch, &s->keeper_pidfd, err);
	if (pid < 0) {
		rc = (int)pid;
		goto fail;
	}
	s->keeper_pid = pid;
	close(in[0]), close(out[1]), close(errp[1]);
	s->in_fd = in[1];
	s->out_fd = out[0];
	s->err_fd = errp[0];
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	struct aj_error e2 = {0};
	if (gvisor_started_destroy(s, &e2))
		error_set(err, err->code, "%s; and %s", err->message, e2.message);
	return rc;
}
