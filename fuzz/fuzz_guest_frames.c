/* libFuzzer target: the microVM guest agent's decoding of the host's frames
 * (src/vm/guest/frame.c, protocol in src/vm/protocol.h). The input is what
 * arrives on the virtio-serial port after VM_READY, read in the agent's
 * order: with trust_ca a VM_TRUST first; then a frame that is a VM_SESSION_START (then any number of
 * VM_CALL; a frame of another type right after one is taken as arriving
 * during that call, a stop whose payload is read past; between calls only a
 * VM_CALL_STOP without payload is ignored, anything else ends the session),
 * or else a VM_RUN with its limits checked. The end of the input is a read
 * error, as a port that fails.
 *
 * What must hold: no crash, leak or undefined behaviour (ASan/UBSan); a
 * frame accepted has lengths that agree with its header (and a session's
 * interpreter source holds no NUL, its limits no zero); a frame refused has
 * a message "guest: ..." within the agent's bound.
 *
 * The sequence of frames is this file's restatement of agent.c's main() and
 * session.c's loop, whose reads go to the port; what each frame is checked
 * for is the agent's own code. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/vm/guest/agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *in;
static size_t left;

/* port_read's contract: all n bytes, or -errno. */
static int input_read(void *buf, size_t n)
{
	if (n > left)
		return -EPIPE;
	memcpy(buf, in, n);
	in += n;
	left -= n;
	return 0;
}

static bool next_header(struct vm_frame_header *h)
{
	return input_read(h, sizeof *h) == 0;
}

static void check_refusal(const struct failure *f)
{
	if (strnlen(f->message, sizeof f->message) == sizeof f->message ||
	    strncmp(f->message, "guest: ", 7) != 0)
		__builtin_trap();
}

static void one_run(const struct vm_frame_header *h)
{
	struct vm_run lim;
	char *code, *env;
	struct failure f;
	if (receive_run(input_read, h, &lim, &code, &env, &f) == 0) {
		if (!code || !env || (uint64_t)lim.code_len + lim.env_len != h->length - sizeof lim ||
		    strlen(env) != lim.env_len)
			__builtin_trap();
		if (check_run_limits(&lim, &f))
			check_refusal(&f);
		else if (!lim.wall_ms || !lim.output_kb ||
			 (uint64_t)lim.output_kb * 2048 > VM_MAX_FRAME)
			__builtin_trap();
	} else {
		check_refusal(&f);
	}
	free(code);
	free(env);
}

static void one_session(const struct vm_frame_header *h)
{
	struct vm_session_start lim;
	char *repl, *env;
	struct failure f;
	int rc = receive_session_start(input_read, h, &lim, &repl, &env, &f);
	free(repl);
	free(env);
	if (rc) {
		check_refusal(&f);
		return; /* VM_SESSION_READY with ok 0, and the agent stops */
	}
	if (!lim.repl_len || !lim.output_kb || !lim.disk_mb)
		__builtin_trap();
	struct vm_frame_header next;
	while (next_header(&next)) {
		if (next.type == VM_CALL) {
			struct vm_call req;
			char *request;
			rc = receive_call(input_read, &next, &req, &request, &f);
			free(request);
			if (rc) {
				check_refusal(&f);
				return; /* VM_CALL_BROKEN: the host ends the VM */
			}
			if (req.request_len != next.length - sizeof req || !req.wall_ms)
				__builtin_trap();
			/* A frame that arrives while the call runs is a stop,
			 * whatever its type: its payload is read past. */
			struct vm_frame_header during;
			const uint8_t *mark = in;
			size_t mark_left = left;
			if (next_header(&during) && during.type != VM_CALL) {
				if (skip_frame(input_read, &during))
					return; /* the port failed */
			} else {
				in = mark; /* the next call's, after this one ended */
				left = mark_left;
			}
			continue;
		}
		/* A stop for a call that had already ended: nothing to do. */
		if (next.type != VM_CALL_STOP || next.length != 0)
			return;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	in = data;
	left = size;
	struct vm_frame_header h;
	if (!next_header(&h))
		return 0;
	if (h.type == VM_TRUST) {
		/* trust_ca's bundle first (agent.c's main): its bytes, no NUL. */
		char *pem = NULL;
		struct failure f;
		int rc = receive_trust(input_read, &h, &pem, &f);
		if (rc == 0 && (!pem || strlen(pem) != h.length))
			abort();
		if (rc && strncmp(f.message, "guest: ", 7))
			abort();
		free(pem);
		if (rc || !next_header(&h))
			return 0;
	}
	if (h.type == VM_SESSION_START)
		one_session(&h);
	else
		one_run(&h);
	return 0;
}
