/* The microvm tier: each run under its own kernel, in a fresh microVM that
 * is destroyed after it.
 *
 * Theory of operation
 * -------------------
 *  image     `agentjail image build` makes, beside the image root, its VM parts
 *            (images/build-vm.sh): Debian's cloud kernel as an ELF vmlinux, an
 *            initramfs holding the static guest agent as /init (src/vm/guest/),
 *            and the image's root as a read-only ext4 disk, the guest's /.
 *  snapshot  on first use, one VM is booted until the agent reports ready
 *            (its Python interpreter already started) and saved: the RAM file
 *            plus ~60 KB of device state (src/vm/snapshot.c).
 *  run       a new QEMU restores that snapshot copy-on-write (the RAM file is
 *            mapped privately and never changes), the supervisor sends the
 *            program over the virtio-serial channel, the guest agent runs it
 *            as uid 1000 with rlimits, a memory cgroup and the same seccomp
 *            policy as the host tiers, and answers with the result. Then the
 *            VM is killed and its run directory removed: no VM is ever used
 *            twice, so nothing a program leaves in one can reach another.
 *  jail      QEMU itself runs as the run's own uid, in its own pid, network,
 *            ipc, uts and mount namespaces, the host read-only, no
 *            capabilities, no_new_privs, with QEMU's seccomp sandbox on
 *            (src/vm/qemu.c), as Firecracker's jailer does.
 *  limits    the wall clock twice: the guest's agent stops the program, and
 *            the host kills the whole VM if the answer does not come. The
 *            guest has no network device at all.
 *  egress    with allow rules, a second virtio-serial port (every VM has
 *            it) carries the guest's 127.0.0.1:EGRESS_PORT connections as
 *            streams to a relay thread here, which hands each to the run's
 *            or session's proxy (src/vm/egress_mux.h, docs/tiers/microvm.md).
 *  accel     KVM where a probe boot with it succeeds (the verdict is cached
 *            in the state directory), TCG elsewhere; the deployer may force
 *            either (cfg.accel).
 *  pool      optionally (cfg.vm_pool) a thread keeps that many VMs restored,
 *            connected and waiting, and replaces them after an idle lifetime;
 *            a run takes one, or makes its own when none is ready. A pooled
 *            VM is as fresh as any: it has run nothing.
 *  session   one VM, restored like a run's (the core opens a session's tier
 *            state with no pool), kept for the session's
 *            whole life with its uid slot. VM_SESSION_START carries the
 *            limits and the session interpreter (src/core/repl.py); the
 *            guest (src/vm/guest/session.c) keeps that interpreter alive
 *            across VM_CALLs with a run's protections, and stops a call on
 *            its wall clock, a flood or a VM_CALL_STOP (the caller's cancel)
 *            by killing every process in the VM but its agent; the next call
 *            then starts a fresh interpreter, files kept. The guest sends
 *            facts (flags, wait status, usage); the host reads them with the
 *            jail tiers' outcome_to_result, so statuses and messages match.
 *            The host keeps its own clock (wall + grace): a guest that does
 *            not answer loses its VM, and the session closes. Closing
 *            destroys the VM and its run directory and frees the slot. The
 *            QEMU dies with the thread that made it (parent-death signal):
 *            a session opened on a thread that then exits loses its VM, and
 *            its next call closes it with the reason.
 *
 * The parts are src/vm/'s, one concern a file: the accelerator (accel.c), a
 * VM restored and connected (ready.c), one run (run_host.c), a session's VM
 * (session_host.c). This file is the ops table, the pool, and the egress
 * glue: a guest's stream handed to the proxy, a layer src/vm/ does not see.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../egress/proxy.h"
#include "../core/pool.h"
#include "../vm/accel.h"
#include "../vm/protocol.h"
#include "../vm/qemu.h"
#include "../vm/run_host.h"
#include "../vm/session_host.h"
#include "tier.h"

/* The guest's kernel, agent and Python need this much beside the program's
 * own memory limit (which the guest enforces with a cgroup). */
#define VM_OVERHEAD_MB 192
/* How long a session's VM may take to be restored and connected. */
#define VM_SESSION_READY_MS 30000

/* How long a pooled VM may wait before it is replaced by a newer one. */
#define POOL_LIFETIME_MS 60000.0
#define POOL_MAX 64

struct microvm_state {
	struct vm_host host;    /* what every VM of this sandbox shares */
	/* the pool (src/core/pool.c), its size cfg.vm_pool up to POOL_MAX */
	struct pool_ops pool_ops;
	struct pool pool;
	struct ready_vm pooled[POOL_MAX];
	bool pool_running;
};

static gid_t vm_gid(const struct aj_config *cfg)
{
	/* One group for every jailed QEMU, just below the sandbox uids: it may
	 * map the snapshot's RAM file and read its state, nothing else. */
	return (gid_t)(cfg->uid_base - 1);
}

/* The pool's: a VM made by its thread, restored and connected. */
static int restore_for_pool(void *ctx, void *item)
{
	struct microvm_state *st = ctx;
	struct aj_error err = {0};
	return vm_ready_make(&st->host, item, now_ms() + 30000, &err);
}

static void stop_pooled(void *ctx, void *item)
{
	(void)ctx;
	vm_ready_release(item);
}

/* Young enough: one that waited its lifetime is replaced by a newer one. */
static bool pooled_young(void *ctx, const void *item)
{
	(void)ctx;
	return now_ms() - ((const struct ready_vm *)item)->made_ms < POOL_LIFETIME_MS;
}

/* A ready VM: from the pool, if one is there and young enough, else made
 * now. 0, or -errno with err. */
static int ready_vm(struct microvm_state *st, struct ready_vm *vm, double deadline,
		    struct aj_error *err)
{
	if (st->pool_running && pool_take(&st->pool, vm))
		return 0;
	return vm_ready_make(&st->host, vm, deadline, err);
}

/* A stream the guest opened on its egress port: one end of a socketpair
 * goes to the proxy as a connection, the relay keeps the other. */
static int open_proxy_stream(void *ctx, unsigned id)
{
	(void)id;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -errno;
	int rc = egress_proxy_add_connection(ctx, sv[1]);
	if (rc) {
		close(sv[0]);
		return rc;
	}
	return sv[0];
}

static int microvm_run(void *state, const struct aj_config *cfg, const struct run_request *req,
		       struct aj_result *res)
{
	struct microvm_state *st = state;
	struct aj_error err = {0};
	struct ready_vm vm;
	double start = now_ms();
	int rc = ready_vm(st, &vm, start + cfg->limits.wall_sec * 1000.0 + VM_GRACE_MS, &err);
	if (rc) {
		result_sandbox_error(res, "%s", err.message);
		res->wall_ms = now_ms() - start;
		return rc;
	}
	return vm_host_run(&st->host, &vm, cfg, req, start, res);
}

/* The image's VM parts, which `agentjail image build` makes. */
static int find_vm_parts(const struct aj_config *cfg, struct vm_image *img,
			 struct aj_error *err)
{
	char dir[PATH_MAX];
	int rc = image_dir(cfg, dir, sizeof dir, err);
	if (rc)
		return rc;
	snprintf(img->vm_dir, sizeof img->vm_dir, "%.4000s/vm", dir);
	snprintf(img->kernel, sizeof img->kernel, "%s/vmlinux", img->vm_dir);
	snprintf(img->initrd, sizeof img->initrd, "%s/initramfs.cpio", img->vm_dir);
	snprintf(img->rootfs, sizeof img->rootfs, "%s/root.ext4", img->vm_dir);
	if (access(img->kernel, R_OK) < 0 || access(img->initrd, R_OK) < 0 ||
	    access(img->rootfs, R_OK) < 0)
		return error_set(err, -ENOENT,
				 "microvm: image %s has no VM parts (%s/vmlinux, initramfs.cpio, "
				 "root.ext4); 'agentjail image build' makes them",
				 dir, img->vm_dir);
	return 0;
}

/* The accelerator and the snapshot, made under a slot's uid: the probe and
 * the snapshot boot run jailed like any run. */
static int accel_and_snapshot(struct vm_host *h, const struct aj_config *cfg,
			      struct aj_error *err)
{
	struct uid_slot slot = {.lock_fd = -1};
	int rc = slot_acquire(cfg, &slot, err);
	if (rc)
		return rc;
	if (!(rc = vm_accel_choose(&h->img, h->run_base, cfg->accel, slot.uid, h->accel,
				   sizeof h->accel, err))) {
		h->gid = vm_accel_group(h->accel, vm_gid(cfg));
		rc = vm_snapshot_ensure(&h->img, h->accel, h->vm_mb, slot.uid, h->gid, h->snapshot,
					sizeof h->snapshot, err);
	}
	slot_release(&slot);
	return rc;
}

/* The thread keeps the VMs restored and replaces the expired (it looks
 * each second); a failed restore (all uid slots busy, say) is tried again
 * in a second, runs making their own meanwhile. */
static int start_pool(struct microvm_state *st, unsigned size, struct aj_error *err)
{
	static const struct pool_ops ops = {
		.item_size = sizeof(struct ready_vm), .make = restore_for_pool,
		.destroy = stop_pooled, .usable = pooled_young, .wake_ms = 1000, .retry_ms = 1000};
	st->pool_ops = ops;
	st->pool_ops.size = size < POOL_MAX ? size : POOL_MAX;
	pool_init(&st->pool, &st->pool_ops, st, st->pooled);
	if (pool_start(&st->pool) != 0) {
		pool_destroy(&st->pool);
		return error_set(err, -EAGAIN, "microvm: cannot start the pool's thread");
	}
	st->pool_running = true;
	return 0;
}

static int microvm_open(const struct aj_config *cfg, void **state, struct aj_error *err)
{
	*state = NULL;
	if (geteuid() != 0)
		return error_set(err, -EPERM, "microvm: needs root, to jail QEMU under a uid of "
					      "its own (running as uid %u)",
				 (unsigned)geteuid());
	if (access(QEMU_BINARY, X_OK) < 0)
		return error_set(err, -errno, "microvm: %s: %s (apt-get install qemu-system-x86)",
				 QEMU_BINARY, errno_name(errno));
	struct microvm_state *st = calloc(1, sizeof *st);
	if (!st)
		return error_set(err, -ENOMEM, "open: out of memory");
	struct vm_host *h = &st->host;
	h->cfg = cfg;
	h->open_stream = open_proxy_stream;
	h->vm_mb = cfg->limits.memory_mb + VM_OVERHEAD_MB;
	snprintf(h->run_base, sizeof h->run_base, "%.4000s-vm",
		 cfg->state_dir ? cfg->state_dir : "/run/agentjail");
	int rc = find_vm_parts(cfg, &h->img, err);
	if (!rc && cfg->trust_ca)
		rc = trust_bundle_load(cfg->trust_ca, VM_TRUST_MAX, &h->trust, &h->trust_len, err);
	if (!rc) {
		vm_run_dirs_sweep(cfg, h->run_base);
		rc = accel_and_snapshot(h, cfg, err);
	}
	if (!rc && cfg->vm_pool > 0)
		rc = start_pool(st, cfg->vm_pool, err);
	if (rc) {
		free(h->trust);
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void microvm_close(void *state)
{
	struct microvm_state *st = state;
	if (!st)
		return;
	/* Every VM still waiting goes: none outlives the sandbox. */
	if (st->pool_running)
		pool_destroy(&st->pool);
	free(st->host.trust);
	free(st);
}

static int microvm_check(const struct aj_config *cfg, struct aj_error *err)
{
	int rc = tier_trial_run(&microvm_tier, cfg, err);
	if (rc)
		return rc;
	/* Available: say how, as check promises. */
	vm_accel_describe(cfg->accel, err);
	return 0;
}

/* ---- sessions: one VM for the session's whole life (src/vm/session_host.c) ---- */

static int microvm_session_open(void *state, const struct aj_config *cfg,
				struct egress_proxy *egress, void **session,
				struct aj_error *err)
{
	struct microvm_state *st = state;
	*session = NULL;
	/* Restored (or pooled) as for a run; its uid slot is held until the
	 * session closes, so no other VM shares the jailed QEMU's uid. */
	struct ready_vm vm;
	int rc = ready_vm(st, &vm, now_ms() + VM_SESSION_READY_MS, err);
	if (rc)
		return rc;
	struct vm_host_session *s;
	rc = vm_host_session_open(&st->host, &vm, cfg, egress, &s, err);
	if (!rc)
		*session = s;
	return rc;
}

static uint64_t microvm_session_oom_kills(void *session, double since_ms)
{
	(void)since_ms; /* the guest's count: what no answer counted yet */
	return vm_host_session_oom_kills(session);
}

static int microvm_session_call(void *session, const struct aj_config *cfg,
				const struct session_call *call, struct aj_result *res,
				struct session_answer *ans)
{
	return vm_host_session_call(session, cfg, call, res, ans);
}

static int microvm_session_freeze(void *session, bool frozen, struct aj_error *err)
{
	return vm_host_session_freeze(session, frozen, err);
}

static void microvm_session_close(void *session)
{
	vm_host_session_close(session);
}

const struct tier_ops microvm_tier = {
	.name = "microvm",
	.check = microvm_check,
	.open = microvm_open,
	.run = microvm_run,
	.close = microvm_close,
	.session_open = microvm_session_open,
	.session_call = microvm_session_call,
	.session_oom_kills = microvm_session_oom_kills,
	.session_close = microvm_session_close,
	.session_freeze = microvm_session_freeze,
	.view_root = image_view_root,
	.shows_trust_bundle = true, /* the guest's agent: src/vm/guest/trust.c */
};
