/* The gvisor tier: a kernel boundary without a hypervisor. Each run is one
 * gVisor sandbox (Debian's runsc): the program's system calls go to the
 * sentry, gVisor's kernel in user space, not to the host's; the host kernel
 * sees only the sentry's own narrow set of calls under runsc's seccomp
 * filter. It needs no KVM: the ptrace platform works on any Linux host, and
 * KVM is used where a probe run shows it works (on this machine's PVM
 * /dev/kvm the sentry spins at start: docs/gvisor-on-this-machine.md).
 *
 * One run:
 *
 *   slot      a uid of the run's own (the program's user inside gVisor)
 *   cgroup    memory (no swap), pids and one CPU, made by us, as the
 *             container tier's (cgroup.c, v1 or v2), with room on top for
 *             gVisor itself (the figures below): runsc, the sentry and the
 *             gofer are born in it (runsc --ignore-cgroups: it makes none
 *             of its own), so the limits hold the whole sandbox and one
 *             kill takes all of it. The program's own bounds are inside:
 *             RLIMIT_AS per process (MemoryError) and RLIMIT_NPROC
 *   bundle    config.json (gvisor/bundle.c): the image root read-only, no
 *             capabilities, no_new_privs, our seccomp policy applied by the
 *             sentry, rlimits, gVisor's own /proc, size-limited tmpfs for
 *             /tmp, /var/tmp and /dev/shm, no /sys, loopback-only network
 *   run       `runsc run` with the run's pipes as its stdio: PID 1 inside is
 *             boot.py (the docker tier's): the program arrives on stdin,
 *             and the program's wait status and usage at the end of stderr
 *   watch     the supervisor here enforces the wall clock and the output
 *             caps; a timeout, a flood or a cancel SIGKILLs every process in
 *             the cgroup (runsc included), which ends the sandbox at once
 *   end       runsc's keeper, outside the cgroup, is the sandbox's
 *             subreaper (gvisor/runsc.c): it ends only once every process
 *             of the sandbox has ended and been reaped, so the result waits
 *             for it, within END_BOUND_MS; past that the result is a
 *             sandbox_error naming what was left, never a quiet return
 *   after     the OOM killer's count in the cgroup (status memory), then the
 *             cgroup, the bundle and runsc's state directory are removed
 *
 * A caller that dies mid-run takes runsc with it (PDEATHSIG) and runsc its
 * sandbox; the next open of the tier removes the run directory, and the
 * cgroup sweep the empty cgroup. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../docker/stream.h"
#include "../gvisor/bundle.h"
#include "../gvisor/runsc.h"
#include "../session/boot.h"
#include "../linux/creds.h"
#include "../linux/spawn.h"
#include "../linux/supervise.h"
#include "tier.h"

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
/* gVisor does not enforce RLIMIT_CPU: the supervisor reads the CPU time of
 * the run's cgroup every CPU_CHECK_MS and stops the sandbox past the limit.
 * The cgroup's time includes runsc's, the gofer's and the sentry's own
 * (starting them and the interpreter takes 0.3-0.6 s of CPU here), hence
 * the allowance on top of the program's limit. */
#define CPU_CHECK_MS 200.0
#define CPU_ALLOWANCE_MS 1500.0
/* How long a KVM probe run may take before KVM is judged unusable. */
#define KVM_PROBE_SEC 15.0
#define PLATFORM_CACHE "/var/lib/agentjail/gvisor-platform"
/* How long the end of a sandbox may take: SIGKILL to each of its processes
 * and its keeper reaping them all (a fork bomb's 600 ptrace tasks take well
 * under a second here, more under load). A result means the sandbox is
 * gone; one that cannot be ended in this time is reported, not waited for
 * without end. */
#define END_BOUND_MS 10000.0

struct started;

struct gvisor_state {
	char runsc[PATH_MAX];
	char version[128];
	char platform[16];      /* "ptrace" or "kvm" */
	char why[400];          /* why that platform */
	char root[PATH_MAX];    /* the image's root directory */
	char run_base[PATH_MAX];
	struct cgroup_layout cgroups;
	/* The pool (cfg->vm_pool): sandboxes started ahead, boot.py in each
	 * waiting for a program; each serves one run and is replaced. */
	const struct aj_config *cfg;
	unsigned want;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t filler;
	bool filling, stopping;
	struct started *ready;
	unsigned nready;
};

/* ---- run directories ---- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

static int remove_tree(const char *path)
{
	return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT
		       ? -errno
		       : 0;
}

/* Run directories whose maker died: its runsc died with it (PDEATHSIG) and
 * its sandbox with runsc, so only runsc's state files are left. Named
 * run-PID-...; only those at least ten seconds old whose pid is gone. */
static void sweep_run_dirs(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;
	char path[PATH_MAX];
	while (d && (de = readdir(d)))
		if (cgroup_run_orphaned(base, de->d_name, path, sizeof path))
			remove_tree(path);
	if (d)
		closedir(d);
}

/* ---- one sandbox ---- */

struct sandbox {
	struct uid_slot slot;
	struct cgroup_run cg;
	bool have_cg;
	char dir[PATH_MAX];     /* run_base/NAME: bundle/ and state/ */
	char id[96];
};

static int sandbox_make(const struct gvisor_state *st, const struct aj_config *cfg,
			struct sandbox *sb, struct aj_error *err)
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
	struct gvisor_bundle b = {.root = st->root, .python = cfg->python, .uid = sb->slot.uid,
				  .gid = sb->slot.gid, .limits = &cfg->limits,
				  .ro_binds = cfg->ro_binds, .ro_bind_count = cfg->ro_bind_count};
	if ((rc = gvisor_bundle_write(sub, &b, err)))
		return rc;
	snprintf(sub, sizeof sub, "%s/state", sb->dir);
	if (mkdir(sub, 0700) < 0)
		return error_set(err, -errno, "gvisor: mkdir %s: %s", sub, errno_name(errno));
	return 0;
}

/* Nothing of the sandbox remains: its processes, cgroup, bundle and
 * runsc's state. 0, or -errno with err naming what is left. */
static int sandbox_destroy(struct sandbox *sb, struct aj_error *err)
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
		int r = remove_tree(sb->dir);
		if (r && !rc)
			rc = error_set(err, r, "gvisor: removing %s: %s", sb->dir, errno_name(-r));
		sb->dir[0] = 0;
	}
	slot_release(&sb->slot);
	return rc;
}

struct watch {
	int pidfd, in_fd, out_fd, err_fd, cancel_fd;
	bool cpu_exceeded;      /* the cgroup's CPU time passed the limit */
	double cpu_used;        /* its CPU time since the program went in, last read */
	double cpu_base, cpu_limit;
	const struct sandbox *sb;
	const char *input;
	size_t input_len;
	struct capture out, err;
	struct supervisor sv;
};

static void watch_ended(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)src, (void)revents;
	sv->done = true;
}

static void watch_input_end(struct supervisor *sv)
{
	struct watch *w = sv->ctx;
	/* The whole program is in: boot.py reads to EOF. */
	close(w->in_fd);
	w->in_fd = sv->in_fd = -1;
}

/* gVisor does not enforce RLIMIT_CPU: the cgroup's CPU time, read here. */
static bool watch_cpu(struct supervisor *sv)
{
	struct watch *w = sv->ctx;
	w->cpu_used = cgroup_cpu_ms(&w->sb->cg) - w->cpu_base;
	if (w->cpu_used <= w->cpu_limit)
		return false;
	w->cpu_exceeded = true;
	return true;
}

static void watch_stop(struct supervisor *sv)
{
	const struct watch *w = sv->ctx;
	/* runsc, sentry, gofer and the program: all of them, at once; the
	 * end (started_end) waits for them, bounded. runsc's state is
	 * removed with the run directory. */
	cgroup_kill_all(&w->sb->cg);
}

/* From runsc's start until it has ended; a timeout, a flood or a cancel
 * kills the whole cgroup. Fills o's flags and wall_ms. */
static void watch_run(struct watch *w, const struct sandbox *sb, const struct aj_limits *l,
		      double start_ms, struct outcome *o)
{
	struct supervisor *sv = &w->sv;
	supervisor_init(sv, o, start_ms, l->wall_sec);
	w->sb = sb;
	/* The CPU the sandbox used before the program went in (a pooled one
	 * started earlier) is not the program's. */
	w->cpu_base = cgroup_cpu_ms(&sb->cg);
	w->cpu_limit = (double)l->cpu_sec * 1000.0 + CPU_ALLOWANCE_MS;
	sv->grace_ms = 0; /* the stop ends the sandbox */
	sv->cancel_fd = w->cancel_fd;
	sv->out_fd[0] = w->out_fd;
	sv->out_fd[1] = w->err_fd;
	sv->cap[0] = &w->out;
	sv->cap[1] = &w->err;
	sv->src[0] = (struct supervisor_source){.fd = w->pidfd, .ready = watch_ended};
	sv->in_fd = w->in_fd;
	sv->input = w->input;
	sv->input_len = w->input_len;
	sv->input_is_socket = true;
	sv->input_end = watch_input_end;
	if (w->cpu_base >= 0) {
		sv->check = watch_cpu;
		sv->check_every_ms = CPU_CHECK_MS;
	}
	sv->stop = watch_stop;
	sv->ctx = w;
	supervisor_run(sv);
}

/* Once the sandbox has ended: what it wrote is in the pipes. */
static void watch_drain(struct watch *w)
{
	supervisor_drain(&w->sv);
}

/* A sandbox started: runsc running under its keeper, boot.py inside
 * waiting for its program on stdin. */
struct started {
	struct sandbox sb;
	pid_t keeper_pid;
	int keeper_pidfd;
	int in_fd;              /* runsc's stdin (a socket): ours, non-blocking */
	int out_fd, err_fd;     /* runsc's stdout and stderr: ours, non-blocking */
};

static void started_close_fds(struct started *s)
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
static void describe_left(const struct sandbox *sb, pid_t keeper, char *out, size_t n)
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
static int started_end(struct started *s, siginfo_t *si, struct aj_error *err)
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
static int started_destroy(struct started *s, struct aj_error *err)
{
	siginfo_t si;
	int rc = started_end(s, &si, err);
	started_close_fds(s);
	struct aj_error e = {0};
	int rc2 = sandbox_destroy(&s->sb, rc ? &e : err);
	return rc ? rc : rc2;
}

static int start_sandbox(const struct gvisor_state *st, const char *platform,
			 const struct aj_config *cfg, struct started *s, struct aj_error *err)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
	s->keeper_pidfd = s->in_fd = s->out_fd = s->err_fd = -1;
	int rc = sandbox_make(st, cfg, &s->sb, err);
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
				      .in_fd = in[0], .out_fd = out[1], .err_fd = errp[1]};
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
	if (started_destroy(s, &e2))
		error_set(err, err->code, "%s; and %s", err->message, e2.message);
	return rc;
}

/* The sandbox was ended from the host (SIGKILL to its cgroup, or the OOM
 * killer's to the sentry): the program has no exit code of its own. */
static void killed_by_host(struct aj_result *res, enum aj_status status)
{
	res->status = status;
	res->has_exit_code = false;
	res->exit_code = 0;
	res->signal = SIGKILL;
}

/* The program, in a started sandbox, under the wall clock from start_ms;
 * the sandbox is destroyed after. Fills res fully. */
static int run_in(struct started *s, const struct aj_config *cfg, const struct run_request *req,
		  double start_ms, struct aj_result *res)
{
	const struct aj_limits *l = &cfg->limits;
	struct aj_error err = {0};
	struct outcome o;
	memset(&o, 0, sizeof o);
	char nonce[32];
	size_t input_len = 0;
	char *input = docker_run_input(req->code, req->len, l->wall_sec, nonce, sizeof nonce,
				       &input_len);
	if (!input) {
		result_sandbox_error(res, "gvisor: out of memory");
		res->wall_ms = now_ms() - start_ms;
		started_destroy(s, &err);
		return -ENOMEM;
	}
	struct watch w = {.pidfd = s->keeper_pidfd, .in_fd = s->in_fd, .out_fd = s->out_fd,
			  .err_fd = s->err_fd, .cancel_fd = req->cancel_fd, .input = input,
			  .input_len = input_len};
	capture_init(&w.out, (size_t)l->output_kb * 1024);
	/* Room past the cap for boot.py's report; the cap is applied to the
	 * program's own bytes once the report is stripped. */
	capture_init(&w.err, (size_t)l->output_kb * 1024 + DOCKER_REPORT_MAX);
	watch_run(&w, &s->sb, l, start_ms, &o);
	s->in_fd = w.in_fd; /* closed by the watch once the program was in */

	/* The result waits for the sandbox's end: a result means it is gone. */
	siginfo_t si;
	int ended = started_end(s, &si, &err);
	watch_drain(&w);
	/* runsc exits with the program's code, or 128 + the signal that ended
	 * it; killed here, it has none. */
	int exit_code = si.si_code == CLD_EXITED ? si.si_status : -1;
	o.init_wstatus = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status;
	uint64_t oom_kills = 0, peak_kb = 0;
	cgroup_usage(&s->sb.cg, &oom_kills, &peak_kb);

	/* The program's own stderr is capped like stdout. */
	docker_finish_run(&w.err, nonce, exit_code, (size_t)l->output_kb * 1024, &o);
	char why[200];
	docker_last_line(&w.err, why, sizeof why);
	o.oom_kills = oom_kills; /* status memory: src/core/status.h */
	outcome_to_result(&o, l, &w.out, &w.err, res);
	if (!o.exited_report && peak_kb)
		res->memory_kb = peak_kb;
	if (!o.exited_report && w.cpu_used > 0)
		res->cpu_ms = w.cpu_used; /* the sandbox's, as last read */
	if (w.cpu_exceeded && res->status != AJ_STATUS_OK && res->status != AJ_STATUS_OUTPUT_LIMIT) {
		/* Stopped here for its CPU time, as RLIMIT_CPU's hard limit
		 * would have stopped it on another tier. */
		killed_by_host(res, AJ_STATUS_TIMEOUT);
		result_set_message(res, "CPU time limit of %u s reached (the sandbox's CPU time, "
					"gVisor's own included, counted by its cgroup)",
				   l->cpu_sec);
	} else if (res->status == AJ_STATUS_SANDBOX_ERROR) {
		result_sandbox_error(res, "gvisor: the sandbox ended without a report (runsc %s %d)%s%s",
				     exit_code >= 0 ? "exit code" : "killed by signal",
				     exit_code >= 0 ? exit_code : si.si_status, why[0] ? ": " : "", why);
	}
	free(input);
	int rc = res->status == AJ_STATUS_SANDBOX_ERROR ? -EIO : 0;
	struct aj_error left = {0};
	if (ended)
		left = err;
	if (started_destroy(s, &left) || ended) {
		/* Whatever the program's verdict, the host kept something of
		 * its sandbox: the result says so, never returns quietly. */
		if (res->status == AJ_STATUS_SANDBOX_ERROR && res->message)
			result_sandbox_error(res, "%s; and %s", res->message, left.message);
		else
			result_sandbox_error(res, "%s", left.message);
		rc = -EBUSY;
	}
	return rc;
}

static int run_with(const struct gvisor_state *st, const char *platform,
		    const struct aj_config *cfg, const struct run_request *req,
		    struct aj_result *res)
{
	struct started s;
	struct aj_error err = {0};
	double start_ms = now_ms();
	int rc = start_sandbox(st, platform, cfg, &s, &err);
	if (rc) {
		result_sandbox_error(res, "%s", err.message);
		res->wall_ms = now_ms() - start_ms;
		return rc;
	}
	return run_in(&s, cfg, req, start_ms, res);
}

/* ---- the pool ---- */

/* Keeps st->want sandboxes started. The keepers are this thread's children:
 * they die with it (PDEATHSIG), which is only at close. */
static void *pool_filler(void *arg)
{
	struct gvisor_state *st = arg;
	pthread_mutex_lock(&st->mu);
	while (!st->stopping) {
		if (st->nready >= st->want) {
			pthread_cond_wait(&st->cv, &st->mu);
			continue;
		}
		pthread_mutex_unlock(&st->mu);
		struct started s;
		struct aj_error e = {0};
		int rc = start_sandbox(st, st->platform, st->cfg, &s, &e);
		pthread_mutex_lock(&st->mu);
		if (rc) {
			/* A run starts its own meanwhile; try again in a second. */
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			pthread_cond_timedwait(&st->cv, &st->mu, &until);
			continue;
		}
		if (st->stopping || st->nready >= st->want) {
			pthread_mutex_unlock(&st->mu);
			started_destroy(&s, &e);
			pthread_mutex_lock(&st->mu);
			continue;
		}
		st->ready[st->nready++] = s;
	}
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

/* A started sandbox from the pool, still alive; false when none is ready
 * (the run starts its own rather than wait). */
static bool pool_take(struct gvisor_state *st, struct started *out)
{
	pthread_mutex_lock(&st->mu);
	while (st->nready) {
		*out = st->ready[--st->nready];
		pthread_cond_signal(&st->cv);
		struct pollfd p = {.fd = out->keeper_pidfd, .events = POLLIN};
		if (poll(&p, 1, 0) == 0) {
			pthread_mutex_unlock(&st->mu);
			return true;
		}
		/* It ended while it waited (runsc failed): never used. */
		pthread_mutex_unlock(&st->mu);
		struct aj_error e = {0};
		started_destroy(out, &e);
		pthread_mutex_lock(&st->mu);
	}
	pthread_mutex_unlock(&st->mu);
	return false;
}

static void pool_stop(struct gvisor_state *st)
{
	if (!st->filling)
		return;
	pthread_mutex_lock(&st->mu);
	st->stopping = true;
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
	pthread_join(st->filler, NULL);
	st->filling = false;
	struct aj_error e = {0};
	while (st->nready)
		started_destroy(&st->ready[--st->nready], &e);
}

static int gvisor_run(void *state, const struct aj_config *cfg, const struct run_request *req,
		      struct aj_result *res)
{
	struct gvisor_state *st = state;
	struct started s;
	/* Pooled: the wall clock starts as the program goes in. */
	if (st->want && pool_take(st, &s))
		return run_in(&s, cfg, req, now_ms(), res);
	return run_with(st, st->platform, cfg, req, res);
}

/* ---- the platform ---- */

/* The cache's key: a verdict holds for this runsc on this boot. */
static void cache_key(const struct gvisor_state *st, char *out, size_t n)
{
	char boot[64] = "";
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t r = read(fd, boot, sizeof boot - 1);
		boot[r > 0 ? r : 0] = 0;
		boot[strcspn(boot, "\n")] = 0;
		close(fd);
	}
	snprintf(out, n, "%s %s", st->version, boot);
}

/* KVM where a probe run finishes and succeeds, else ptrace (which works on
 * any host); the verdict is cached per runsc version and boot. */
static void choose_platform(struct gvisor_state *st, const struct aj_config *cfg)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(st->platform, sizeof st->platform, "ptrace");
		snprintf(st->why, sizeof st->why, "no usable /dev/kvm (%s)", errno_name(errno));
		return;
	}
	close(fd);
	char key[256], cached[1024] = "";
	cache_key(st, key, sizeof key);
	if ((fd = open(PLATFORM_CACHE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		ssize_t r = read(fd, cached, sizeof cached - 1);
		cached[r > 0 ? r : 0] = 0;
		close(fd);
		/* key, platform, why: a line each. */
		char *plat = strchr(cached, '\n');
		char *why = plat ? strchr(plat + 1, '\n') : NULL;
		if (plat && why) {
			*plat++ = 0;
			*why++ = 0;
			why[strcspn(why, "\n")] = 0;
			if (!strcmp(cached, key) && (!strcmp(plat, "kvm") || !strcmp(plat, "ptrace"))) {
				snprintf(st->platform, sizeof st->platform, "%s", plat);
				snprintf(st->why, sizeof st->why, "%s", why);
				return;
			}
		}
	}
	struct aj_config probe = *cfg;
	probe.limits.wall_sec = KVM_PROBE_SEC;
	struct aj_result res;
	result_init(&res);
	const struct run_request req = {.code = "print(1)", .len = 8, .cancel_fd = -1};
	run_with(st, "kvm", &probe, &req, &res);
	if (res.status == AJ_STATUS_OK && res.stdout_len == 2) {
		snprintf(st->platform, sizeof st->platform, "kvm");
		snprintf(st->why, sizeof st->why, "a probe run under /dev/kvm succeeded");
	} else {
		snprintf(st->platform, sizeof st->platform, "ptrace");
		if (res.status == AJ_STATUS_TIMEOUT)
			snprintf(st->why, sizeof st->why,
				 "kvm: a probe run under /dev/kvm did not finish in %.0f s (a nested or "
				 "paravirtual KVM the sentry cannot use)",
				 KVM_PROBE_SEC);
		else
			snprintf(st->why, sizeof st->why, "kvm: a probe run under /dev/kvm failed: %.300s",
				 res.message ? res.message : aj_status_name(res.status));
	}
	aj_result_free(&res);
	mkdir("/var/lib/agentjail", 0755);
	if ((fd = open(PLATFORM_CACHE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		       0644)) >= 0) {
		dprintf(fd, "%s\n%s\n%s\n", key, st->platform, st->why);
		close(fd);
		rename(PLATFORM_CACHE ".tmp", PLATFORM_CACHE);
	}
}

/* ---- sessions: one sandbox for the session's life ---- */

/* boot.py's own backstop: this long past the session's lifetime (which the
 * core enforces) the sandbox ends even if the host never closes it. */
#define BACKSTOP_MARGIN_SEC 60.0

/* One gVisor sandbox with boot.py in its session mode; the calls are
 * src/session/boot.c's: frames go in on runsc's stdin (a socket: a send to
 * a sandbox that is gone fails with EPIPE, never SIGPIPE in the caller)
 * and come back on its stdout. The sandbox is started as a run's is. */
struct gvisor_session {
	struct boot_session bs;     /* first: boot.c's hooks get it back */
	struct started s;
	uint64_t oom_before;        /* the cgroup's OOM kills when the call began */
	bool destroyed;
};

static void session_destroy(struct boot_session *bs)
{
	struct gvisor_session *gs = (struct gvisor_session *)bs;
	if (gs->destroyed)
		return;
	gs->destroyed = true;
	/* The stream's fds are the started sandbox's: closed with it. */
	bs->fd = bs->out_fd = bs->err_fd = -1;
	struct aj_error e = {0};
	started_destroy(&gs->s, &e);
}

static bool session_oom_since(struct boot_session *bs, double since)
{
	(void)since; /* the count at the call's start stands for it */
	struct gvisor_session *gs = (struct gvisor_session *)bs;
	uint64_t kills = 0, peak = 0;
	cgroup_usage(&gs->s.sb.cg, &kills, &peak);
	return kills > gs->oom_before;
}

static double session_cpu_ms(struct boot_session *bs)
{
	return cgroup_cpu_ms(&((struct gvisor_session *)bs)->s.sb.cg);
}

static void gvisor_session_close(void *session)
{
	struct gvisor_session *gs = session;
	if (!gs)
		return;
	session_destroy(&gs->bs);
	boot_session_free(&gs->bs);
	free(gs);
}

static int gvisor_session_open(void *state, const struct aj_config *cfg, void **out,
			       struct aj_error *err)
{
	const struct gvisor_state *st = state;
	struct gvisor_session *gs = calloc(1, sizeof *gs);
	if (!gs)
		return error_set(err, -ENOMEM, "gvisor: session: out of memory");
	boot_session_init(&gs->bs);
	gs->bs.tier = "gvisor";
	gs->bs.fd = gs->bs.err_fd = -1;
	gs->bs.destroy = session_destroy;
	gs->bs.oom_since = session_oom_since;
	gs->bs.cpu_ms = session_cpu_ms;
	gs->bs.cpu_allowance_ms = CPU_ALLOWANCE_MS;
	/* RLIMIT_CPU, the interpreter's hard limit under which repl.py sets
	 * each call's soft one, is not enforced by gVisor: each call's CPU is
	 * watched from here (boot.c), so a run's sandbox serves as well. */
	int rc = start_sandbox(st, st->platform, cfg, &gs->s, err);
	if (rc) {
		gs->destroyed = true; /* start_sandbox left nothing */
		goto fail;
	}
	gs->bs.fd = gs->s.in_fd;
	gs->bs.out_fd = gs->s.out_fd;
	gs->bs.err_fd = gs->s.err_fd;
	if ((rc = boot_session_start(&gs->bs, cfg->session.lifetime_sec + BACKSTOP_MARGIN_SEC,
				     err)))
		goto fail;
	*out = gs;
	return 0;
fail:
	gvisor_session_close(gs);
	return rc;
}

static int gvisor_session_call(void *session, const struct aj_config *cfg,
			       const struct session_call *call, struct aj_result *res,
			       struct session_answer *ans)
{
	struct gvisor_session *gs = session;
	uint64_t peak = 0;
	cgroup_usage(&gs->s.sb.cg, &gs->oom_before, &peak);
	return boot_session_call(&gs->bs, cfg, call, res, ans);
}

/* ---- ops ---- */

static int gvisor_open(const struct aj_config *cfg, void **state, struct aj_error *err)
{
	*state = NULL;
	if (geteuid() != 0)
		return error_set(err, -EPERM,
				 "gvisor: needs root, for runsc and the run's cgroups (running as "
				 "uid %u)",
				 (unsigned)geteuid());
	if (cfg->accel && strcmp(cfg->accel, "kvm") && strcmp(cfg->accel, "ptrace"))
		return error_set(err, -EINVAL,
				 "gvisor: accel '%s' is not a gVisor platform (kvm or ptrace; unset: "
				 "kvm where a probe run works, else ptrace)",
				 cfg->accel);
	struct gvisor_state *st = calloc(1, sizeof *st);
	if (!st)
		return error_set(err, -ENOMEM, "open: out of memory");
	char dir[PATH_MAX];
	struct stat sst;
	int rc;
	if ((rc = runsc_find(st->runsc, sizeof st->runsc, err)) ||
	    (rc = runsc_version(st->runsc, st->version, sizeof st->version, err)) ||
	    (rc = image_dir(cfg, dir, sizeof dir, err)))
		goto fail;
	snprintf(st->root, sizeof st->root, "%.4000s/root", dir);
	if (lstat(st->root, &sst) < 0 || !S_ISDIR(sst.st_mode)) {
		rc = error_set(err, -ENOENT, "image: %s has no root/ (rebuild it with 'agentjail image "
					     "build --force')",
			       dir);
		goto fail;
	}
	/* The deployer's paths, said now rather than at the first run. */
	struct gvisor_bundle check = {.root = st->root, .ro_binds = cfg->ro_binds,
				      .ro_bind_count = cfg->ro_bind_count};
	if ((rc = image_check_python(st->root, cfg->python, err)) ||
	    (rc = gvisor_bundle_check_binds(&check, err)) ||
	    (rc = cgroup_prepare(cfg->cgroup_root, &st->cgroups, err)))
		goto fail;
	snprintf(st->run_base, sizeof st->run_base, "%.4000s-gvisor",
		 cfg->state_dir ? cfg->state_dir : "/run/agentjail");
	if (mkdir(st->run_base, 0700) < 0 && errno != EEXIST) {
		rc = error_set(err, -errno, "gvisor: mkdir %s: %s", st->run_base, errno_name(errno));
		goto fail;
	}
	sweep_run_dirs(st->run_base);
	if (cfg->accel) {
		snprintf(st->platform, sizeof st->platform, "%s", cfg->accel);
		snprintf(st->why, sizeof st->why, "as configured");
	} else {
		choose_platform(st, cfg);
	}
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cv, NULL);
	st->cfg = cfg;
	if (cfg->vm_pool) {
		if (!(st->ready = calloc(cfg->vm_pool, sizeof *st->ready))) {
			rc = error_set(err, -ENOMEM, "open: out of memory");
			goto fail;
		}
		st->want = cfg->vm_pool;
		if ((rc = -pthread_create(&st->filler, NULL, pool_filler, st))) {
			free(st->ready);
			error_set(err, rc, "gvisor: starting the pool: %s", errno_name(-rc));
			goto fail;
		}
		st->filling = true;
	}
	*state = st;
	return 0;
fail:
	free(st);
	return rc;
}

static void gvisor_close(void *state)
{
	struct gvisor_state *st = state;
	if (!st)
		return;
	pool_stop(st);
	free(st->ready);
	pthread_cond_destroy(&st->cv);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

static int gvisor_check(const struct aj_config *cfg, struct aj_error *err)
{
	void *state;
	int rc = gvisor_open(cfg, &state, err);
	if (rc)
		return rc;
	struct gvisor_state *st = state;
	struct aj_result res;
	result_init(&res);
	const struct run_request empty = {.code = "", .len = 0, .cancel_fd = -1};
	rc = gvisor_run(st, cfg, &empty, &res);
	if (res.status != AJ_STATUS_OK)
		rc = error_set(err, rc ? rc : -EIO, "%s, platform %s, but a trial run failed: %s",
			       st->version, st->platform,
			       res.message ? res.message : aj_status_name(res.status));
	else
		error_set(err, 0, "%s, platform %s: %s", st->version, st->platform, st->why);
	aj_result_free(&res);
	gvisor_close(st);
	return rc;
}

const struct tier_ops gvisor_tier = {
	.name = "gvisor",
	.check = gvisor_check,
	.open = gvisor_open,
	.run = gvisor_run,
	.close = gvisor_close,
	.session_open = gvisor_session_open,
	.session_call = gvisor_session_call,
	.session_close = gvisor_session_close,
};
