/* A VM restored from the snapshot and connected, waiting for its one run or
 * session (the tier's pool keeps some so): made, given its start frame and
 * its egress port, and released with everything it held. What every VM of
 * one open sandbox shares is a struct vm_host. */
#ifndef AJ_VM_READY_H
#define AJ_VM_READY_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "../linux/creds.h"
#include "answer.h"
#include "egress_relay.h"
#include "snapshot.h"

/* How long past the wall clock the host waits for the guest's own answer
 * before it kills the VM. */
#define VM_GRACE_MS 3000

struct egress_proxy;

struct vm_host {
	const struct aj_config *cfg; /* the sandbox's: its uid slots */
	struct vm_image img;
	char accel[8];
	gid_t gid;                  /* the jailed QEMUs' group */
	char snapshot[PATH_MAX + 64];
	unsigned vm_mb;
	char run_base[PATH_MAX];    /* <state_dir>-vm: the runs' directories */
	/* trust_ca: the sandbox's CA bundle, sent in VM_TRUST to each VM
	 * before its run or session (the guest shows it: guest/trust.c). */
	char *trust;
	size_t trust_len;
	/* A stream the guest opened on its egress port, as a connection to
	 * the run's or session's proxy (the ctx given to vm_ready_egress). */
	egress_open_fn *open_stream;
};

struct ready_vm {
	pid_t pid;
	int pidfd;
	int ch;                     /* the channel, connected */
	struct uid_slot slot;
	double made_ms;
	char run[PATH_MAX];
};

/* A new QEMU restored from the snapshot, its channel connected: everything
 * before the program is sent. 0, or -errno with why. */
int vm_ready_make(const struct vm_host *h, struct ready_vm *vm, double deadline,
		  struct aj_error *err);
/* The VM, its run directory and its uid slot: nothing remains. */
void vm_ready_release(struct ready_vm *vm);
/* VM_TRUST first when the sandbox has a bundle, then the frame: head
 * (head_len bytes, whose *env_len this sets), then what (the code, or
 * repl.py) and the deployer's variables (cfg.env, checked by
 * aj_config_validate) as "NAME=VALUE\n" lines, which the guest hands on
 * after rule E1's rows. 0 or -errno. */
int vm_ready_send(const struct vm_host *h, const struct ready_vm *vm,
		  const struct aj_config *cfg, uint32_t type, const void *head, size_t head_len,
		  uint32_t *env_len, const char *what, size_t len);
/* Connects the VM's egress port and relays it to proxy until
 * egress_relay_stop: before the program is sent, so the guest's first
 * connection finds the host there. */
int vm_ready_egress(const struct vm_host *h, const struct ready_vm *vm,
		    struct egress_proxy *proxy, double deadline, struct egress_relay **out,
		    struct aj_error *err);
/* While the stream's consumer is behind: waits for room (or the deadline
 * or a cancel) before the guest's next frame is read. */
void vm_ready_wait_room(struct vm_output *out, double deadline, int cancel_fd);
/* "what (why); QEMU: its last words" into err, code rc. */
int vm_ready_lost(const struct ready_vm *vm, int rc, const char *what, struct aj_error *err);

#endif
