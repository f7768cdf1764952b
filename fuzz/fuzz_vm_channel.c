/* libFuzzer target: the host's reading of what the microVM guest sends
 * (src/vm/channel.c's channel_decode, the frames; src/vm/answer.c, what the
 * host makes of each). A guest taken over by the program it runs can write
 * any bytes on the virtio-serial port, so this is the microvm tier's trust
 * boundary.
 *
 * The input: a byte choosing the size of every read (1..64, as QEMU's
 * socket may split a frame anywhere), a byte choosing the host's state, a
 * byte for the output cap (1..16 KiB, small so that answers pass it), a
 * byte for a call's reply cap, then the stream the host reads, in the host's
 * order: the booting guest's VM_READY (src/vm/snapshot.c), or a run's
 * VM_OUTPUT frames and its one answer (microvm_run), or a session's
 * VM_SESSION_READY and then, per call (seq 1, 2, ...), its VM_OUTPUT frames
 * and one VM_CALL_RESULT, until an answer ends the VM (microvm_session_open,
 * microvm_session_call). The end of the input is the end of the stream.
 *
 * What must hold: no crash, leak or undefined behaviour (ASan/UBSan); a
 * frame is decoded with its length within VM_MAX_FRAME and its payload
 * NUL-terminated, or refused (-EPIPE, -EPROTO); every answer ends in a
 * result or a refusal whose message says "microvm: ..."; an output frame
 * out of the rules is refused the same way, and what was taken of the
 * output never passes the cap; a result's streams are NUL-terminated and
 * never longer than the output cap (the guest is not trusted to have capped
 * them), a call's reply never longer than its cap. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/linux/supervise.h"
#include "src/vm/answer.h"
#include "src/vm/channel.h"
#include "src/vm/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
	const uint8_t *p;
	size_t left, step;
};

/* channel_read_fn over the input: at most step bytes a read, 0 at its end. */
static ssize_t input_read(void *ctx, void *buf, size_t n)
{
	struct input *in = ctx;
	if (n > in->step)
		n = in->step;
	if (n > in->left)
		n = in->left;
	memcpy(buf, in->p, n);
	in->p += n;
	in->left -= n;
	return (ssize_t)n;
}

static int next_frame(struct input *in, uint32_t *type, void **payload, uint32_t *len)
{
	*payload = NULL;
	int rc = channel_decode(input_read, in, type, payload, len);
	if (rc == 0 && (*len > VM_MAX_FRAME || ((char *)*payload)[*len] != '\0'))
		__builtin_trap();
	if (rc && (rc != -EPIPE && rc != -EPROTO))
		__builtin_trap();
	return rc;
}

static void check_refusal(const char *message)
{
	if (!message || strncmp(message, "microvm: ", 9) != 0)
		__builtin_trap();
}

static void check_result(const struct aj_result *res, size_t cap)
{
	if ((unsigned)res->status >= AJ_STATUS_COUNT)
		__builtin_trap();
	if (res->status == AJ_STATUS_SANDBOX_ERROR && !res->message)
		__builtin_trap();
	if (res->stdout_len > cap || res->stderr_len > cap)
		__builtin_trap();
	if ((res->stdout_buf && res->stdout_buf[res->stdout_len]) ||
	    (res->stderr_buf && res->stderr_buf[res->stderr_len]))
		__builtin_trap();
}

/* The frames up to the answer, each VM_OUTPUT taken into out as the tier
 * does (microvm.c recv_answer): 0 with the answer's frame, a refused
 * output frame (-EPROTO, res says which), or next_frame's end. */
static int next_answer(struct input *in, struct vm_output *out, uint32_t *type, void **payload,
		       uint32_t *len, struct aj_result *res)
{
	for (;;) {
		int rc = next_frame(in, type, payload, len);
		if (rc || *type != VM_OUTPUT)
			return rc;
		rc = vm_output_take(out, *payload, *len, res);
		free(*payload);
		*payload = NULL;
		if (out->cap[0].len > out->limit || out->cap[1].len > out->limit)
			__builtin_trap();
		if (rc) {
			if (rc != -EPROTO)
				__builtin_trap();
			check_refusal(res->message);
			return rc;
		}
	}
}

static void one_ready(struct input *in)
{
	uint32_t type, len;
	void *payload;
	if (next_frame(in, &type, &payload, &len))
		return;
	struct aj_error err = {0};
	int rc = vm_ready_answer(type, payload, len, &err);
	free(payload);
	if (rc && (rc != -EPROTO && rc != -EIO))
		__builtin_trap();
	if (rc)
		check_refusal(err.message);
}

static void one_run(struct input *in, const struct aj_config *cfg)
{
	uint32_t type, len;
	void *payload;
	struct vm_output out;
	vm_output_init(&out, (size_t)cfg->limits.output_kb * 1024, 0);
	struct aj_result res;
	result_init(&res);
	int rc = next_answer(in, &out, &type, &payload, &len, &res);
	if (rc) {
		/* the VM ended before answering, or broke a rule: a sandbox error */
		vm_output_free(&out);
		aj_result_free(&res);
		return;
	}
	rc = vm_run_answer(type, payload, len, &cfg->limits, &out, &res);
	vm_output_free(&out);
	free(payload);
	if (rc && rc != -EPROTO)
		__builtin_trap();
	if (rc || res.status == AJ_STATUS_SANDBOX_ERROR)
		check_refusal(res.message);
	check_result(&res, (size_t)cfg->limits.output_kb * 1024);
	aj_result_free(&res);
}

static void one_session(struct input *in, const struct aj_config *cfg, size_t reply_max)
{
	uint32_t type, len;
	void *payload;
	if (next_frame(in, &type, &payload, &len))
		return;
	struct aj_error err = {0};
	int rc = vm_session_ready_answer(type, payload, len, &err);
	free(payload);
	if (rc) {
		if (rc != -EPROTO && rc != -EIO)
			__builtin_trap();
		check_refusal(err.message);
		return; /* the session does not open; its VM is destroyed */
	}
	struct session_call call = {.request = "{}\n", .len = 3, .seq = 1, .cancel_fd = -1,
				    .reply_max = reply_max};
	for (;; call.seq++) {
		struct aj_result res;
		struct session_answer ans;
		struct vm_output out;
		result_init(&res);
		memset(&ans, 0, sizeof ans);
		vm_output_init(&out, (size_t)cfg->limits.output_kb * 1024, call.seq);
		if (next_answer(in, &out, &type, &payload, &len, &res)) {
			vm_output_free(&out);
			aj_result_free(&res);
			return; /* the host ends the VM */
		}
		uint64_t ooms = 0;
		rc = vm_call_answer(type, payload, len, cfg, &call, 1.0, &out, &res, &ans, &ooms);
		vm_output_free(&out);
		free(payload);
		if (rc) {
			if ((rc != -EPROTO && rc != -EPIPE) || ans.reply)
				__builtin_trap();
			check_refusal(res.message);
		} else if (ans.reply && (ans.reply_len > reply_max || ans.reply[ans.reply_len])) {
			__builtin_trap();
		} else if (ans.reply) {
			/* As the session's caller then does (api/session.c): the
			 * reply's status, decided by the ladder, is the call's. */
			json_t *reply = session_reply_json(ans.reply, ans.reply_len, &res);
			if (reply)
				session_run_reply(reply, cfg, &res);
			json_decref(reply);
		}
		check_result(&res, (size_t)cfg->limits.output_kb * 1024);
		free(ans.reply);
		aj_result_free(&res);
		if (rc)
			return; /* the host ends the VM */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	struct aj_config cfg;
	aj_config_init(&cfg);
	cfg.limits.output_kb = data[2] % 16 + 1;
	size_t reply_max = (size_t)data[3] * 64;
	struct input in = {.p = data + 4, .left = size - 4, .step = data[0] % 64 + 1};
	switch (data[1] % 3) {
	case 0:
		one_ready(&in);
		break;
	case 1:
		one_run(&in, &cfg);
		break;
	default:
		one_session(&in, &cfg, reply_max);
	}
	return 0;
}
