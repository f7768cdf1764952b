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

/* The booting guest's VM_READY: 0, -EPROTO (another frame or protocol
 * version), -EIO (its Python did not start), with err saying so. */
int vm_ready_answer(uint32_t type, const void *payload, uint32_t len, struct aj_error *err);
/* A run's answer as its result: 0, with res the guest's result or a
 * sandbox error when the VM_RESULT is malformed (its lengths disagree with
 * the frame, or a stream passes l's output cap); -EPROTO for another frame
 * (res says which). */
int vm_run_answer(uint32_t type, const void *payload, uint32_t len, const struct aj_limits *l,
		  struct aj_result *res);
/* The answer to VM_SESSION_START: 0 when the interpreter started; -EPROTO
 * (another frame, or one cut short) or -EIO (the guest's reason) with err. */
int vm_session_ready_answer(uint32_t type, const void *payload, uint32_t len,
			    struct aj_error *err);
/* A call's VM_CALL_RESULT, read with the jail tiers' rules: 0 with res and
 * ans filled; -EPROTO (another frame, or a malformed one) or -EPIPE (the
 * guest says it cannot go on) with res a sandbox error: the host then ends
 * the VM. */
int vm_call_answer(uint32_t type, const void *payload, uint32_t len, const struct aj_config *cfg,
		   const struct session_call *call, double wall_ms, struct aj_result *res,
		   struct session_answer *ans);

#endif
