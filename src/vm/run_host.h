/* One run in a ready VM, from the host: the program sent, its output
 * frames read as they come, the guest's answer read with the status rules,
 * and the VM destroyed after (the tier's theory of operation:
 * src/tiers/microvm.c). */
#ifndef AJ_VM_RUN_HOST_H
#define AJ_VM_RUN_HOST_H

#include "../core/run_request.h"
#include "ready.h"

/* Runs req in vm (which it releases) under cfg's limits, its wall clock from now; start is
 * when the run began (res->wall_ms counts from it). Fills res fully. */
int vm_host_run(const struct vm_host *h, struct ready_vm *vm, const struct aj_config *cfg,
		const struct run_request *req, double start, struct aj_result *res);

#endif
