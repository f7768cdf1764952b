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
 * cgroup sweep the empty cgroup.
 *
 * The pieces are in src/gvisor: sandbox.c (a sandbox's start and end with
 * its keeper), watch.c, run.c (one run), platform.c (kvm or ptrace, and its
 * cache), session.c, bundle.c and runsc.c; the run directories' sweep is
 * src/boot/rundir.c. This file is the ops table and the pool. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/pool.h"
#include "../gvisor/bundle.h"
#include "../gvisor/platform.h"
#include "../gvisor/run.h"
#include "../boot/rundir.h"
#include "../gvisor/runsc.h"
#include "../gvisor/sandbox.h"
#include "../gvisor/session.h"
#include "tier.h"

struct gvisor_state {
	struct gvisor_host host;
	/* The pool (cfg->vm_pool): sandboxes started ahead, boot.py in each
	 * waiting for a program; each serves one run and is replaced. */
	const struct aj_config *cfg;
	struct pool pool;
	struct pool_ops pool_ops;   /* its size is cfg->vm_pool */
	struct gvisor_started *ready;
	bool pooled;
};

/* ---- the pool ---- */

/* Made by the pool's thread: the keepers are its children and die with it
 * (PDEATHSIG), which is only at close. */
static int start_for_pool(void *ctx, void *item)
{
	struct gvisor_state *st = ctx;
	struct aj_error e = {0};
	return gvisor_start(&st->host, st->host.platform, st->cfg, NULL, item, &e);
}

static void destroy_pooled(void *ctx, void *item)
{
	(void)ctx;
	struct aj_error e = {0};
	gvisor_started_destroy(item, &e);
}

/* Still alive: one whose runsc ended while it waited (runsc failed) is
 * never used. */
static bool pooled_alive(void *ctx, const void *item)
{
	(void)ctx;
	struct pollfd p = {.fd = ((const struct gvisor_started *)item)->keeper_pidfd,
			   .events = POLLIN};
	return poll(&p, 1, 0) == 0;
}

static int gvisor_run(void *state, const struct aj_config *cfg, const struct run_request *req,
		      struct aj_result *res)
{
	struct gvisor_state *st = state;
	struct gvisor_started s;
	/* Pooled: the wall clock starts as the program goes in. None ready:
	 * the run starts its own rather than wait. With egress, always its
	 * own: a pooled sandbox was started before the run's proxy existed,
	 * without its socket. */
	if (st->pooled && !req->egress && pool_take(&st->pool, &s))
		return gvisor_run_in(&s, cfg, req, now_ms(), res);
	return gvisor_run_with(&st->host, st->host.platform, cfg, req, res);
}

/* ---- sessions (src/gvisor/session.c) ---- */

static int open_session(void *state, const struct aj_config *cfg, struct egress_proxy *egress,
			void **out, struct aj_error *err)
{
	return gvisor_session_open(&((struct gvisor_state *)state)->host, cfg, egress, out, err);
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
	struct gvisor_host *h = &st->host;
	char dir[PATH_MAX];
	struct stat sst;
	int rc;
	if ((rc = runsc_find(h->runsc, sizeof h->runsc, err)) ||
	    (rc = runsc_version(h->runsc, h->version, sizeof h->version, err)) ||
	    (rc = image_dir(cfg, dir, sizeof dir, err)))
		goto fail;
	snprintf(h->root, sizeof h->root, "%.4000s/root", dir);
	if (lstat(h->root, &sst) < 0 || !S_ISDIR(sst.st_mode)) {
		rc = error_set(err, -ENOENT, "image: %s has no root/ (rebuild it with 'agentjail image "
					     "build --force')",
			       dir);
		goto fail;
	}
	/* The deployer's paths, said now rather than at the first run. */
	struct gvisor_bundle check = {.root = h->root, .ro_binds = cfg->ro_binds,
				      .ro_bind_count = cfg->ro_bind_count};
	if ((rc = image_check_python(h->root, cfg->python, err)) ||
	    (rc = gvisor_bundle_check_binds(&check, err)) ||
	    (rc = cgroup_prepare(cfg->cgroup_root, &h->cgroups, err)))
		goto fail;
	snprintf(h->run_base, sizeof h->run_base, "%.4000s-gvisor",
		 cfg->state_dir ? cfg->state_dir : "/run/agentjail");
	if (mkdir(h->run_base, 0700) < 0 && errno != EEXIST) {
		rc = error_set(err, -errno, "gvisor: mkdir %s: %s", h->run_base, errno_name(errno));
		goto fail;
	}
	boot_sweep_run_dirs(h->run_base);
	if (cfg->accel) {
		snprintf(h->platform, sizeof h->platform, "%s", cfg->accel);
		snprintf(h->why, sizeof h->why, "as configured");
	} else {
		gvisor_choose_platform(h, cfg);
	}
	st->cfg = cfg;
	if (cfg->vm_pool) {
		static const struct pool_ops ops = {
			.item_size = sizeof(struct gvisor_started), .make = start_for_pool,
			.destroy = destroy_pooled, .usable = pooled_alive,
			/* A failed start is tried again in a second. */
			.retry_ms = 1000};
		if (!(st->ready = calloc(cfg->vm_pool, sizeof *st->ready))) {
			rc = error_set(err, -ENOMEM, "open: out of memory");
			goto fail;
		}
		st->pool_ops = ops;
		st->pool_ops.size = cfg->vm_pool;
		pool_init(&st->pool, &st->pool_ops, st, st->ready);
		if ((rc = pool_start(&st->pool))) {
			pool_destroy(&st->pool);
			free(st->ready);
			error_set(err, rc, "gvisor: starting the pool: %s", errno_name(-rc));
			goto fail;
		}
		st->pooled = true;
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
	if (st->pooled)
		pool_destroy(&st->pool); /* every sandbox still waiting goes */
	free(st->ready);
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
			       st->host.version, st->host.platform,
			       res.message ? res.message : aj_status_name(res.status));
	else
		error_set(err, 0, "%s, platform %s: %s", st->host.version, st->host.platform,
			  st->host.why);
	aj_result_free(&res);
	gvisor_close(st);
	return rc;
}

const struct tier_ops gvisor_tier = {
	.name = "gvisor",
	.egress_refusal = NULL, /* carried: src/boot/egress.h */
	.check = gvisor_check,
	.open = gvisor_open,
	.run = gvisor_run,
	.close = gvisor_close,
	.session_open = open_session,
	.session_call = gvisor_session_call,
	/* No wake (.session_nudge): in gVisor the interpreter's watcher is
	 * woken by the first empty line only, and typed input then waited the
	 * full 200 ms read (measured: p50 207 ms against 10.8 ms with short
	 * reads); until that is understood, gVisor keeps short reads. */
	.session_close = gvisor_session_close,
	.session_freeze = gvisor_session_freeze,
	.view_root = image_view_root,
};
