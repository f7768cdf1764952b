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
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../egress/proxy.h"
#include "../core/pool.h"
#include "../core/status.h"
#include "../linux/creds.h"
#include "../linux/stream_hooks.h"
#include "../linux/supervise.h"
#include "../vm/answer.h"
#include "../vm/channel.h"
#include "../vm/egress_relay.h"
#include "../vm/protocol.h"
#include "../vm/qemu.h"
#include "../vm/snapshot.h"
#include "tier.h"

/* The guest's kernel, agent and Python need this much beside the program's
 * own memory limit (which the guest enforces with a cgroup). */
#define VM_OVERHEAD_MB 192
/* How long past the wall clock the host waits for the guest's own answer
 * before it kills the VM. */
#define VM_GRACE_MS 3000
#define ACCEL_CACHE "/var/lib/agentjail/vm-accel"

/* A VM restored and connected, waiting for its one run. */
struct ready_vm {
	pid_t pid;
	int pidfd;
	int ch;                 /* the channel, connected */
	struct uid_slot slot;
	double made_ms;
	char run[PATH_MAX];
};

/* How long a pooled VM may wait before it is replaced by a newer one. */
#define POOL_LIFETIME_MS 60000.0
#define POOL_MAX 64

struct microvm_state {
	struct vm_image img;
	char accel[8];
	gid_t gid;              /* the jailed QEMUs' group */
	char snapshot[PATH_MAX + 64];
	unsigned vm_mb;
	const struct aj_config *cfg;
	char run_base[PATH_MAX];    /* <state_dir>-vm: the runs' directories */
	/* the pool (src/core/pool.c), its size cfg.vm_pool up to POOL_MAX */
	struct pool_ops pool_ops;
	struct pool pool;
	struct ready_vm pooled[POOL_MAX];
	bool pool_running;
	/* trust_ca: the sandbox's CA bundle, sent in VM_TRUST to each VM
	 * before its run or session (the guest shows it: guest/trust.c). */
	char *trust;
	size_t trust_len;
};

/* VM_TRUST first, when the sandbox has a bundle of its own. */
static int send_trust(const struct microvm_state *st, int ch)
{
	return st->trust ? channel_send(ch, VM_TRUST, st->trust, st->trust_len, NULL, 0) : 0;
}

static gid_t vm_gid(const struct aj_config *cfg)
{
	/* One group for every jailed QEMU, just below the sandbox uids: it may
	 * map the snapshot's RAM file and read its state, nothing else. */
	return (gid_t)(cfg->uid_base - 1);
}

/* KVM if it really runs a guest here, else TCG; asked once per machine. */
static int choose_accel(struct microvm_state *st, const struct aj_config *cfg, uid_t uid,
			struct aj_error *err)
{
	if (cfg->accel) {
		if (strcmp(cfg->accel, "kvm") && strcmp(cfg->accel, "tcg"))
			return error_set(err, -EINVAL, "accel: '%s' is not kvm or tcg", cfg->accel);
		snprintf(st->accel, sizeof st->accel, "%s", cfg->accel);
		return 0;
	}
	char cached[64] = "";
	int fd = open(ACCEL_CACHE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, cached, sizeof cached - 1);
		close(fd);
		cached[n > 0 ? n : 0] = '\0';
	}
	if (!strncmp(cached, "kvm", 3) || !strncmp(cached, "tcg", 3)) {
		snprintf(st->accel, sizeof st->accel, "%.3s", cached);
		return 0;
	}
	/* /dev/kvm existing proves little (here it is PVM, which cannot run a
	 * stock kernel): only a real boot decides. */
	struct aj_error why = {0};
	const char *verdict = "tcg";
	struct stat kvm;
	if (stat("/dev/kvm", &kvm) < 0)
		snprintf(why.message, sizeof why.message, "no /dev/kvm");
	else if (!(kvm.st_mode & S_IRGRP) || !(kvm.st_mode & S_IWGRP))
		/* The jailed QEMU is not root: it reaches KVM through the
		 * device's group only. */
		snprintf(why.message, sizeof why.message,
			 "/dev/kvm is mode %03o: the jailed QEMU (not root) can use it only "
			 "through its group (Debian's default is 0660 root:kvm)",
			 (unsigned)(kvm.st_mode & 0777));
	else if (vm_boot_probe(&st->img, st->run_base, "kvm", uid, kvm.st_gid, 20000, &why) == 0)
		verdict = "kvm";
	snprintf(st->accel, sizeof st->accel, "%s", verdict);
	mkdir("/var/lib/agentjail", 0755);
	fd = open(ACCEL_CACHE, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0) {
		char line[700];
		int len = snprintf(line, sizeof line, "%s\n%s\n", verdict,
				   !strcmp(verdict, "kvm") ? "a KVM probe boot succeeded"
							   : why.message);
		(void)!write(fd, line, (size_t)len);
		close(fd);
	}
	return 0;
}

static void release_vm(struct ready_vm *vm)
{
	if (vm->ch >= 0)
		close(vm->ch);
	if (vm->pidfd >= 0)
		vm_destroy(vm->pid, vm->pidfd);
	if (vm->run[0])
		vm_run_dir_remove(vm->run);
	slot_release(&vm->slot);
	vm->ch = vm->pidfd = -1;
	vm->run[0] = '\0';
}

/* A new QEMU restored from the snapshot, its channel connected: everything
 * before the program is sent. 0, or -errno with why. */
static int prepare_vm(struct microvm_state *st, struct ready_vm *vm, double deadline,
		      struct aj_error *err)
{
	const struct aj_config *cfg = st->cfg;
	char chan[PATH_MAX + 16], egress[PATH_MAX + 16], mon[PATH_MAX + 16], log[PATH_MAX + 16],
		ram[PATH_MAX + 80], statep[PATH_MAX + 80], why[300], words[600];
	int rc, mfd = -1;

	memset(vm, 0, sizeof *vm);
	vm->ch = vm->pidfd = -1;
	vm->slot.lock_fd = -1;
	if ((rc = slot_acquire(cfg, &vm->slot, err)))
		return rc;
	if ((rc = vm_run_dir(st->run_base, vm->run, sizeof vm->run, vm->slot.uid, err))) {
		vm->run[0] = '\0';
		goto fail;
	}
	snprintf(chan, sizeof chan, "%s/chan.sock", vm->run);
	snprintf(egress, sizeof egress, "%s/egress.sock", vm->run);
	snprintf(mon, sizeof mon, "%s/mon.sock", vm->run);
	snprintf(log, sizeof log, "%s/console.log", vm->run);
	snprintf(ram, sizeof ram, "%s/ram", st->snapshot);
	snprintf(statep, sizeof statep, "%s/state", st->snapshot);
	int state_fd = open(statep, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (state_fd < 0) {
		rc = error_set(err, -errno, "microvm: open %s: %s", statep, errno_name(errno));
		goto fail;
	}
	struct vm_launch launch = {.accel = st->accel, .memory_mb = st->vm_mb,
				   .kernel = st->img.kernel, .initrd = st->img.initrd,
				   .rootfs = st->img.rootfs,
				   .ram_path = ram, .share = false, .ram_dir = st->snapshot,
				   .run_dir = vm->run, .chan_sock = chan, .egress_sock = egress,
				   .mon_sock = mon, .console_log = log, .incoming_fd = state_fd,
				   .uid = vm->slot.uid, .gid = st->gid};
	rc = vm_launch(&launch, &vm->pid, &vm->pidfd, err);
	close(state_fd);
	if (rc)
		goto fail;
	mfd = monitor_open(mon, deadline, vm->pidfd);
	if (mfd < 0 || (rc = vm_restore(mfd, deadline, why, sizeof why))) {
		if (mfd < 0)
			snprintf(why, sizeof why, "monitor: %s", errno_name(-mfd));
		rc = rc ? rc : mfd;
		vm_last_words(vm->run, words, sizeof words);
		error_set(err, rc, "microvm: restoring the VM: %s%s%s", why,
			  words[0] ? "; QEMU: " : "", words);
		goto fail;
	}
	close(mfd);
	mfd = -1;
	vm->ch = channel_connect(chan, deadline, vm->pidfd);
	if (vm->ch < 0) {
		rc = vm->ch;
		vm_last_words(vm->run, words, sizeof words);
		error_set(err, rc, "microvm: connect to the VM: %s%s%s", errno_name(-rc),
			  words[0] ? "; QEMU: " : "", words);
		goto fail;
	}
	vm->made_ms = now_ms();
	return 0;
fail:
	if (mfd >= 0)
		close(mfd);
	release_vm(vm);
	return rc;
}

/* The pool's: a VM made by its thread, restored and connected. */
static int restore_for_pool(void *ctx, void *item)
{
	struct aj_error err = {0};
	return prepare_vm(ctx, item, now_ms() + 30000, &err);
}

static void stop_pooled(void *ctx, void *item)
{
	(void)ctx;
	release_vm(item);
}

/* Young enough: one that waited its lifetime is replaced by a newer one. */
static bool pooled_young(void *ctx, const void *item)
{
	(void)ctx;
	return now_ms() - ((const struct ready_vm *)item)->made_ms < POOL_LIFETIME_MS;
}

/* A ready VM from the pool, if one is there and young enough. */
static bool take_pooled(struct microvm_state *st, struct ready_vm *vm)
{
	return st->pool_running && pool_take(&st->pool, vm);
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

/* Connects the VM's egress port and relays it to proxy until
 * egress_relay_stop: before the program is sent, so the guest's first
 * connection finds the host there. */
static int start_egress(const struct ready_vm *vm, struct egress_proxy *proxy, double deadline,
			struct egress_relay **out, struct aj_error *err)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/egress.sock", vm->run);
	int port = channel_connect(path, deadline, vm->pidfd);
	int rc = port < 0 ? port : egress_relay_start(port, open_proxy_stream, proxy, out);
	if (rc)
		return error_set(err, rc, "microvm: egress: connect the VM's egress port: %s",
				 errno_name(-rc));
	return 0;
}

/* While the stream's consumer is behind: waits for room (or the deadline
 * or a cancel) before reading the guest's next frame. The channel is left
 * unread meanwhile, so the guest blocks in its port write and stops
 * reading the program's pipes: the program blocks in write(), as on every
 * tier (docs/streaming.md). The host's clock still ends the run. */
static void wait_for_consumer(struct vm_output *out, double deadline, int cancel_fd)
{
	while (supervisor_output_paused(&out->sv)) {
		double left = deadline - now_ms();
		if (left <= 0)
			return;
		struct pollfd pf[2] = {{.fd = out->sv.stream.out_room_fd, .events = POLLIN},
				       {.fd = cancel_fd, .events = POLLIN}};
		if (poll(pf, cancel_fd >= 0 ? 2 : 1, (int)left + 1) > 0 && pf[1].revents)
			return;
	}
}

/* Reads the guest's frames until its answer (any frame but VM_OUTPUT, for
 * the caller to read), each VM_OUTPUT to out as it comes: channel_recv's
 * codes, or -EPROTO with res saying which output frame broke the rules. */
static int recv_answer(int ch, double deadline, int cancel_fd, struct vm_output *out,
		       uint32_t *type, void **payload, uint32_t *len, struct aj_result *res)
{
	for (;;) {
		wait_for_consumer(out, deadline, cancel_fd);
		int rc = channel_recv(ch, deadline, cancel_fd, type, payload, len);
		if (rc || *type != VM_OUTPUT)
			return rc;
		rc = vm_output_take(out, *payload, *len, res);
		free(*payload);
		*payload = NULL;
		if (rc)
			return rc;
	}
}

/* The frame's payload: what (the code, or repl.py) and then the deployer's
 * variables (cfg.env, checked by aj_config_validate) as "NAME=VALUE\n"
 * lines, which the guest hands on after rule E1's rows. Malloc'ed; NULL on
 * ENOMEM. */
static char *with_environment(const char *what, size_t len, const struct aj_config *cfg,
			      uint32_t *env_len)
{
	size_t n = 0;
	for (uint32_t i = 0; i < cfg->env_count; i++)
		n += strlen(cfg->env[i]) + 1;
	char *out = malloc(len + n + 1);
	if (!out)
		return NULL;
	memcpy(out, what, len);
	char *p = out + len;
	for (uint32_t i = 0; i < cfg->env_count; i++)
		p += sprintf(p, "%s\n", cfg->env[i]);
	*env_len = (uint32_t)n;
	return out;
}

static int microvm_run(void *state, const struct aj_config *cfg, const struct run_request *req,
		       struct aj_result *res)
{
	struct microvm_state *st = state;
	const struct aj_limits *l = &cfg->limits;
	struct aj_error err = {0};
	struct ready_vm vm;
	int rc;
	double start = now_ms();
	const double deadline = start + l->wall_sec * 1000.0 + VM_GRACE_MS;

	if (!take_pooled(st, &vm) && (rc = prepare_vm(st, &vm, deadline, &err))) {
		result_sandbox_error(res, "%s", err.message);
		res->wall_ms = now_ms() - start;
		return rc;
	}
	struct vm_run vr = {.wall_ms = (uint32_t)(l->wall_sec * 1000.0), .cpu_sec = l->cpu_sec,
			    .memory_mb = l->memory_mb, .pids = l->pids,
			    .file_size_mb = l->file_size_mb, .disk_mb = l->disk_mb,
			    .output_kb = l->output_kb, .code_len = (uint32_t)req->len,
			    .egress = req->egress != NULL, .open_files = l->open_files};
	uint32_t type = 0, len = 0;
	void *payload = NULL;
	struct egress_relay *relay = NULL;
	struct vm_output out;
	vm_output_init(&out, (size_t)l->output_kb * 1024, 0);
	out.sv.stream = supervisor_stream_of(req->tap); /* each frame's bytes as they come */
	if (req->egress && (rc = start_egress(&vm, req->egress, deadline, &relay, &err))) {
		result_sandbox_error(res, "%s", err.message);
		goto out;
	}
	char *program = with_environment(req->code, req->len, cfg, &vr.env_len);
	rc = !program ? -ENOMEM : send_trust(st, vm.ch);
	if (!rc)
		rc = channel_send(vm.ch, VM_RUN, &vr, sizeof vr, program, req->len + vr.env_len);
	free(program);
	if (rc) {
		result_sandbox_error(res, "microvm: send the program: %s", errno_name(-rc));
		goto out;
	}
	/* A pooled VM's clock for this run starts now, not when it was made. */
	rc = recv_answer(vm.ch, now_ms() + l->wall_sec * 1000.0 + VM_GRACE_MS, req->cancel_fd,
			 &out, &type, &payload, &len, res);
	if (rc == -EPROTO) {
		/* An output frame out of the rules: res says which. */
	} else if (rc == -ETIMEDOUT || rc == -ECANCELED) {
		/* The guest did not answer even past its own clock, or the
		 * caller cancelled: the host ends the VM, and the status rules
		 * read what it saw (src/core/status.h). */
		struct end_facts f = {.timed_out = rc == -ETIMEDOUT, .cancelled = rc == -ECANCELED};
		status_decide(&f, l, res);
		rc = 0;
	} else if (rc) {
		/* QEMU died, or the guest: a panic, a crash. Never the code's
		 * fault as far as the contract goes. */
		char words[600];
		vm_last_words(vm.run, words, sizeof words);
		result_sandbox_error(res, "microvm: the VM ended before answering (%s)%s%s",
				     errno_name(-rc), words[0] ? "; QEMU: " : "", words);
	} else {
		rc = vm_run_answer(type, payload, len, l, &out, res);
	}
out:
	vm_output_free(&out);
	/* The relay first: its streams close, the proxy's ends see EOF. */
	egress_relay_stop(relay, NULL, 0);
	free(payload);
	release_vm(&vm);
	res->wall_ms = now_ms() - start;
	return rc;
}

/* Run directories whose maker died (a caller SIGKILLed with a run or a
 * session in flight; its QEMU died with it): each belongs to a uid slot,
 * and one whose slot's lock can be taken now has no holder left, so it is
 * removed, under that lock. */
static void sweep_run_dirs(const struct aj_config *cfg, const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "run-", 4))
			continue;
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof path, "%.3000s/%.200s", base, de->d_name);
		if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid < cfg->uid_base ||
		    st.st_uid - cfg->uid_base >= cfg->slots)
			continue;
		struct uid_slot slot = {.lock_fd = -1};
		struct aj_error e = {0};
		if (slot_acquire_nr(cfg, st.st_uid - cfg->uid_base, &slot, &e) == 0) {
			vm_run_dir_remove(path);
			slot_release(&slot);
		}
	}
	if (d)
		closedir(d);
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
	char dir[PATH_MAX];
	int rc = image_dir(cfg, dir, sizeof dir, err);
	if (rc)
		goto fail;
	snprintf(st->img.vm_dir, sizeof st->img.vm_dir, "%.4000s/vm", dir);
	snprintf(st->img.kernel, sizeof st->img.kernel, "%s/vmlinux", st->img.vm_dir);
	snprintf(st->img.initrd, sizeof st->img.initrd, "%s/initramfs.cpio", st->img.vm_dir);
	snprintf(st->img.rootfs, sizeof st->img.rootfs, "%s/root.ext4", st->img.vm_dir);
	if (access(st->img.kernel, R_OK) < 0 || access(st->img.initrd, R_OK) < 0 ||
	    access(st->img.rootfs, R_OK) < 0) {
		rc = error_set(err, -ENOENT,
			       "microvm: image %s has no VM parts (%s/vmlinux, initramfs.cpio, "
			       "root.ext4); "
			       "'agentjail image build' makes them",
			       dir, st->img.vm_dir);
		goto fail;
	}
	if (cfg->trust_ca &&
	    (rc = trust_bundle_load(cfg->trust_ca, VM_TRUST_MAX, &st->trust, &st->trust_len, err)))
		goto fail;
	st->vm_mb = cfg->limits.memory_mb + VM_OVERHEAD_MB;
	snprintf(st->run_base, sizeof st->run_base, "%.4000s-vm",
		 cfg->state_dir ? cfg->state_dir : "/run/agentjail");
	sweep_run_dirs(cfg, st->run_base);
	/* The probe and the snapshot boot run jailed like any run: under a
	 * slot's uid. */
	struct uid_slot slot = {.lock_fd = -1};
	if ((rc = slot_acquire(cfg, &slot, err)))
		goto fail;
	if (!(rc = choose_accel(st, cfg, slot.uid, err))) {
		struct stat kvm;
		st->gid = !strcmp(st->accel, "kvm") && stat("/dev/kvm", &kvm) == 0 ? kvm.st_gid
										 : vm_gid(cfg);
		rc = vm_snapshot_ensure(&st->img, st->accel, st->vm_mb, slot.uid, st->gid,
					st->snapshot, sizeof st->snapshot, err);
	}
	slot_release(&slot);
	if (rc)
		goto fail;
	st->cfg = cfg;
	if (cfg->vm_pool > 0) {
		/* The thread keeps the VMs restored and replaces the expired
		 * (it looks each second); a failed restore (all uid slots
		 * busy, say) is tried again in a second, runs making their
		 * own meanwhile. */
		static const struct pool_ops ops = {
			.item_size = sizeof(struct ready_vm), .make = restore_for_pool,
			.destroy = stop_pooled, .usable = pooled_young, .wake_ms = 1000,
			.retry_ms = 1000};
		st->pool_ops = ops;
		st->pool_ops.size = cfg->vm_pool < POOL_MAX ? cfg->vm_pool : POOL_MAX;
		pool_init(&st->pool, &st->pool_ops, st, st->pooled);
		if (pool_start(&st->pool) != 0) {
			pool_destroy(&st->pool);
			rc = error_set(err, -EAGAIN, "microvm: cannot start the pool's thread");
			goto fail;
		}
		st->pool_running = true;
	}
	*state = st;
	return 0;
fail:
	free(st->trust);
	free(st);
	return rc;
}

static void microvm_close(void *state)
{
	struct microvm_state *st = state;
	if (!st)
		return;
	/* Every VM still waiting goes: none outlives the sandbox. */
	if (st->pool_running)
		pool_destroy(&st->pool);
	free(st->trust);
	free(st);
}

static int microvm_check(const struct aj_config *cfg, struct aj_error *err)
{
	int rc = tier_trial_run(&microvm_tier, cfg, err);
	if (rc)
		return rc;
	/* Available: say how, as check promises. */
	char cached[256] = "";
	int fd = open(ACCEL_CACHE, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, cached, sizeof cached - 1);
		close(fd);
		cached[n > 0 ? n : 0] = '\0';
	}
	/* The cache holds the verdict, then the reason, a line each. */
	char *reason = strchr(cached, '\n');
	if (reason) {
		*reason++ = '\0';
		reason[strcspn(reason, "\n")] = '\0';
	}
	if (cfg->accel)
		error_set(err, 0, "accelerator: %s, as configured", cfg->accel);
	else
		error_set(err, 0, "accelerator: %s%s%s", cached, reason && *reason ? "; " : "",
			  reason ? reason : "");
	return 0;
}

/* ---- sessions: one VM for the session's whole life ---- */

/* The session interpreter, as a C string (tools/c_string.py). */
#include "session_repl.inc"

/* How long the guest may take to answer VM_SESSION_START (the interpreter's
 * fork and exec, not its start-up) and to stop a cancelled call. */
#define SESSION_START_MS 30000
#define CANCEL_GRACE_MS 2000

struct microvm_session {
	struct microvm_state *st;
	struct ready_vm vm;
	struct egress_relay *relay; /* the session's egress port, or NULL */
	bool gone;              /* the VM was destroyed: the session is over */
};

static void session_vm_end(struct microvm_session *ms)
{
	egress_relay_stop(ms->relay, NULL, 0);
	ms->relay = NULL;
	if (!ms->gone)
		release_vm(&ms->vm);
	ms->gone = true;
}

static int microvm_session_open(void *state, const struct aj_config *cfg,
				struct egress_proxy *egress, void **session,
				struct aj_error *err)
{
	struct microvm_state *st = state;
	const struct aj_limits *l = &cfg->limits;
	*session = NULL;
	struct microvm_session *ms = calloc(1, sizeof *ms);
	if (!ms)
		return error_set(err, -ENOMEM, "session: out of memory");
	ms->st = st;
	/* Restored (or pooled) as for a run; its uid slot is held until the
	 * session closes, so no other VM shares the jailed QEMU's uid. */
	int rc = 0;
	if (!take_pooled(st, &ms->vm) &&
	    (rc = prepare_vm(st, &ms->vm, now_ms() + SESSION_START_MS, err))) {
		free(ms);
		return rc;
	}
	struct vm_session_start start = {
		/* The interpreter's hard CPU limit: every call together. */
		.cpu_sec = cfg->session.cpu_sec, .memory_mb = l->memory_mb, .pids = l->pids,
		.file_size_mb = l->file_size_mb, .disk_mb = l->disk_mb,
		.output_kb = l->output_kb, .repl_len = (uint32_t)strlen(session_repl_py),
		.egress = egress != NULL, .open_files = l->open_files};
	uint32_t type = 0, len = 0;
	void *payload = NULL;
	if (egress &&
	    (rc = start_egress(&ms->vm, egress, now_ms() + SESSION_START_MS, &ms->relay, err)))
		goto fail;
	char *repl = with_environment(session_repl_py, start.repl_len, cfg, &start.env_len);
	rc = !repl ? -ENOMEM : send_trust(st, ms->vm.ch);
	if (!rc)
		rc = channel_send(ms->vm.ch, VM_SESSION_START, &start, sizeof start, repl,
				  start.repl_len + start.env_len);
	free(repl);
	if (rc) {
		error_set(err, rc, "microvm: session: send the start: %s", errno_name(-rc));
		goto fail;
	}
	rc = channel_recv(ms->vm.ch, now_ms() + SESSION_START_MS, -1, &type, &payload, &len);
	if (rc) {
		char words[600];
		vm_last_words(ms->vm.run, words, sizeof words);
		error_set(err, rc, "microvm: session: the guest did not answer the start (%s)%s%s",
			  errno_name(-rc), words[0] ? "; QEMU: " : "", words);
		goto fail;
	}
	if ((rc = vm_session_ready_answer(type, payload, len, err)))
		goto fail;
	free(payload);
	*session = ms;
	return 0;
fail:
	free(payload);
	session_vm_end(ms);
	free(ms);
	return rc;
}

/* Waits for the guest's frame until the deadline, or the caller's cancel:
 * the cancel is read only between frames, so a frame is never cut. */
static int await_frame(int ch, double deadline, int cancel_fd)
{
	for (;;) {
		double left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p[2] = {{.fd = ch, .events = POLLIN},
				      {.fd = cancel_fd, .events = POLLIN}};
		int n = poll(p, 2, (int)left + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (p[0].revents)
			return 0;
		if (p[1].revents)
			return -ECANCELED;
	}
}

static int microvm_session_call(void *session, const struct aj_config *cfg,
				const struct session_call *call, struct aj_result *res,
				struct session_answer *ans)
{
	struct microvm_session *ms = session;
	const struct aj_limits *l = &cfg->limits;
	memset(ans, 0, sizeof *ans);
	if (ms->gone) {
		result_sandbox_error(res, "microvm: session: the VM is gone");
		return -EPIPE;
	}
	/* One frame holds the reply (the streams come in their own): a longer
	 * reply is cut at what fits, and stops the call as too long. */
	uint64_t fixed = sizeof(struct vm_call_result) + 4096;
	uint64_t room = fixed < VM_MAX_FRAME ? VM_MAX_FRAME - fixed : 0;
	struct vm_call vc = {.seq = call->seq, .wall_ms = (uint32_t)(l->wall_sec * 1000.0),
			     .reply_max = (uint32_t)(call->reply_max < room ? call->reply_max : room),
			     .request_len = (uint32_t)call->len};
	double start = now_ms();
	/* The guest starts the call's clock at the interpreter's ack
	 * (VM_SESSION_START_MS), so the host waits that much longer. */
	double deadline = start + l->wall_sec * 1000.0 + VM_SESSION_START_MS + VM_GRACE_MS;
	uint32_t type = 0, len = 0;
	void *payload = NULL;
	struct vm_output out;
	int rc;
	vm_output_init(&out, (size_t)l->output_kb * 1024, call->seq);
	out.sv.stream = supervisor_stream_of(call->tap);
	if (call->len > VM_MAX_FRAME - sizeof vc) {
		result_sandbox_error(res, "microvm: session: a request of %zu bytes is too large",
				     call->len);
		return -EFBIG;
	}
	if ((rc = channel_send(ms->vm.ch, VM_CALL, &vc, sizeof vc, call->request, call->len))) {
		result_sandbox_error(res, "microvm: session: send the call: %s", errno_name(-rc));
		goto broken;
	}
	int cancel_fd = call->cancel_fd;
	for (;;) {
		wait_for_consumer(&out, deadline, cancel_fd);
		rc = await_frame(ms->vm.ch, deadline, cancel_fd);
		if (rc == -ECANCELED) {
			/* The guest stops the call and reports it cancelled; one
			 * that does not within the grace loses its VM. */
			if ((rc = channel_send(ms->vm.ch, VM_CALL_STOP, NULL, 0, NULL, 0)))
				break;
			double grace = now_ms() + CANCEL_GRACE_MS;
			deadline = grace < deadline ? grace : deadline;
			cancel_fd = -1;
			continue;
		}
		if (rc == 0)
			rc = channel_recv(ms->vm.ch, deadline, -1, &type, &payload, &len);
		if (rc || type != VM_OUTPUT)
			break;
		rc = vm_output_take(&out, payload, len, res);
		free(payload);
		payload = NULL;
		if (rc)
			goto broken; /* res says which rule the frame broke */
	}
	if (rc == -ETIMEDOUT) {
		result_sandbox_error(res, "microvm: session: the guest did not answer within the "
					  "wall-clock limit of %g s and its grace; the VM was destroyed",
				     l->wall_sec);
		goto broken;
	}
	if (rc) {
		char words[600];
		vm_last_words(ms->vm.run, words, sizeof words);
		result_sandbox_error(res, "microvm: the VM ended during the call (%s)%s%s",
				     errno_name(-rc), words[0] ? "; QEMU: " : "", words);
		goto broken;
	}
	rc = vm_call_answer(type, payload, len, cfg, call, now_ms() - start, &out, res, ans);
	free(payload);
	payload = NULL;
	if (rc)
		goto broken;
	vm_output_free(&out);
	return 0;
broken:
	vm_output_free(&out);
	free(payload);
	free(ans->reply);
	ans->reply = NULL;
	session_vm_end(ms);
	res->wall_ms = now_ms() - start;
	return rc == -ETIMEDOUT || rc == -ECANCELED || rc >= 0 ? -EPIPE : rc;
}

static void microvm_session_close(void *session)
{
	struct microvm_session *ms = session;
	if (!ms)
		return;
	/* The VM, its run directory and its uid slot: nothing remains. */
	session_vm_end(ms);
	free(ms);
}

const struct tier_ops microvm_tier = {
	.name = "microvm",
	.check = microvm_check,
	.open = microvm_open,
	.run = microvm_run,
	.close = microvm_close,
	.session_open = microvm_session_open,
	.session_call = microvm_session_call,
	.session_close = microvm_session_close,
	.view_root = image_view_root,
	.shows_trust_bundle = true, /* the guest's agent: src/vm/guest/trust.c */
};
