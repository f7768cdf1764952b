#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../linux/supervise.h"
#include "answer.h"
#include "protocol.h"

int vm_ready_answer(uint32_t type, const void *payload, uint32_t len, struct aj_error *err)
{
	struct vm_ready r = {0};
	memcpy(&r, payload, len < sizeof r ? len : sizeof r);
	if (type != VM_READY || r.version != VM_PROTOCOL_VERSION)
		return error_set(err, -EPROTO, "microvm: the guest agent speaks another protocol "
					      "(frame %u, version %u)",
				 type, r.version);
	/* Never snapshot a VM whose interpreter did not come up. */
	if (!r.python_ok)
		return error_set(err, -EIO, "microvm: the guest's Python did not start (its console "
					   "says why)");
	return 0;
}

void vm_output_init(struct vm_output *v, size_t limit, uint64_t seq)
{
	memset(v, 0, sizeof *v);
	supervisor_init(&v->sv, &v->o, now_ms(), 0);
	for (int i = 0; i < 2; i++) {
		capture_init(&v->cap[i], limit);
		v->sv.cap[i] = &v->cap[i];
	}
	v->seq = seq;
	v->limit = limit;
}

void vm_output_free(struct vm_output *v)
{
	capture_free(&v->cap[0]);
	capture_free(&v->cap[1]);
}

int vm_output_take(struct vm_output *v, const void *payload, uint32_t len, struct aj_result *res)
{
	struct vm_output_head h;
	if (len < sizeof h || len - sizeof h == 0 || len - sizeof h > VM_OUTPUT_MAX) {
		result_sandbox_error(res, "microvm: the guest's output frame is malformed (%u bytes; "
					  "1 to %u of output in one)",
				     len, VM_OUTPUT_MAX);
		return -EPROTO;
	}
	memcpy(&h, payload, sizeof h);
	uint32_t n = len - (uint32_t)sizeof h;
	if (h.stream > 1 || h.reserved) {
		result_sandbox_error(res, "microvm: the guest's output frame names stream %u "
					  "(reserved %u)",
				     h.stream, h.reserved);
		return -EPROTO;
	}
	/* A piece of an earlier call, after its result: never this call's. */
	if (h.seq != v->seq) {
		result_sandbox_error(res, "microvm: the guest's output frame is of call %llu, not "
					  "of this one (%llu)",
				     (unsigned long long)h.seq, (unsigned long long)v->seq);
		return -EPROTO;
	}
	/* The guest caps each stream; a guest taken over by its program
	 * could send more: the host holds the cap itself. */
	if (v->cap[h.stream].len + n > v->limit) {
		result_sandbox_error(res, "microvm: the guest's %s passed the output cap of %zu "
					  "bytes",
				     h.stream ? "stderr" : "stdout", v->limit);
		return -EPROTO;
	}
	supervisor_output(&v->sv, (int)h.stream, (const char *)payload + sizeof h, n);
	return 0;
}

int vm_output_or_answer(struct vm_output *v, uint32_t type, void **payload, uint32_t len,
			struct aj_result *res)
{
	if (type != VM_OUTPUT)
		return 0;
	int rc = vm_output_take(v, *payload, len, res);
	free(*payload);
	*payload = NULL;
	return rc ? rc : 1;
}

/* The result's word on the streams: their lengths are what the output
 * frames brought, and what it says was cut. */
static bool take_streams(struct vm_output *v, uint32_t stdout_len, uint32_t stderr_len,
			 uint32_t flags)
{
	if (stdout_len != v->cap[0].len || stderr_len != v->cap[1].len)
		return false;
	v->cap[0].truncated = flags & VM_STDOUT_TRUNCATED;
	v->cap[1].truncated = flags & VM_STDERR_TRUNCATED;
	return true;
}

/* The guest's facts about a run, read with the status rules of every tier
 * (src/core/status.h, through outcome_to_result). The guest's words are
 * only ever quoted under the host's own "microvm: " prefix. */
static void result_from_guest(const void *payload, uint32_t len, const struct aj_limits *l,
			      struct vm_output *v, struct aj_result *res)
{
	struct vm_result r;
	if (len < sizeof r) {
		result_sandbox_error(res, "microvm: the guest's answer is cut short (%u bytes)", len);
		return;
	}
	memcpy(&r, payload, sizeof r);
	const char *message = (const char *)payload + sizeof r;
	if ((uint64_t)sizeof r + r.message_len != len ||
	    !take_streams(v, r.stdout_len, r.stderr_len, r.flags)) {
		result_sandbox_error(res, "microvm: the guest's answer is malformed");
		return;
	}
	struct outcome o;
	memset(&o, 0, sizeof o);
	o.timed_out = r.flags & VM_RUN_TIMED_OUT;
	o.output_overflow = r.flags & VM_RUN_OVERFLOW;
	o.setup_failed = r.flags & VM_RUN_SETUP_FAILED;
	o.exited_report = !o.setup_failed && (r.flags & VM_RUN_ENDED);
	o.report.wstatus = r.wstatus;
	o.report.flags = r.flags & VM_RUN_MEMORY_ERROR ? REPORT_MEMORY_ERROR : 0;
	o.report.cpu_us = (int64_t)r.cpu_us;
	o.report.maxrss_kb = (int64_t)r.memory_kb;
	o.oom_kills = r.oom_kills;
	o.wall_ms = (double)r.wall_us / 1000.0;
	/* Without a word of the program's end (or with a setup failure): a
	 * sandbox_error in the guest's quoted words. */
	snprintf(o.setup_message, sizeof o.setup_message, "microvm: %s: %.*s",
		 o.setup_failed ? "the guest could not prepare the run"
				: "the program's end is unknown",
		 (int)(r.message_len < 300 ? r.message_len : 300), message);
	if (!o.setup_failed && !o.exited_report && !o.timed_out && !o.output_overflow &&
	    !o.oom_kills)
		o.setup_failed = true; /* its end unknown: the guest's why, quoted */
	outcome_to_result(&o, l, &v->cap[0], &v->cap[1], res);
}

int vm_run_answer(uint32_t type, const void *payload, uint32_t len, const struct aj_limits *l,
		  struct vm_output *out, struct aj_result *res)
{
	if (type != VM_RESULT) {
		result_sandbox_error(res, "microvm: unexpected frame %u from the guest", type);
		return -EPROTO;
	}
	result_from_guest(payload, len, l, out, res);
	return 0;
}

int vm_session_ready_answer(uint32_t type, const void *payload, uint32_t len,
			    struct aj_error *err)
{
	struct vm_session_ready ready;
	if (type != VM_SESSION_READY || len < sizeof ready)
		return error_set(err, -EPROTO, "microvm: session: unexpected frame %u from the guest",
				 type);
	memcpy(&ready, payload, sizeof ready);
	if (!ready.ok) {
		/* A protection the guest could not apply: refused, never run
		 * with less. */
		uint32_t n = len - (uint32_t)sizeof ready;
		return error_set(err, -EIO, "microvm: session: %.*s",
				 (int)(ready.message_len < n ? ready.message_len : n),
				 (const char *)payload + sizeof ready);
	}
	return 0;
}

/* The guest's facts about a call, read with the status rules of every tier
 * (src/core/status.h, through outcome_to_result). */
static int call_from_guest(const void *payload, uint32_t len, const struct aj_config *cfg,
			   const struct session_call *call, double wall_ms, struct vm_output *v,
			   struct aj_result *res, struct session_answer *ans,
			   uint64_t *replied_ooms)
{
	struct vm_call_result r;
	if (len < sizeof r) {
		result_sandbox_error(res, "microvm: the guest's answer is cut short (%u bytes)", len);
		return -EPROTO;
	}
	memcpy(&r, payload, sizeof r);
	uint64_t need = (uint64_t)sizeof r + r.reply_len + r.message_len;
	if (need != len || r.reply_len > call->reply_max ||
	    !take_streams(v, r.stdout_len, r.stderr_len, r.flags)) {
		result_sandbox_error(res, "microvm: the guest's answer is malformed");
		return -EPROTO;
	}
	const char *reply = (const char *)payload + sizeof r;
	const char *message = reply + r.reply_len;
	if (r.flags & VM_CALL_BROKEN) {
		result_sandbox_error(res, "microvm: session: %.*s; the VM was destroyed",
				     (int)r.message_len, message);
		return -EPIPE;
	}
	struct capture *out = &v->cap[0], *errc = &v->cap[1];
	ans->restarted = r.flags & VM_CALL_RESTARTED;
	/* A reply, and then the interpreter ended: the reply stands, and the
	 * next call is told its state is gone. */
	ans->ended = r.flags & VM_CALL_ENDED;
	if (r.flags & VM_CALL_REPLIED) {
		ans->reply = malloc((size_t)r.reply_len + 1);
		if (ans->reply) {
			memcpy(ans->reply, reply, r.reply_len);
			ans->reply[r.reply_len] = '\0';
			ans->reply_len = r.reply_len;
		}
		replied_to_result(wall_ms, out, errc, res);
		/* Kills no end has counted: a command's, maybe (the guest's
		 * count since its last answer). */
		*replied_ooms = r.oom_kills;
	} else {
		struct outcome o;
		memset(&o, 0, sizeof o);
		o.timed_out = r.flags & VM_CALL_TIMED_OUT;
		o.cancelled = r.flags & VM_CALL_CANCELLED;
		o.output_overflow = r.flags & VM_CALL_OVERFLOW;
		o.setup_failed = r.flags & VM_CALL_SETUP_FAILED;
		o.exited_report = !o.setup_failed;
		o.report.wstatus = r.wstatus;
		o.report.cpu_us = (int64_t)r.cpu_us;
		o.report.maxrss_kb = (int64_t)r.memory_kb;
		snprintf(o.setup_message, sizeof o.setup_message,
			 "microvm: session: the guest could not prepare the call: %.*s",
			 (int)(r.message_len < 300 ? r.message_len : 300), message);
		o.wall_ms = wall_ms;
		o.oom_kills = r.oom_kills; /* status memory: src/core/status.h */
		if (r.flags & VM_CALL_BAD_REPLY)
			outcome_reply_too_long(&o, call->reply_max);
		outcome_to_result(&o, &cfg->limits, out, errc, res);
	}
	return 0;
}

int vm_call_answer(uint32_t type, const void *payload, uint32_t len, const struct aj_config *cfg,
		   const struct session_call *call, double wall_ms, struct vm_output *out,
		   struct aj_result *res, struct session_answer *ans, uint64_t *replied_ooms)
{
	*replied_ooms = 0;
	if (type != VM_CALL_RESULT) {
		result_sandbox_error(res, "microvm: unexpected frame %u from the guest", type);
		return -EPROTO;
	}
	return call_from_guest(payload, len, cfg, call, wall_ms, out, res, ans, replied_ooms);
}
