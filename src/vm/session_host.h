/* A session's VM, from the host: one VM for the session's whole life, the
 * session interpreter (src/core/repl.py) started in it by
 * VM_SESSION_START, each call a VM_CALL whose output frames are read as
 * they come and whose VM_CALL_RESULT is read with the status rules (the
 * tier's theory of operation: src/tiers/microvm.c). */
#ifndef AJ_VM_SESSION_HOST_H
#define AJ_VM_SESSION_HOST_H

#include "../core/session_call.h"
#include "ready.h"

struct vm_host_session;

/* Starts the interpreter, under cfg's limits, in vm (the session's from here on, its uid slot
 * held until the close; released on failure), with egress (or NULL)
 * relayed to the session's proxy. 0, or -errno with err. */
int vm_host_session_open(const struct vm_host *h, struct ready_vm *vm,
			 const struct aj_config *cfg, struct egress_proxy *egress,
			 struct vm_host_session **out, struct aj_error *err);
/* One call (the ops' session_call). A call the guest does not answer in
 * time, or answers out of protocol, ends the VM: -EPIPE, res saying why,
 * and every later call is -EPIPE too. */
int vm_host_session_call(struct vm_host_session *s, const struct aj_config *cfg,
			 const struct session_call *call, struct aj_result *res,
			 struct session_answer *ans);
/* The VM, its run directory and its uid slot: nothing remains. NULL is
 * fine. */
/* tier_ops.session_oom_kills: the guest's OOM kills that no end counted
 * (reported by calls that replied), now counted. */
uint64_t vm_host_session_oom_kills(struct vm_host_session *s);
void vm_host_session_close(struct vm_host_session *s);
/* tier_ops.session_freeze: QEMU stopped (SIGSTOP: the whole VM, its
 * memory kept) or continued. A stopped QEMU still dies by SIGKILL. */
int vm_host_session_freeze(struct vm_host_session *s, bool frozen, struct aj_error *err);

#endif
