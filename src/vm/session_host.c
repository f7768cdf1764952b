/* A session's VM, from the host: see session_host.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/pidfd.h>
#include <time.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../linux/stream_hooks.h"
#include "channel.h"
#include "protocol.h"
#include "session_host.h"

/* The session interpreter, as a C string (tools/c_string.py). */
#include "session_repl.inc"

/* How long the guest may take to answer VM_SESSION_START (the interpreter's
 * fork and exec, not its start-up) and to stop a cancelled call. */
#define SESSION_START_MS 30000
#define CANCEL_GRACE_MS 2000

struct vm_host_session {
	struct ready_vm vm;
	struct egress_relay *relay; /* the session's egress port, or NULL */
	bool gone;              /* the VM was destroyed: the session is over */
	uint64_t oom_uncounted; /* the guest's OOM kills in calls that replied */
};

static void session_vm_end(struct vm_host_session *s)
{
	egress_relay_stop(s->relay, NULL, 0);
	s->relay = NULL;
	if (!s->gone)
		vm_ready_release(&s->vm);
	s->gone = true;
}

/* VM_SESSION_START with the session's limits and repl.py, and the guest's
 * answer. */
static int send_session_start(const struct vm_host *h, struct vm_host_session *s,
			     const struct aj_config *cfg, bool egress, struct aj_error *err)
{
	const struct aj_limits *l = &cfg->limits;
	struct vm_session_start start = {
		/* The interpreter's hard CPU limit: every call together. */
		.cpu_sec = cfg->session.cpu_sec, .memory_mb = l->memory_mb, .pids = l->pids,
		.file_size_mb = l->file_size_mb, .disk_mb = l->disk_mb,
		.output_kb = l->output_kb, .repl_len = (uint32_t)strlen(session_repl_py),
		.egress = egress, .open_files = l->open_files};
	int rc = vm_ready_send(h, &s->vm, cfg, VM_SESSION_START, &start, sizeof start, &start.env_len,
			       session_repl_py, start.repl_len);
	if (rc)
		return error_set(err, rc, "microvm: session: send the start: %s", errno_name(-rc));
	uint32_t type = 0, len = 0;
	void *payload = NULL;
	rc = channel_recv(s->vm.ch, now_ms() + SESSION_START_MS, -1, &type, &payload, &len);
	if (rc)
		vm_ready_lost(&s->vm, rc, "microvm: session: the guest did not answer the start",
			      err);
	else
		rc = vm_session_ready_answer(type, payload, len, err);
	free(payload);
	return rc;
}

int vm_host_session_open(const struct vm_host *h, struct ready_vm *vm,
			 const struct aj_config *cfg, struct egress_proxy *egress,
			 struct vm_host_session **out, struct aj_error *err)
{
	*out = NULL;
	struct vm_host_session *s = calloc(1, sizeof *s);
	if (!s) {
		vm_ready_release(vm);
		return error_set(err, -ENOMEM, "session: out of memory");
	}
	s->vm = *vm;
	int rc = egress ? vm_ready_egress(h, &s->vm, egress, now_ms() + SESSION_START_MS,
					  &s->relay, err)
			: 0;
	if (!rc)
		rc = send_session_start(h, s, cfg, egress != NULL, err);
	if (rc) {
		session_vm_end(s);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* Waits for the guest's frame until the deadline, or the caller's cancel:
 * the cancel is read only between frames, so a frame is never cut. */
static int await_frame(int ch, double deadline, int cancel_fd)
{
	for (;;) {
		double left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p[2] = {{.fd = ch, .events = POLLIN},
				      {.fd = cancel_fd, .events = POLLIN}};
		int n = poll(p, 2, (int)left + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (p[0].revents)
			return 0;
		if (p[1].revents)
			return -ECANCELED;
	}
}

/* The call's frames until its answer (any frame but VM_OUTPUT, for the
 * caller to read), each VM_OUTPUT to out as it comes; a cancel becomes
 * VM_CALL_STOP, and the guest then has the grace to answer. 0, -errno, or
 * -EPROTO with res saying which rule an output frame broke. */
static int read_call(struct vm_host_session *s, double deadline, int cancel_fd,
		     struct vm_output *out, uint32_t *type, void **payload, uint32_t *len,
		     struct aj_result *res)
{
	for (;;) {
		vm_ready_wait_room(out, deadline, cancel_fd);
		int rc = await_frame(s->vm.ch, deadline, cancel_fd);
		if (rc == -ECANCELED) {
			/* The guest stops the call and reports it cancelled; one
			 * that does not within the grace loses its VM. */
			if ((rc = channel_send(s->vm.ch, VM_CALL_STOP, NULL, 0, NULL, 0)))
				return rc;
			double grace = now_ms() + CANCEL_GRACE_MS;
			deadline = grace < deadline ? grace : deadline;
			cancel_fd = -1;
			continue;
		}
		if (rc == 0)
			rc = channel_recv(s->vm.ch, deadline, -1, type, payload, len);
		if (rc || (rc = vm_output_or_answer(out, *type, payload, *len, res)) <= 0)
			return rc;
	}
}

/* res's words for a call the VM did not answer. */
static void call_lost(const struct vm_host_session *s, int rc, const struct aj_limits *l,
		      struct aj_result *res)
{
	struct aj_error err = {0};
	if (rc == -ETIMEDOUT)
		error_set(&err, rc, "microvm: session: the guest did not answer within the "
				    "wall-clock limit of %g s and its grace; the VM was destroyed",
			  l->wall_sec);
	else
		vm_ready_lost(&s->vm, rc, "microvm: the VM ended during the call", &err);
	result_sandbox_error(res, "%s", err.message);
}

int vm_host_session_call(struct vm_host_session *s, const struct aj_config *cfg,
			 const struct session_call *call, struct aj_result *res,
			 struct session_answer *ans)
{
	const struct aj_limits *l = &cfg->limits;
	memset(ans, 0, sizeof *ans);
	if (s->gone) {
		result_sandbox_error(res, "microvm: session: the VM is gone");
		return -EPIPE;
	}
	/* One frame holds the reply (the streams come in their own): a longer
	 * reply is cut at what fits, and stops the call as too long. */
	uint64_t fixed = sizeof(struct vm_call_result) + 4096;
	uint64_t room = fixed < VM_MAX_FRAME ? VM_MAX_FRAME - fixed : 0;
	struct vm_call vc = {.seq = call->seq, .wall_ms = (uint32_t)(l->wall_sec * 1000.0),
			     .reply_max = (uint32_t)(call->reply_max < room ? call->reply_max : room),
			     .request_len = (uint32_t)call->len};
	double start = now_ms();
	/* The guest starts the call's clock at the interpreter's ack
	 * (VM_SESSION_START_MS), so the host waits that much longer. */
	double deadline = start + l->wall_sec * 1000.0 + VM_SESSION_START_MS + VM_GRACE_MS;
	uint32_t type = 0, len = 0;
	void *payload = NULL;
	if (call->len > VM_MAX_FRAME - sizeof vc) {
		result_sandbox_error(res, "microvm: session: a request of %zu bytes is too large",
				     call->len);
		return -EFBIG;
	}
	struct vm_output out;
	uint64_t ooms = 0; /* a replied call's, for a command's end */
	vm_output_init(&out, (size_t)l->output_kb * 1024, call->seq);
	out.sv.stream = supervisor_stream_of(call->tap);
	int rc = channel_send(s->vm.ch, VM_CALL, &vc, sizeof vc, call->request, call->len);
	if (rc)
		result_sandbox_error(res, "microvm: session: send the call: %s", errno_name(-rc));
	else if ((rc = read_call(s, deadline, call->cancel_fd, &out, &type, &payload, &len,
				 res)) &&
		 rc != -EPROTO) /* -EPROTO: res says which rule the frame broke */
		call_lost(s, rc, l, res);
	else if (!rc)
		rc = vm_call_answer(type, payload, len, cfg, call, now_ms() - start, &out, res,
				    ans, &ooms);
	s->oom_uncounted += ooms;
	vm_output_free(&out);
	free(payload);
	if (!rc)
		return 0;
	free(ans->reply);
	ans->reply = NULL;
	session_vm_end(s);
	res->wall_ms = now_ms() - start;
	return rc == -ETIMEDOUT || rc == -ECANCELED || rc >= 0 ? -EPIPE : rc;
}

uint64_t vm_host_session_oom_kills(struct vm_host_session *s)
{
	uint64_t n = s->oom_uncounted;
	s->oom_uncounted = 0;
	return n;
}

/* Whether QEMU (pid) is stopped: its /proc stat's state 'T'. */
static bool qemu_stopped(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_small_file(path, buf, sizeof buf) <= 0)
		return false;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

int vm_host_session_freeze(struct vm_host_session *s, bool frozen, struct aj_error *err)
{
	if (s->gone)
		return error_set(err, -ESRCH, "microvm: the session's VM has ended");
	/* QEMU is one process: stopped, the whole VM stops (its vCPUs, its
	 * devices), its memory kept; SIGCONT goes on where it stopped. By the
	 * pidfd, so never another process that took its pid. */
	if (pidfd_send_signal(s->vm.pidfd, frozen ? SIGSTOP : SIGCONT, NULL, 0))
		return error_set(err, -errno, "microvm: %s QEMU: %s", frozen ? "stopping" : "continuing",
				 strerror(errno));
	for (int i = 0; i < 10000; i++) {
		if (qemu_stopped(s->vm.pid) == frozen)
			return 0;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	if (frozen)
		pidfd_send_signal(s->vm.pidfd, SIGCONT, NULL, 0);
	return error_set(err, -ETIMEDOUT, "microvm: QEMU was not %s within 10 s",
			 frozen ? "stopped" : "continued");
}

void vm_host_session_close(struct vm_host_session *s)
{
	if (!s)
		return;
	/* The VM, its run directory and its uid slot: nothing remains. */
	session_vm_end(s);
	free(s);
}
