/* The host's reading of what the guest answers (protocol.h): VM_READY, a
 * run's VM_RESULT, a session's VM_SESSION_READY and VM_CALL_RESULT. A guest
 * taken over by the program it runs can send anything here, so every length
 * is checked against the frame and every output against its cap before a
 * byte is copied. Pure: the frames come from channel_recv (or the fuzz
 * target, fuzz/fuzz_vm_channel.c), and nothing here does I/O. */
#ifndef AJ_VM_ANSWER_H
#define AJ_VM_ANSWER_H

#include <stdint.h>

#include "../core/internal.h"
#include "../core/session_call.h"
#include "../linux/supervisor.h"

/* The program's output of one run or call, as its VM_OUTPUT frames bring
 * it: each piece goes to supervisor_output, the one place output passes on
 * the host (and where streaming taps it), into sv's captures. */
struct vm_output {
	struct supervisor sv;   /* no fds, no stop: only its output path */
	struct outcome o;
	struct capture cap[2];
	uint64_t seq;           /* the call's; 0 in a run */
	size_t limit;           /* each stream's cap, bytes */
};
void vm_output_init(struct vm_output *v, size_t limit, uint64_t seq);
void vm_output_free(struct vm_output *v);
/* One VM_OUTPUT's payload: 0 when taken; -EPROTO, with res a sandbox error
 * naming the rule it breaks (too short or long, empty, another stream, a
 * stream past its cap, another call's seq), when it is not. */
int vm_output_take(struct vm_output *v, const void *payload, uint32_t len, struct aj_result *res);

/* A frame read while the host waits for an answer: a VM_OUTPUT is taken
 * (1, its payload freed) or refused (-EPROTO, res saying why); any other
 * frame is the answer (0, left to the caller). */
int vm_output_or_answer(struct vm_output *v, uint32_t type, void **payload, uint32_t len,
			struct aj_result *res);

/* The booting guest's VM_READY: 0, -EPROTO (another frame or protocol
 * version), -EIO (its Python did not start), with err saying so. */
int vm_ready_answer(uint32_t type, const void *payload, uint32_t len, struct aj_error *err);
/* A run's answer as its result, its streams out's (moved to res): 0, with
 * res the guest's result or a sandbox error when the VM_RESULT is malformed
 * (its lengths disagree with the frame or with what out received);
 * -EPROTO for another frame (res says which). */
int vm_run_answer(uint32_t type, const void *payload, uint32_t len, const struct aj_limits *l,
		  struct vm_output *out, struct aj_result *res);
/* The answer to VM_SESSION_START: 0 when the interpreter started; -EPROTO
 * (another frame, or one cut short) or -EIO (the guest's reason) with err. */
int vm_session_ready_answer(uint32_t type, const void *payload, uint32_t len,
			    struct aj_error *err);
/* A call's VM_CALL_RESULT, read with the jail tiers' rules, its streams
 * out's: 0 with res and ans filled; -EPROTO (another frame, or a malformed
 * one) or -EPIPE (the guest says it cannot go on) with res a sandbox error:
 * the host then ends the VM. *replied_ooms: the guest's OOM kills since its
 * last answer when the interpreter replied (no end counted them), else 0. */
int vm_call_answer(uint32_t type, const void *payload, uint32_t len, const struct aj_config *cfg,
		   const struct session_call *call, double wall_ms, struct vm_output *out,
		   struct aj_result *res, struct session_answer *ans, uint64_t *replied_ooms);

#endif
