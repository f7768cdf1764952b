/* Sessions on the docker tier: one container for the session's life, made
 * with the hardened spec of a run (spec.c: no network, read-only image, no
 * capabilities, our seccomp filter, memory, pids and CPU limits,
 * size-limited tmpfs, the owner label), with boot.py (PID 1) in its session
 * mode. The calls themselves are src/boot/session.c's, over the container's
 * attach stream (stdout and stderr multiplexed in Docker's frames); this
 * file makes the container, tells boot.c how to remove it and how to ask
 * the engine about the OOM killer.
 *
 * Nothing outlives the session: closing it removes the container (force).
 * Should the host process die, Docker closes the container's stdin
 * (StdinOnce) and boot ends the container; a boot that hangs still stops
 * at the session's lifetime plus a margin (its own timer); and the next
 * process to open the docker tier removes containers whose owner is gone
 * (owner.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../boot/egress.h"
#include "../boot/session.h"
#include "container.h"
#include "owner.h"
#include "session.h"
#include "spec.h"
#include "stream.h"

/* boot.py's own backstop: this long past the session's lifetime (which the
 * core enforces) the container ends even if the host never closes it. */
#define BACKSTOP_MARGIN_SEC 60.0

struct docker_session {
	struct boot_session bs;     /* first: boot.c's hooks get it back */
	struct docker_demux demux;  /* the attach stream's frames */
	char socket[108];
	char id[80];
	struct uid_slot slot;
	struct http_conn at;        /* the attach stream, open for the session's life */
	double opened_unix;         /* the engine's clock, for its OOM events */
	double opened_ms;
	char egress_dir[PATH_MAX];  /* the proxy's socket's; "": no egress */
	bool frozen;                /* paused by the engine (docker_session_freeze) */
};

/* Removes the container on a connection of its own (the attach stream is
 * closed first: Docker finishes a container's end only once its output is
 * copied out, and nobody reads it any more). */
static int remove_now(struct docker_session *ds, struct aj_error *err)
{
	if (!ds->id[0]) {
		http_close(&ds->at);
		return 0;
	}
	/* The stream closed first: the engine finishes a container's exit
	 * only once its output is copied out, and nobody reads it any more.
	 * Then killed and waited for before it is removed: a removal racing
	 * the engine's own handling of the exit can leave it stuck in
	 * "Removal In Progress" (unlinkat: directory not empty), seen here. */
	http_close(&ds->at);
	struct http_conn api;
	int rc = http_connect(&api, ds->socket, DOCKER_CALL_MS, err);
	if (!rc) {
		struct aj_error e2 = {0};
		/* A paused container is unpaused first: its processes are
		 * frozen and would not take the kill. */
		if (ds->frozen && !docker_pause(&api, ds->id, false, &e2))
			ds->frozen = false;
		if (!docker_kill(&api, ds->id, &e2))
			docker_wait_stopped(&api, ds->id, &e2);
		rc = docker_remove(&api, ds->id, err);
	}
	http_close(&api);
	if (!rc)
		ds->id[0] = '\0';
	return rc;
}

static void destroy(struct boot_session *bs)
{
	struct aj_error e = {0};
	remove_now((struct docker_session *)bs, &e);
}

/* The engine logs an "oom" event a little after the kill: a SIGKILL that
 * none of ours sent is asked about a few times (this path only). */
static bool oom_since(struct boot_session *bs, double since)
{
	struct docker_session *ds = (struct docker_session *)bs;
	double since_unix = ds->opened_unix + (since - ds->opened_ms) / 1000.0;
	struct http_conn api;
	struct aj_error e = {0};
	bool oom = false;
	for (int i = 0; i < 20 && !oom; i++) {
		if (i)
			usleep(100 * 1000);
		if (http_connect(&api, ds->socket, DOCKER_CALL_MS, &e) == 0) {
			docker_saw_oom(&api, ds->id, since_unix - 1.0, &oom, &e);
			http_close(&api);
		}
	}
	return oom;
}

/* The attach stream multiplexes boot's stdout and stderr in Docker's frames. */
static void attach_demux(struct boot_session *bs, const char *p, size_t n)
{
	struct docker_session *ds = (struct docker_session *)bs;
	docker_demux_feed(&ds->demux, p, n, &bs->raw, &bs->boot_err);
}

static void session_free(struct docker_session *ds)
{
	struct aj_error e = {0};
	remove_now(ds, &e);
	/* After the container: its mount of the directory is gone with it. */
	if (ds->egress_dir[0])
		boot_egress_remove(ds->egress_dir);
	boot_session_free(&ds->bs);
	slot_release(&ds->slot);
	free(ds);
}

int docker_session_open(void *state, const struct aj_config *cfg, struct egress_proxy *egress,
			void **out, struct aj_error *err)
{
	const struct docker_state *st = state;
	struct docker_session *ds = calloc(1, sizeof *ds);
	if (!ds)
		return error_set(err, -ENOMEM, "docker: session: out of memory");
	ds->slot.lock_fd = -1;
	ds->at.fd = -1;
	snprintf(ds->socket, sizeof ds->socket, "%s", st->socket);
	boot_session_init(&ds->bs);
	ds->bs.tier = "docker";
	ds->bs.demux = attach_demux;
	ds->bs.err_fd = -1;
	ds->bs.destroy = destroy;
	ds->bs.oom_since = oom_since;
	ds->opened_unix = docker_unix_time();
	ds->opened_ms = now_ms();

	/* The spec of a run, with the session's total CPU as the container's
	 * RLIMIT_CPU (soft; hard a second later): the interpreter's hard
	 * limit, under which repl.py sets each call's soft one. */
	struct aj_config scfg = *cfg;
	scfg.limits.cpu_sec = cfg->session.cpu_sec;
	char owner[160];
	docker_owner_self(owner, sizeof owner);
	struct http_conn api = {.fd = -1};
	json_t *spec = NULL;
	int rc;
	if ((rc = docker_slot_acquire(cfg, &ds->slot, err)) ||
	    (rc = http_connect(&api, st->socket, DOCKER_CALL_MS, err)))
		goto fail;
	/* The session's proxy listens before the container exists. */
	if (egress && (rc = docker_egress_open(st, egress, ds->slot.uid, ds->slot.gid,
					       ds->egress_dir, err)))
		goto fail;
	if (!(spec = docker_container_spec(&scfg, st->image, ds->slot.uid, ds->slot.gid, owner,
					   egress ? ds->egress_dir : NULL))) {
		rc = error_set(err, -ENOMEM, "docker: session: out of memory");
		goto fail;
	}
	if ((rc = docker_create(&api, spec, ds->id, sizeof ds->id, err)) ||
	    (rc = docker_attach(st->socket, ds->id, &ds->at, err)))
		goto fail;
	ds->bs.fd = ds->at.fd;
	/* Stream bytes that came with the 101 reply. */
	if (ds->at.len > ds->at.pos)
		boot_session_feed(&ds->bs, ds->at.buf + ds->at.pos, ds->at.len - ds->at.pos);
	if ((rc = docker_start(&api, ds->id, err)) ||
	    (rc = boot_session_start(&ds->bs, cfg->session.lifetime_sec + BACKSTOP_MARGIN_SEC,
				     egress ? BOOT_EGRESS_SOCKET : NULL, err)))
		goto fail;
	json_decref(spec);
	http_close(&api);
	*out = ds;
	return 0;
fail:
	json_decref(spec);
	http_close(&api);
	if (ds->id[0]) {
		struct aj_error e2 = {0};
		if (remove_now(ds, &e2))
			error_set(err, err->code, "%s; and the container %.12s could not be removed: %s",
				  err->message, ds->id, e2.message);
	}
	session_free(ds);
	return rc;
}

void docker_session_close(void *session)
{
	if (session)
		session_free(session);
}

int docker_session_freeze(void *session, bool frozen, struct aj_error *err)
{
	struct docker_session *ds = session;
	struct http_conn api;
	int rc = http_connect(&api, ds->socket, DOCKER_CALL_MS, err);
	if (!rc && !(rc = docker_pause(&api, ds->id, frozen, err)))
		ds->frozen = frozen;
	http_close(&api);
	return rc;
}

void docker_session_nudge(void *session)
{
	boot_session_nudge(&((struct docker_session *)session)->bs);
}

uint64_t docker_session_oom_kills(void *session, double since_ms)
{
	/* The engine's "oom" events since the command began (a flag: one
	 * process at least). */
	return oom_since(&((struct docker_session *)session)->bs, since_ms) ? 1 : 0;
}

int docker_session_call(void *session, const struct aj_config *cfg,
			const struct session_call *call, struct aj_result *res,
			struct session_answer *ans)
{
	struct docker_session *ds = session;
	return boot_session_call(&ds->bs, cfg, call, res, ans);
}
