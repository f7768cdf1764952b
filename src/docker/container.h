/* One container's life through the Engine API, as a run and a session both
 * use it: its uid slot, create, attach, start, kill, remove, and whether the
 * OOM killer was at work in it. */
#ifndef AJ_DOCKER_CONTAINER_H
#define AJ_DOCKER_CONTAINER_H

#include <stdbool.h>

#include "../linux/creds.h"
#include "api.h"

#include <limits.h>

struct egress_proxy;

/* The tier's state from open: where the engine is and which image. */
struct docker_state {
	char socket[108];
	char image[256];
	/* STATE_DIR-docker: each egress run's socket directory (run-PID-...),
	 * swept at open when its maker died. */
	char run_base[PATH_MAX];
};

/* The run's egress (src/boot/egress.h): a directory of its own under
 * st->run_base (made, with run_base, if need be) holding the socket p
 * listens on, owned by uid:gid. dir (PATH_MAX bytes) receives its path;
 * the caller removes it (boot_egress_remove) once the container is gone. */
int docker_egress_open(const struct docker_state *st, struct egress_proxy *p, uid_t uid,
		       gid_t gid, char *dir, struct aj_error *err);

/* A uid slot for the container: root's lock directory, or for a member of
 * the docker group one of its own (its slots then guard only its own
 * containers). */
int docker_slot_acquire(const struct aj_config *cfg, struct uid_slot *slot,
			struct aj_error *err);

/* POST /containers/create; id (at least 80 bytes) receives its id. */
int docker_create(struct http_conn *api, json_t *spec, char *id, size_t n,
		  struct aj_error *err);

/* Connects at and upgrades it to the container's attach stream (stdin,
 * stdout, stderr). Before start, so no byte is missed. */
int docker_attach(const char *socket, const char *id, struct http_conn *at,
		  struct aj_error *err);

int docker_start(struct http_conn *api, const char *id, struct aj_error *err);

/* SIGKILL to PID 1; a container already stopped is no error. */
int docker_kill(struct http_conn *api, const char *id, struct aj_error *err);
/* The engine's pause (its cgroup freezer: every process stopped, memory
 * kept) or unpause of the container; it answers once done. */
int docker_pause(struct http_conn *api, const char *id, bool paused, struct aj_error *err);

/* Returns once the container has stopped (gone already: no error). */
int docker_wait_stopped(struct http_conn *api, const char *id, struct aj_error *err);

/* Removes the container, whatever state it is in (gone already: no error). */
int docker_remove(struct http_conn *api, const char *id, struct aj_error *err);

/* Whether the engine logged an "oom" event for the container since
 * `since` (a unix time). */
int docker_saw_oom(struct http_conn *api, const char *id, double since, bool *oom,
		   struct aj_error *err);

/* Now, as the engine's event times count it. */
double docker_unix_time(void);

#endif
