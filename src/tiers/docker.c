/* The docker tier: the seed article's hardened `docker run`, through a real
 * Docker Engine's API (its unix socket), for teams that already run one.
 *
 * One run is one container, used once:
 *
 *   create    the hardened HostConfig of spec.c: no network, read-only
 *             image, no capabilities, no_new_privs, our seccomp policy,
 *             memory = memory+swap, one CPU, pids, rlimits, size-limited
 *             tmpfs, no log driver, a non-root uid of the run's own (slot)
 *   attach    before start, so no byte is missed: the program goes in on
 *             stdin, stdout and stderr come back multiplexed and capped
 *             here as they arrive (Docker's logs are off: a flood never
 *             reaches the daemon's disk)
 *   start     then the wall clock runs on the host; a timeout, a flood or
 *             the caller's cancel kills the container through the API with
 *             SIGKILL (python as PID 1 ignores SIGTERM)
 *   wait, inspect   the exit code and Docker's OOMKilled flag (status memory)
 *   remove    always, also after any error past create
 *
 * Inside, PID 1 is boot.py: it writes the program into /tmp/work, runs it
 * as a child, reaps orphans, and reports the program's wait status and usage
 * at the end of stderr (stream.c strips and checks it).
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../boot/egress.h"
#include "../boot/run.h"
#include "../linux/stream_hooks.h"
#include "../boot/rundir.h"
#include "../docker/api.h"
#include "../docker/container.h"
#include "../docker/owner.h"
#include "../docker/phases.h"
#include "../docker/session.h"
#include "../docker/spec.h"
#include "../docker/stream.h"
#include "../linux/creds.h"
#include "../linux/supervise.h"
#include "tier.h"

_Thread_local struct docker_phases docker_last_phases;

static int image_present(struct http_conn *c, const char *image, struct aj_error *err)
{
	char path[400];
	snprintf(path, sizeof path, "/images/%s/json", image);
	struct aj_error e = {0};
	int status;
	int rc = docker_call(c, "GET", path, NULL, "inspect image", &status, NULL, &e);
	if (rc && status == 404)
		return error_set(err, -ENOENT,
				 "docker: the engine has no image %s (import one with 'agentjail "
				 "image build --docker', or name another with --docker-image)",
				 image);
	if (rc)
		return error_set(err, rc, "%s", e.message);
	return 0;
}

static int docker_open(const struct aj_config *cfg, void **state, struct aj_error *err)
{
	*state = NULL;
	struct docker_state *st = calloc(1, sizeof *st);
	if (!st)
		return error_set(err, -ENOMEM, "open: out of memory");
	struct http_conn c;
	int rc;
	if ((rc = docker_socket_path(cfg->docker_socket, st->socket, sizeof st->socket, err)) ||
	    (rc = docker_image_name(cfg, st->image, sizeof st->image, err)) ||
	    (rc = http_connect(&c, st->socket, DOCKER_CALL_MS, err))) {
		free(st);
		return rc;
	}
	snprintf(st->run_base, sizeof st->run_base, "%.4000s-docker",
		 cfg->state_dir ? cfg->state_dir : "/run/agentjail");
	boot_sweep_run_dirs(st->run_base);
	rc = image_present(&c, st->image, err);
	/* Containers whose maker died mid-run: nobody else will remove them.
	 * A failure here does not stop this sandbox from working. */
	struct aj_error e2 = {0};
	if (!rc)
		docker_sweep_orphans(&c, &e2);
	http_close(&c);
	if (rc) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void docker_close(void *state)
{
	free(state);
}

struct stream_run {
	int fd;                 /* the attach stream, non-blocking */
	struct docker_demux demux;
	struct capture out, err;
};

/* Stream bytes to the program's output: stdout and stderr pieces. */
static void take_stream(struct supervisor *sv, struct stream_run *s, const char *p, size_t n)
{
	while (n && !sv->stopping) {
		struct docker_piece piece;
		size_t used = docker_demux_next(&s->demux, p, n, &piece);
		if (piece.len && (piece.stream == 1 || piece.stream == 2))
			supervisor_output(sv, piece.stream - 1, piece.data, piece.len);
		p += used;
		n -= used;
	}
}

/* The attach stream: what is there; its end is the container's. */
static void on_stream(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	struct stream_run *s = sv->ctx;
	char buf[65536];
	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	/* Until a flood stops the run (the caller kills it now), or the
	 * stream's consumer is behind (the rest waits in the socket). */
	while (!sv->stopping && !supervisor_output_paused(sv)) {
		ssize_t n = recv(src->fd, buf, sizeof buf, 0);
		if (n > 0) {
			take_stream(sv, s, buf, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		sv->done = true;
		return;
	}
}

static void stream_input_end(struct supervisor *sv)
{
	const struct stream_run *s = sv->ctx;
	/* The whole program is in: end stdin (StdinOnce closes the
	 * container's). */
	shutdown(s->fd, SHUT_WR);
}

/* Exit code and OOM flag from wait and inspect. */
static int exit_state(struct http_conn *c, const char *id, int *exit_code, bool *oom,
		      struct aj_error *err)
{
	char path[128];
	json_t *j = NULL;
	snprintf(path, sizeof path, "/containers/%s/wait", id);
	int rc = docker_call(c, "POST", path, NULL, "wait", NULL, &j, err);
	if (rc)
		return rc;
	*exit_code = (int)json_integer_value(json_object_get(j, "StatusCode"));
	json_decref(j);
	snprintf(path, sizeof path, "/containers/%s/json", id);
	if ((rc = docker_call(c, "GET", path, NULL, "inspect", NULL, &j, err)))
		return rc;
	json_t *state = json_object_get(j, "State");
	*oom = json_is_true(json_object_get(state, "OOMKilled"));
	json_decref(j);
	return 0;
}

/* The run under the one supervision loop, from start_ms: the program in
 * on the attach stream (at: its bytes that came with the 101 reply first),
 * the output out, the stop the caller's (sv->stopping: kill it). */
static void supervise_container(struct stream_run *s, struct http_conn *at,
				const struct run_request *req, const struct aj_limits *l,
				const char *input, size_t input_len, double start_ms,
				struct boot_stream *bs, struct outcome *o, struct supervisor *sv)
{
	supervisor_init(sv, o, start_ms, l->wall_sec);
	/* The stop is the caller's: it kills the container through the API
	 * with SIGKILL (python as PID 1 ignores SIGTERM) once the loop ends. */
	sv->grace_ms = 0;
	sv->cancel_fd = req->cancel_fd;
	sv->cap[0] = &s->out;
	sv->cap[1] = &s->err;
	/* The attach stream carries the output: left unread while the
	 * consumer is behind. */
	sv->src[0] = (struct supervisor_source){.fd = s->fd, .carries_output = true,
						  .ready = on_stream};
	sv->stream = boot_stream_hooks(bs, supervisor_stream_of(req->tap), &s->err,
				       (size_t)l->output_kb * 1024);
	sv->in_fd = s->fd;
	sv->input = input; /* nonce line + program, for stdin */
	sv->input_len = input_len;
	sv->input_is_socket = true;
	sv->input_end = stream_input_end;
	sv->ctx = s;
	/* Stream bytes that came with the 101 reply. */
	if (at->len > at->pos)
		take_stream(sv, s, at->buf + at->pos, at->len - at->pos);
	supervisor_run(sv);
}

/* The result from what the host saw and boot.py's report, as facts for
 * the status rules (src/core/status.h). */
static void container_result(struct stream_run *s, const char *nonce, int exit_code, bool oom,
			     const struct aj_limits *l, struct boot_stream *bs,
			     struct outcome *o, struct aj_result *res)
{
	/* The program's own stderr is capped like stdout. */
	boot_finish_run(&s->err, nonce, exit_code, (size_t)l->output_kb * 1024, o);
	boot_stream_finish(bs);
	o->init_wstatus = exit_code << 8;
	char why[200], unknown[300];
	boot_last_line(&s->err, why, sizeof why);
	snprintf(unknown, sizeof unknown,
		 "docker: the container's PID 1 ended without a report (exit code %d)%s%s",
		 exit_code, why[0] ? ": " : "", why);
	o->unknown_end = unknown;
	/* Docker saw the memory cgroup's OOM killer at work (a flag, not a
	 * count: one process at least). */
	o->oom_kills = oom ? 1 : 0;
	outcome_to_result(o, l, &s->out, &s->err, res);
}

/* After the loop: the stream closed, the container killed if the loop
 * stopped it, its exit state and OOM flag read, and it removed (id then
 * emptied: there is nothing left to remove on a failure). */
static int end_container(struct http_conn *api, struct http_conn *at, char *id,
			 const struct supervisor *sv, const struct outcome *o, double created_at,
			 int *exit_code, bool *oom, struct docker_phases *ph, struct aj_error *err)
{
	double t = now_ms();
	if (sv->poll_errno)
		return error_set(err, -EIO, "docker: poll: %s", errno_name(sv->poll_errno));
	/* Done with the stream. Closed before the kill: Docker finishes a
	 * container's exit only once its output is copied out, and nobody
	 * reads this stream any more (a flood would block the kill). */
	http_close(at);
	int rc;
	if (sv->stopping && (rc = docker_kill(api, id, err)))
		return rc;
	if ((rc = exit_state(api, id, exit_code, oom, err)))
		return rc;
	/* A death by signal (128 + N) may be the OOM killer's. */
	if (!*oom && *exit_code > 128 && !o->timed_out && !o->cancelled && !o->output_overflow &&
	    (rc = docker_saw_oom(api, id, created_at - 1.0, oom, err)))
		return rc;
	ph->wait = now_ms() - t;
	t = now_ms();
	rc = docker_remove(api, id, err);
	id[0] = 0; /* gone, or the error says it is left: not tried twice */
	if (rc)
		return rc;
	ph->remove = now_ms() - t;
	return 0;
}

/* Whatever failed, the container does not outlive the run: removed on a
 * fresh connection, since the old one's state is unknown. */
static void remove_after_failure(const struct docker_state *st, struct http_conn *api,
				 const char *id, const struct aj_error *err,
				 struct aj_result *res)
{
	struct aj_error e2 = {0};
	http_close(api);
	http_connect(api, st->socket, DOCKER_CALL_MS, &e2);
	if (api->fd < 0 || docker_remove(api, id, &e2))
		result_sandbox_error(res, "%s; and the container %.12s could not be removed: %s",
				     err->message, id, e2.message);
}

static int docker_run(void *state, const struct aj_config *cfg, const struct run_request *req,
		      struct aj_result *res)
{
	struct docker_state *st = state;
	const struct aj_limits *l = &cfg->limits;
	struct aj_error err = {0};
	struct uid_slot slot = {.lock_fd = -1};
	struct http_conn api = {.fd = -1}, at = {.fd = -1};
	char id[80] = "";
	char egress_dir[PATH_MAX] = "";
	char *input = NULL;
	json_t *spec = NULL;
	struct outcome o = {0};
	struct docker_phases *ph = &docker_last_phases;
	memset(ph, 0, sizeof *ph);
	double t = now_ms();
	struct stream_run s = {.fd = -1};
	struct supervisor sv;
	capture_init(&s.out, (size_t)l->output_kb * 1024);
	/* Room past the cap for boot.py's report; the cap is applied to the
	 * program's own bytes once the report is stripped. */
	capture_init(&s.err, (size_t)l->output_kb * 1024 + BOOT_REPORT_MAX);
	int rc;

	char owner[160];
	docker_owner_self(owner, sizeof owner);
	if ((rc = docker_slot_acquire(cfg, &slot, &err)) ||
	    (rc = http_connect(&api, st->socket, DOCKER_CALL_MS, &err)))
		goto fail;
	/* The proxy listens before the container exists: the program finds
	 * it from its first instant. */
	if (req->egress &&
	    (rc = docker_egress_open(st, req->egress, slot.uid, slot.gid, egress_dir, &err)))
		goto fail;
	if (!(spec = docker_container_spec(cfg, st->image, slot.uid, slot.gid, owner,
					   egress_dir[0] ? egress_dir : NULL))) {
		rc = error_set(&err, -ENOMEM, "docker: out of memory");
		goto fail;
	}
	double created_at = docker_unix_time();
	if ((rc = docker_create(&api, spec, id, sizeof id, &err)))
		goto fail;
	ph->create = now_ms() - t;
	t = now_ms();

	/* Attach before start: output from the first instant is captured. */
	if ((rc = docker_attach(st->socket, id, &at, &err)))
		goto fail;
	char nonce[32];
	size_t input_len = 0;
	if (!(input = boot_run_input(req->code, req->len, l->wall_sec, nonce, sizeof nonce,
				     req->egress ? BOOT_EGRESS_SOCKET : NULL, &input_len))) {
		rc = error_set(&err, -ENOMEM, "docker: out of memory");
		goto fail;
	}
	s.fd = at.fd;

	ph->attach = now_ms() - t;
	t = now_ms();
	if ((rc = docker_start(&api, id, &err)))
		goto fail;
	double start_ms = now_ms();
	ph->start = start_ms - t;
	struct boot_stream bs;
	supervise_container(&s, &at, req, l, input, input_len, start_ms, &bs, &o, &sv);
	ph->run = o.wall_ms;
	int exit_code = -1;
	bool oom = false;
	if ((rc = end_container(&api, &at, id, &sv, &o, created_at, &exit_code, &oom, ph, &err)))
		goto fail;

	container_result(&s, nonce, exit_code, oom, l, &bs, &o, res);
	rc = res->status == AJ_STATUS_SANDBOX_ERROR ? -EIO : 0;
	goto out;

fail:
	result_sandbox_error(res, "%s", err.message);
	if (id[0])
		remove_after_failure(st, &api, id, &err, res);
	capture_free(&s.out);
	capture_free(&s.err);
out:
	json_decref(spec);
	free(input);
	http_close(&at);
	http_close(&api);
	/* After the container: its mount of the directory is gone with it. */
	if (egress_dir[0])
		boot_egress_remove(egress_dir);
	slot_release(&slot);
	return rc;
}

/* Reachable, which engine, and whether a run works with the image. */
static int docker_check(const struct aj_config *cfg, struct aj_error *err)
{
	char sock[108], version[128], image[256];
	int rc;
	if ((rc = docker_socket_path(cfg->docker_socket, sock, sizeof sock, err)) ||
	    (rc = docker_image_name(cfg, image, sizeof image, err)) ||
	    (rc = docker_version(sock, version, sizeof version, err)))
		return rc;
	struct aj_error why = {0};
	if ((rc = tier_trial_run(&docker_tier, cfg, &why)))
		return error_set(err, rc, "Docker %s at %s, but %s", version, sock, why.message);
	error_set(err, 0, "Docker %s at %s, image %s", version, sock, image);
	return 0;
}

/* The engine's image is one agentjail imported from an image root here
 * (agentjail/NAME, what --docker-image defaults to): that root is the
 * view. Another engine image's files are the engine's alone. */
static int docker_view_root(const struct aj_config *cfg, char *out, size_t n,
			    struct aj_error *err)
{
	char name[256];
	int rc = docker_image_name(cfg, name, sizeof name, err);
	if (rc)
		return rc;
	struct aj_config own_cfg = *cfg;
	own_cfg.docker_image = NULL;
	char own[256];
	if ((rc = docker_image_name(&own_cfg, own, sizeof own, err)))
		return rc;
	size_t ol = strlen(own);
	if (strncmp(name, own, ol) || (name[ol] && strcmp(name + ol, ":latest")))
		return error_set(err, -EOPNOTSUPP,
				 "docker: the engine image %s was not imported from an image "
				 "root here, so its files cannot be read (the docker tier reads "
				 "agentjail/NAME's from the image NAME; --image NAME picks it)",
				 name);
	return image_view_root(cfg, out, n, err);
}

const struct tier_ops docker_tier = {
	.name = "docker",
	.egress_refusal = NULL, /* carried: src/boot/egress.h */
	.check = docker_check,
	.open = docker_open,
	.run = docker_run,
	.close = docker_close,
	.session_open = docker_session_open,
	.session_call = docker_session_call,
	.session_oom_kills = docker_session_oom_kills,
	.session_nudge = docker_session_nudge,
	.session_close = docker_session_close,
	.session_freeze = docker_session_freeze,
	.view_root = docker_view_root,
};
