/* The host's frames as the guest reads them (../protocol.h): VM_TRUST,
 * VM_RUN, VM_SESSION_START, VM_CALL, and the payload of a frame that is only skipped
 * (a VM_CALL_STOP during a call). The frame's header has been read; the rest
 * comes through a read function, port_read in the VM, so the decoding can be
 * driven without a port too (fuzz/fuzz_guest_frames.c).
 *
 * The host is trusted, but a wrong frame is still refused rather than half
 * read: every length is checked against the header before it sizes an
 * allocation or a read, and zero never means unlimited. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int receive_trust(frame_read *read_fn, const struct vm_frame_header *h, char **pem,
		  struct failure *f)
{
	int rc;
	*pem = NULL;
	if (h->type != VM_TRUST || h->length == 0 || h->length > VM_TRUST_MAX)
		return fail(f, 0, "bad frame (type %u, length %u), expected VM_TRUST of 1 to %u bytes",
			    h->type, h->length, VM_TRUST_MAX);
	*pem = malloc((size_t)h->length + 1);
	if (!*pem)
		return fail(f, ENOMEM, "VM_TRUST: %u bytes", h->length);
	if ((rc = read_fn(*pem, h->length)))
		return fail(f, -rc, "read VM_TRUST");
	(*pem)[h->length] = '\0';
	if (memchr(*pem, '\0', h->length))
		return fail(f, 0, "VM_TRUST: a NUL byte in the bundle");
	return 0;
}

/* The deployer's variables after a frame's code (VM_RUN's env_len):
 * NUL-terminated lines, no other NUL, within the config's cap. */
static int receive_env(frame_read *read_fn, uint32_t len, char **env, struct failure *f)
{
	if (len > AJ_MAX_ENV_BYTES)
		return fail(f, 0, "env_len %u is more than %d", len, AJ_MAX_ENV_BYTES);
	if (!(*env = malloc((size_t)len + 1)))
		return fail(f, ENOMEM, "%u bytes of variables", len);
	int rc = read_fn(*env, len);
	if (rc)
		return fail(f, -rc, "read the variables");
	(*env)[len] = '\0';
	if (strlen(*env) != len || (len && (*env)[len - 1] != '\n'))
		return fail(f, 0, "the variables are not NAME=VALUE lines");
	return 0;
}

int receive_run(frame_read *read_fn, const struct vm_frame_header *h, struct vm_run *lim,
		char **code, char **env, struct failure *f)
{
	int rc;
	*code = *env = NULL;
	if (h->type != VM_RUN || h->length < sizeof *lim || h->length > VM_MAX_FRAME)
		return fail(f, 0, "bad frame (type %u, length %u), expected VM_RUN", h->type,
			    h->length);
	if ((rc = read_fn(lim, sizeof *lim)))
		return fail(f, -rc, "read VM_RUN");
	if ((uint64_t)lim->code_len + lim->env_len != h->length - sizeof *lim)
		return fail(f, 0, "VM_RUN: code_len %u and env_len %u do not match the frame "
				  "length %u",
			    lim->code_len, lim->env_len, h->length);
	*code = malloc((size_t)lim->code_len + 1);
	if (!*code)
		return fail(f, ENOMEM, "VM_RUN: %u bytes of code", lim->code_len);
	if ((rc = read_fn(*code, lim->code_len)))
		return fail(f, -rc, "read the code");
	return receive_env(read_fn, lim->env_len, env, f);
}

/* Zero never means unlimited: a zero limit is the host's mistake and is
 * refused. The output caps stay within what the host accepts of a frame. */
int check_run_limits(const struct vm_run *l, struct failure *f)
{
	const struct {
		const char *name;
		uint32_t value;
	} required[] = {
		{"wall_ms", l->wall_ms},         {"cpu_sec", l->cpu_sec},
		{"memory_mb", l->memory_mb},     {"pids", l->pids},
		{"file_size_mb", l->file_size_mb}, {"disk_mb", l->disk_mb},
		{"output_kb", l->output_kb},     {"open_files", l->open_files},
	};
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
		if (required[i].value == 0)
			return fail(f, 0, "VM_RUN: %s is 0", required[i].name);
	if ((uint64_t)l->output_kb * 1024 * 2 + sizeof(struct vm_result) + MESSAGE_MAX >
	    VM_MAX_FRAME)
		return fail(f, 0, "VM_RUN: output_kb %u: two streams that size exceed one frame",
			    l->output_kb);
	if (l->disk_mb > UINT32_MAX / 256 - 1)
		return fail(f, 0, "VM_RUN: disk_mb %u is too large", l->disk_mb);
	if (l->egress > 1 || l->reserved)
		return fail(f, 0, "VM_RUN: egress %u, reserved %u (0 or 1, and 0)", l->egress,
			    l->reserved);
	return 0;
}

int receive_session_start(frame_read *read_fn, const struct vm_frame_header *h,
			  struct vm_session_start *l, char **repl, char **env, struct failure *f)
{
	*repl = *env = NULL;
	if (h->length < sizeof *l || h->length > VM_MAX_FRAME)
		return fail(f, 0, "VM_SESSION_START: bad length %u", h->length);
	int rc = read_fn(l, sizeof *l);
	if (rc)
		return fail(f, -rc, "read VM_SESSION_START");
	if ((uint64_t)l->repl_len + l->env_len != h->length - sizeof *l || l->repl_len == 0 ||
	    l->reserved)
		return fail(f, 0, "VM_SESSION_START: repl_len %u and env_len %u do not match the "
				  "frame",
			    l->repl_len, l->env_len);
	if (!(*repl = malloc((size_t)l->repl_len + 1)))
		return fail(f, ENOMEM, "VM_SESSION_START: %u bytes", l->repl_len);
	if ((rc = read_fn(*repl, l->repl_len)))
		return fail(f, -rc, "read the session interpreter");
	(*repl)[l->repl_len] = '\0';
	if (strlen(*repl) != l->repl_len)
		return fail(f, 0, "VM_SESSION_START: the interpreter's source holds a NUL");
	if ((rc = receive_env(read_fn, l->env_len, env, f)))
		return rc;
	/* Zero never means unlimited. */
	const struct {
		const char *name;
		uint32_t value;
	} required[] = {
		{"cpu_sec", l->cpu_sec},     {"memory_mb", l->memory_mb},
		{"pids", l->pids},           {"file_size_mb", l->file_size_mb},
		{"disk_mb", l->disk_mb},     {"output_kb", l->output_kb},
		{"open_files", l->open_files},
	};
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
		if (required[i].value == 0)
			return fail(f, 0, "VM_SESSION_START: %s is 0", required[i].name);
	if ((uint64_t)l->output_kb * 1024 * 2 > VM_MAX_FRAME / 2)
		return fail(f, 0, "VM_SESSION_START: output_kb %u is too large", l->output_kb);
	if (l->disk_mb > UINT32_MAX / 256 - 1)
		return fail(f, 0, "VM_SESSION_START: disk_mb %u is too large", l->disk_mb);
	if (l->egress > 1 || l->reserved)
		return fail(f, 0, "VM_SESSION_START: egress %u, reserved %u (0 or 1, and 0)",
			    l->egress, l->reserved);
	return 0;
}

int receive_call(frame_read *read_fn, const struct vm_frame_header *h, struct vm_call *req,
		 char **request, struct failure *f)
{
	*request = NULL;
	bool ok = h->length >= sizeof *req && h->length <= VM_MAX_FRAME &&
		  read_fn(req, sizeof *req) == 0 && req->request_len == h->length - sizeof *req;
	if (ok && (*request = malloc(req->request_len + 1)) != NULL)
		ok = read_fn(*request, req->request_len) == 0;
	/* The host's mistake, or a stream out of step: neither is
	 * recoverable, and nothing of the call has run. */
	if (!ok || !*request || req->wall_ms == 0 ||
	    (uint64_t)req->reply_max + sizeof(struct vm_call_result) + MESSAGE_MAX > VM_MAX_FRAME)
		return fail(f, 0, "VM_CALL: malformed (length %u)", h->length);
	return 0;
}

int skip_frame(frame_read *read_fn, const struct vm_frame_header *h)
{
	char skip[256];
	for (uint32_t left = h->length; left > 0;) {
		uint32_t n = left < sizeof skip ? left : (uint32_t)sizeof skip;
		int rc = read_fn(skip, n);
		if (rc)
			return rc;
		left -= n;
	}
	return 0;
}
