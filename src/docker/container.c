/* One container's life through the Engine API (see container.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../boot/egress.h"
#include "../egress/proxy.h"
#include "container.h"

int docker_slot_acquire(const struct aj_config *cfg, struct uid_slot *slot,
			struct aj_error *err)
{
	struct aj_config slot_cfg = *cfg;
	char own_dir[PATH_MAX];
	if (!cfg->state_dir && geteuid() != 0) {
		const char *xdg = getenv("XDG_RUNTIME_DIR");
		if (xdg && xdg[0] == '/')
			snprintf(own_dir, sizeof own_dir, "%s/agentjail", xdg);
		else
			snprintf(own_dir, sizeof own_dir, "/tmp/agentjail-%u", (unsigned)geteuid());
		slot_cfg.state_dir = own_dir;
	}
	return slot_acquire(&slot_cfg, slot, err);
}

int docker_egress_open(const struct docker_state *st, struct egress_proxy *p, uid_t uid,
		       gid_t gid, char *dir, struct aj_error *err)
{
	dir[0] = 0;
	if (mkdir(st->run_base, 0700) < 0 && errno != EEXIST)
		return error_set(err, -errno, "egress: mkdir %s: %s", st->run_base,
				 errno_name(errno));
	/* run-PID-: the sweep (src/boot/rundir.c) knows whose it is. */
	char made[PATH_MAX];
	snprintf(made, sizeof made, "%.3000s/run-%d-XXXXXX", st->run_base, (int)getpid());
	if (!mkdtemp(made))
		return error_set(err, -errno, "egress: mkdtemp %s: %s", made, errno_name(errno));
	int fd = boot_egress_socket(made, uid, gid, err);
	int rc = fd < 0 ? fd : egress_proxy_add_listener(p, fd); /* owns fd */
	if (rc) {
		if (fd >= 0)
			error_set(err, rc, "egress: the proxy would not take its socket: %s",
				  errno_name(-rc));
		boot_egress_remove(made);
		return rc;
	}
	memcpy(dir, made, sizeof made);
	return 0;
}

int docker_create(struct http_conn *api, json_t *spec, char *id, size_t n, struct aj_error *err)
{
	json_t *reply = NULL;
	int rc = docker_call(api, "POST", "/containers/create", spec, "create", NULL, &reply, err);
	if (rc)
		return rc;
	const char *cid = json_string_value(json_object_get(reply, "Id"));
	/* The id goes into request paths: hex digits only. */
	if (!cid || strlen(cid) >= n || strspn(cid, "0123456789abcdef") != strlen(cid))
		rc = error_set(err, -EPROTO, "docker: create: no container id in the reply");
	else
		snprintf(id, n, "%s", cid);
	json_decref(reply);
	return rc;
}

int docker_attach(const char *socket, const char *id, struct http_conn *at,
		  struct aj_error *err)
{
	char path[160];
	snprintf(path, sizeof path, "/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1",
		 id);
	int rc = http_connect(at, socket, DOCKER_CALL_MS, err);
	return rc ? rc : http_upgrade(at, path, DOCKER_CALL_MS, err);
}

/* A call on one container (/containers/ID then suffix) whose reply the host
 * does not read: docker_call's answer, but 0 on the HTTP status done (0:
 * none), which says the state asked for was there already. */
static int container_call(struct http_conn *api, const char *method, const char *id,
			  const char *suffix, const char *what, int done, struct aj_error *err)
{
	char path[128];
	snprintf(path, sizeof path, "/containers/%s%s", id, suffix);
	int status;
	int rc = docker_call(api, method, path, NULL, what, &status, NULL, err);
	return rc && done && status == done ? 0 : rc;
}

int docker_start(struct http_conn *api, const char *id, struct aj_error *err)
{
	return container_call(api, "POST", id, "/start", "start", 0, err);
}

int docker_kill(struct http_conn *api, const char *id, struct aj_error *err)
{
	/* 409: it had already stopped by itself. */
	return container_call(api, "POST", id, "/kill?signal=SIGKILL", "kill", 409, err);
}

int docker_pause(struct http_conn *api, const char *id, bool paused, struct aj_error *err)
{
	return container_call(api, "POST", id, paused ? "/pause" : "/unpause",
			      paused ? "pause" : "unpause", 0, err);
}

int docker_wait_stopped(struct http_conn *api, const char *id, struct aj_error *err)
{
	/* 404: it is gone already. */
	return container_call(api, "POST", id, "/wait", "wait", 404, err);
}

int docker_remove(struct http_conn *api, const char *id, struct aj_error *err)
{
	return container_call(api, "DELETE", id, "?force=1&v=1", "remove", 404, err);
}

double docker_unix_time(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Needed beside inspect's OOMKilled, which Docker sets only when the OOM
 * killer took PID 1, not the program (boot.py's child). The query ends at
 * `until`, now: a past window, answered at once. */
int docker_saw_oom(struct http_conn *api, const char *id, double since, bool *oom,
		   struct aj_error *err)
{
	char path[400];
	snprintf(path, sizeof path,
		 "/events?since=%.3f&until=%.3f&filters=%%7B%%22container%%22%%3A%%5B%%22%s%%22%%5D"
		 "%%2C%%22event%%22%%3A%%5B%%22oom%%22%%5D%%7D",
		 since, docker_unix_time(), id);
	struct http_reply r;
	struct aj_error e = {0};
	int rc = http_call(api, "GET", path, NULL, 0, DOCKER_CALL_MS, &r, &e);
	if (rc)
		return error_set(err, rc, "%s (events)", e.message);
	if (r.status != 200)
		rc = error_set(err, -EPROTO, "docker: events: HTTP %d: %.200s", r.status, r.body);
	else
		*oom = strstr(r.body, "\"oom\"") != NULL;
	http_reply_free(&r);
	return rc;
}
