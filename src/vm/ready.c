/* A VM restored and connected: see ready.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "protocol.h"
#include "qemu.h"
#include "ready.h"

void vm_ready_release(struct ready_vm *vm)
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

int vm_ready_lost(const struct ready_vm *vm, int rc, const char *what, struct aj_error *err)
{
	char words[600];
	vm_last_words(vm->run, words, sizeof words);
	return error_set(err, rc, "%s (%s)%s%s", what, errno_name(-rc), words[0] ? "; QEMU: " : "",
			 words);
}

/* QEMU, jailed, restoring the snapshot's device state from its state file
 * over its RAM file (mapped privately: it never changes). */
static int launch(const struct vm_host *h, struct ready_vm *vm, struct aj_error *err)
{
	char chan[PATH_MAX + 16], egress[PATH_MAX + 16], mon[PATH_MAX + 16], log[PATH_MAX + 16],
		ram[PATH_MAX + 80], statep[PATH_MAX + 80];
	snprintf(chan, sizeof chan, "%s/chan.sock", vm->run);
	snprintf(egress, sizeof egress, "%s/egress.sock", vm->run);
	snprintf(mon, sizeof mon, "%s/mon.sock", vm->run);
	snprintf(log, sizeof log, "%s/console.log", vm->run);
	snprintf(ram, sizeof ram, "%s/ram", h->snapshot);
	snprintf(statep, sizeof statep, "%s/state", h->snapshot);
	int state_fd = open(statep, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (state_fd < 0)
		return error_set(err, -errno, "microvm: open %s: %s", statep, errno_name(errno));
	struct vm_launch l = {.accel = h->accel, .memory_mb = h->vm_mb, .kernel = h->img.kernel,
			      .initrd = h->img.initrd, .rootfs = h->img.rootfs, .ram_path = ram,
			      .share = false, .ram_dir = h->snapshot, .run_dir = vm->run,
			      .chan_sock = chan, .egress_sock = egress, .mon_sock = mon,
			      .console_log = log, .incoming_fd = state_fd, .uid = vm->slot.uid,
			      .gid = h->gid};
	int rc = vm_launch(&l, &vm->pid, &vm->pidfd, err);
	close(state_fd);
	return rc;
}

/* The monitor's word that the restore finished, then the channel. */
static int restore_and_connect(struct ready_vm *vm, double deadline, struct aj_error *err)
{
	char path[PATH_MAX + 16], why[300], words[600];
	snprintf(path, sizeof path, "%s/mon.sock", vm->run);
	int rc = 0, mfd = monitor_open(path, deadline, vm->pidfd);
	if (mfd < 0 || (rc = vm_restore(mfd, deadline, why, sizeof why))) {
		if (mfd < 0)
			snprintf(why, sizeof why, "monitor: %s", errno_name(-mfd));
		rc = rc ? rc : mfd;
		vm_last_words(vm->run, words, sizeof words);
		error_set(err, rc, "microvm: restoring the VM: %s%s%s", why,
			  words[0] ? "; QEMU: " : "", words);
	}
	if (mfd >= 0)
		close(mfd);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "%s/chan.sock", vm->run);
	vm->ch = channel_connect(path, deadline, vm->pidfd);
	if (vm->ch < 0)
		return vm_ready_lost(vm, vm->ch, "microvm: connect to the VM", err);
	return 0;
}

int vm_ready_make(const struct vm_host *h, struct ready_vm *vm, double deadline,
		  struct aj_error *err)
{
	int rc;
	memset(vm, 0, sizeof *vm);
	vm->ch = vm->pidfd = -1;
	vm->slot.lock_fd = -1;
	if ((rc = slot_acquire(h->cfg, &vm->slot, err)))
		return rc;
	if ((rc = vm_run_dir(h->run_base, vm->run, sizeof vm->run, vm->slot.uid, err)))
		vm->run[0] = '\0';
	else if (!(rc = launch(h, vm, err)))
		rc = restore_and_connect(vm, deadline, err);
	if (rc) {
		vm_ready_release(vm);
		return rc;
	}
	vm->made_ms = now_ms();
	return 0;
}

int vm_ready_send(const struct vm_host *h, const struct ready_vm *vm,
		  const struct aj_config *cfg, uint32_t type, const void *head, size_t head_len,
		  uint32_t *env_len, const char *what, size_t len)
{
	size_t n = 0;
	for (uint32_t i = 0; i < cfg->env_count; i++)
		n += strlen(cfg->env[i]) + 1;
	char *payload = malloc(len + n + 1);
	if (!payload)
		return -ENOMEM;
	memcpy(payload, what, len);
	char *p = payload + len;
	for (uint32_t i = 0; i < cfg->env_count; i++)
		p += sprintf(p, "%s\n", cfg->env[i]);
	*env_len = (uint32_t)n;
	int rc = h->trust ? channel_send(vm->ch, VM_TRUST, h->trust, h->trust_len, NULL, 0) : 0;
	if (!rc)
		rc = channel_send(vm->ch, type, head, head_len, payload, len + n);
	free(payload);
	return rc;
}

int vm_ready_egress(const struct vm_host *h, const struct ready_vm *vm,
		    struct egress_proxy *proxy, double deadline, struct egress_relay **out,
		    struct aj_error *err)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/egress.sock", vm->run);
	int port = channel_connect(path, deadline, vm->pidfd);
	int rc = port < 0 ? port : egress_relay_start(port, h->open_stream, proxy, out);
	if (rc)
		return error_set(err, rc, "microvm: egress: connect the VM's egress port: %s",
				 errno_name(-rc));
	return 0;
}

/* The channel is left unread meanwhile, so the guest blocks in its port
 * write and stops reading the program's pipes: the program blocks in
 * write(), as on every tier (docs/streaming.md). The host's clock still
 * ends the run. */
void vm_ready_wait_room(struct vm_output *out, double deadline, int cancel_fd)
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
