/* One run in a ready VM: see run_host.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../core/status.h"
#include "../linux/stream_hooks.h"
#include "channel.h"
#include "protocol.h"
#include "run_host.h"

/* Reads the guest's frames until its answer (any frame but VM_OUTPUT, for
 * the caller to read), each VM_OUTPUT to out as it comes: channel_recv's
 * codes, or -EPROTO with res saying which output frame broke the rules. */
static int recv_answer(int ch, double deadline, int cancel_fd, struct vm_output *out,
		       uint32_t *type, void **payload, uint32_t *len, struct aj_result *res)
{
	for (;;) {
		vm_ready_wait_room(out, deadline, cancel_fd);
		int rc = channel_recv(ch, deadline, cancel_fd, type, payload, len);
		if (rc || (rc = vm_output_or_answer(out, *type, payload, *len, res)) <= 0)
			return rc;
	}
}

/* The program and its limits, after the egress port is connected. */
static int send_run(const struct vm_host *h, const struct ready_vm *vm,
			const struct aj_config *cfg, const struct run_request *req,
			struct egress_relay **relay, struct aj_result *res)
{
	const struct aj_limits *l = &cfg->limits;
	struct aj_error err = {0};
	struct vm_run vr = {.wall_ms = (uint32_t)(l->wall_sec * 1000.0), .cpu_sec = l->cpu_sec,
			    .memory_mb = l->memory_mb, .pids = l->pids,
			    .file_size_mb = l->file_size_mb, .disk_mb = l->disk_mb,
			    .output_kb = l->output_kb, .code_len = (uint32_t)req->len,
			    .egress = req->egress != NULL, .open_files = l->open_files};
	int rc = req->egress ? vm_ready_egress(h, vm, req->egress,
					       now_ms() + l->wall_sec * 1000.0 + VM_GRACE_MS,
					       relay, &err)
			     : 0;
	if (rc) {
		result_sandbox_error(res, "%s", err.message);
		return rc;
	}
	rc = vm_ready_send(h, vm, cfg, VM_RUN, &vr, sizeof vr, &vr.env_len, req->code, req->len);
	if (rc)
		result_sandbox_error(res, "microvm: send the program: %s", errno_name(-rc));
	return rc;
}

int vm_host_run(const struct vm_host *h, struct ready_vm *vm, const struct aj_config *cfg,
		const struct run_request *req, double start, struct aj_result *res)
{
	const struct aj_limits *l = &cfg->limits;
	uint32_t type = 0, len = 0;
	void *payload = NULL;
	struct egress_relay *relay = NULL;
	struct vm_output out;
	vm_output_init(&out, (size_t)l->output_kb * 1024, 0);
	out.sv.stream = supervisor_stream_of(req->tap); /* each frame's bytes as they come */
	int rc = send_run(h, vm, cfg, req, &relay, res);
	const bool sent = rc == 0;
	/* A pooled VM's clock for this run starts now, not when it was made. */
	if (sent)
		rc = recv_answer(vm->ch, now_ms() + l->wall_sec * 1000.0 + VM_GRACE_MS,
				 req->cancel_fd, &out, &type, &payload, &len, res);
	if (!sent || rc == -EPROTO) {
		/* Nothing sent, or an output frame out of the rules: res says
		 * why. */
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
		struct aj_error err = {0};
		vm_ready_lost(vm, rc, "microvm: the VM ended before answering", &err);
		result_sandbox_error(res, "%s", err.message);
	} else {
		rc = vm_run_answer(type, payload, len, l, &out, res);
	}
	vm_output_free(&out);
	/* The relay first: its streams close, the proxy's ends see EOF. */
	egress_relay_stop(relay, NULL, 0);
	free(payload);
	vm_ready_release(vm);
	res->wall_ms = now_ms() - start;
	return rc;
}
