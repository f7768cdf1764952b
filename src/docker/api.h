/* The Docker Engine API, in JSON: where the engine is, and calls whose
 * errors carry the daemon's own message. Paths are unversioned, so the
 * daemon serves them at its own API version; every field used here has
 * been stable since API 1.41 (Docker 20.10). */
#ifndef AJ_DOCKER_API_H
#define AJ_DOCKER_API_H

#include <jansson.h>

#include "http.h"

#define DOCKER_DEFAULT_SOCKET "/var/run/docker.sock"

/* Time allowed for one API call. Creating and starting a container on a
 * loaded machine take seconds; more than this is a daemon in trouble. */
#define DOCKER_CALL_MS 60000

/* The socket to use: the configured path, else $DOCKER_HOST (unix://PATH;
 * any other scheme is refused, naming it), else the default. */
int docker_socket_path(const char *configured, char *out, size_t n, struct aj_error *err);

/* One call. body (may be NULL) is serialised; *reply (may be NULL to
 * ignore it) receives the parsed JSON reply, or NULL when it had none. A
 * status outside 2xx is an error whose message is "docker: WHAT: HTTP
 * STATUS: the daemon's message"; *status still tells which. */
int docker_call(struct http_conn *c, const char *method, const char *path, json_t *body,
		const char *what, int *status, json_t **reply, struct aj_error *err);

/* The engine's version and API version ("20.10.24 (API 1.41)"). */
int docker_version(const char *socket_path, char *out, size_t n, struct aj_error *err);

#endif
