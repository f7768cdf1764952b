/* serve's access log (access_log.h). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../core/internal.h"
#include "access_log.h"

static int log_fd = STDERR_FILENO; /* -1: off */
static bool log_owned;             /* a FILE this opened */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

int access_log_open(const char *spec, struct aj_error *err)
{
	if (!spec)
		return 0;
	if (!strcmp(spec, "off")) {
		log_fd = -1;
	} else if (!strcmp(spec, "-")) {
		log_fd = STDOUT_FILENO;
	} else {
		/* Appended, never truncated: a log rotated by renaming keeps
		 * going into the old file until serve is restarted. 0640: it
		 * names keys and runs, not for every local user. */
		int fd = open(spec, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0640);
		if (fd < 0)
			return error_set(err, -errno, "--access-log: %s: %s", spec, strerror(errno));
		log_fd = fd;
		log_owned = true;
	}
	return 0;
}

void access_log_close(void)
{
	if (log_owned)
		close(log_fd);
	log_owned = false;
	log_fd = -1;
}

/* The segment after prefix, up to the next '/', is an id. */
static const char *after_id(const char *p)
{
	const char *s = strchr(p, '/');
	return s ? s : p + strlen(p);
}

/* tail (what follows a session's id) as one of the shapes below, or NULL. */
static const char *session_shape(const char *rest)
{
	static const struct {
		const char *tail, *shape;
	} tails[] = {{"", "/v1/sessions/{id}"},
		     {"/runs", "/v1/sessions/{id}/runs"},
		     {"/exec", "/v1/sessions/{id}/exec"},
		     {"/egress", "/v1/sessions/{id}/egress"},
		     {"/files", "/v1/sessions/{id}/files"},
		     {"/processes", "/v1/sessions/{id}/processes"},
		     {"/pause", "/v1/sessions/{id}/pause"},
		     {"/resume", "/v1/sessions/{id}/resume"},
		     {"/fork", "/v1/sessions/{id}/fork"},
		     {"/checkpoint", "/v1/sessions/{id}/checkpoint"}};
	for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++)
		if (!strcmp(rest, tails[i].tail))
			return tails[i].shape;
	if (!strncmp(rest, "/files/", 7))
		return "/v1/sessions/{id}/files/{path}";
	if (strncmp(rest, "/processes/", 11) || !rest[11])
		return NULL;
	const char *sub = after_id(rest + 11);
	static const char *const procs[] = {"/events", "/stdin", "/signal", "/resize"};
	static const char *const shapes[] = {
		"/v1/sessions/{id}/processes/{pid}/events", "/v1/sessions/{id}/processes/{pid}/stdin",
		"/v1/sessions/{id}/processes/{pid}/signal", "/v1/sessions/{id}/processes/{pid}/resize"};
	if (!*sub)
		return "/v1/sessions/{id}/processes/{pid}";
	for (size_t i = 0; i < 4; i++)
		if (!strcmp(sub, procs[i]))
			return shapes[i];
	return NULL;
}

/* The E2B-compatible API's paths (e2b/e2b.h) as their shapes, or NULL. */
static const char *e2b_shape(const char *path)
{
	static const char *const fixed[] = {
		"/health", "/files", "/execute", "/contexts", "/sandboxes", "/v2/sandboxes",
		/* envd's Connect-RPC methods: a fixed set, so a name is never a
		 * client's text. */
		"/process.Process/Start", "/process.Process/Connect", "/process.Process/List",
		"/process.Process/SendInput", "/process.Process/StreamInput",
		"/process.Process/SendSignal", "/process.Process/CloseStdin",
		"/process.Process/Update", "/filesystem.Filesystem/Stat",
		"/filesystem.Filesystem/ListDir", "/filesystem.Filesystem/MakeDir",
		"/filesystem.Filesystem/Move", "/filesystem.Filesystem/Remove",
		"/filesystem.Filesystem/WatchDir"};
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		if (!strcmp(path, fixed[i]))
			return fixed[i];
	const char *p = !strncmp(path, "/v2", 3) ? path + 3 : path;
	if (!strncmp(p, "/sandboxes/", 11) && p[11]) {
		const char *rest = after_id(p + 11);
		static const char *const tails[] = {"", "/timeout", "/connect", "/refreshes",
						    "/pause", "/resume", "/fork", "/metrics",
						    "/snapshots"};
		static const char *const shapes[] = {
			"/sandboxes/{id}",       "/sandboxes/{id}/timeout", "/sandboxes/{id}/connect",
			"/sandboxes/{id}/refreshes", "/sandboxes/{id}/pause", "/sandboxes/{id}/resume",
			"/sandboxes/{id}/fork",  "/sandboxes/{id}/metrics", "/sandboxes/{id}/snapshots"};
		for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++)
			if (!strcmp(rest, tails[i]))
				return shapes[i];
	}
	if (!strcmp(path, "/snapshots"))
		return "/snapshots";
	if (!strncmp(path, "/templates/", 11) && path[11] && !*after_id(path + 11))
		return "/templates/{id}";
	if (!strncmp(path, "/contexts/", 10) && path[10])
		return !strcmp(after_id(path + 10), "/restart") ? "/contexts/{id}/restart"
								 : "/contexts/{id}";
	return NULL;
}

const char *access_log_route(const char *path)
{
	static const char *const fixed[] = {"/v1/health", "/v1/tiers", "/metrics", "/mcp",
					    "/v1/runs", "/v1/sessions", "/v1/checkpoints"};
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		if (!strcmp(path, fixed[i]))
			return fixed[i];
	const char *shape = NULL;
	if (!strncmp(path, "/v1/runs/", 9) && path[9]) {
		const char *rest = after_id(path + 9);
		if (!*rest)
			return "/v1/runs/{id}";
		if (!strcmp(rest, "/events"))
			return "/v1/runs/{id}/events";
	} else if (!strncmp(path, "/v1/checkpoints/", 16) && path[16]) {
		shape = *after_id(path + 16) ? NULL : "/v1/checkpoints/{id}";
	} else if (!strncmp(path, "/v1/sessions/", 13) && path[13]) {
		shape = session_shape(after_id(path + 13));
	} else {
		shape = e2b_shape(path);
	}
	/* A path no route takes is not written: it is the client's text. */
	return shape ? shape : "(unknown)";
}

/* Writes o as one line (o consumed). */
static void emit(json_t *o)
{
	if (!o)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_object_set_new(o, "ts", json_real((double)ts.tv_sec + ts.tv_nsec / 1e9));
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return;
	size_t n = strlen(s);
	s[n] = '\n';
	/* One write a line, under a lock: lines from the connections'
	 * threads never interleave, even in a pipe. */
	pthread_mutex_lock(&log_lock);
	if (log_fd >= 0) {
		const char *p = s;
		size_t left = n + 1;
		while (left) {
			ssize_t w = write(log_fd, p, left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break; /* a log that cannot be written loses the line, not a run */
			p += w;
			left -= (size_t)w;
		}
	}
	pthread_mutex_unlock(&log_lock);
	free(s);
}

static bool on(void)
{
	pthread_mutex_lock(&log_lock);
	bool o = log_fd >= 0;
	pthread_mutex_unlock(&log_lock);
	return o;
}

const char *access_log_method(const char *method)
{
	static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS",
					      "PATCH"};
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (!strcmp(method, methods[i]))
			return methods[i];
	return "(other)"; /* the client's text is not written */
}

void access_log_request(const char *key, const char *method, const char *route, int status,
			double ms, const char *run_id, enum aj_tier tier, const char *verdict)
{
	if (!on())
		return;
	json_t *o = json_pack("{s:s, s:o, s:s, s:s, s:i, s:f}", "event", "request", "key",
			      key ? json_string(key) : json_null(), "method", method, "route",
			      route, "status", status, "ms", ms);
	if (o && run_id && *run_id) {
		json_object_set_new(o, "run_id", json_string(run_id));
		json_object_set_new(o, "tier", json_string(aj_tier_name(tier)));
		if (verdict && *verdict)
			json_object_set_new(o, "verdict", json_string(verdict));
	}
	emit(o);
}

void access_log_run(const char *key, const char *route, const char *run_id, enum aj_tier tier,
		    double ms, const char *verdict)
{
	if (!on())
		return;
	emit(json_pack("{s:s, s:o, s:s, s:s, s:s, s:f, s:s}", "event", "run", "key",
		       key ? json_string(key) : json_null(), "route", route, "run_id",
		       run_id ? run_id : "", "tier", aj_tier_name(tier), "ms", ms, "verdict",
		       verdict ? verdict : ""));
}
