/* docker_image_import (see image.h): the root goes to the engine as a tar
 * stream from tar(1), sent chunked to POST /images/create?fromSrc=-. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../linux/report.h"
#include "api.h"
#include "image.h"

#define STAMP_LABEL "org.agentjail.image"

/* Importing a few hundred MiB can take a while on a busy disk. */
#define IMPORT_MS (15 * 60 * 1000)

static void url_encode(const char *s, char *out, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (; *s && o + 4 < n; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = 0;
}

/* The stamp of the engine's image, if it has one ("" if not). */
static int current_stamp(struct http_conn *c, const char *repo, char *out, size_t n,
			 struct aj_error *err)
{
	char path[400];
	snprintf(path, sizeof path, "/images/%s:latest/json", repo);
	json_t *j = NULL;
	int status;
	struct aj_error e = {0};
	out[0] = 0;
	int rc = docker_call(c, "GET", path, NULL, "inspect image", &status, &j, &e);
	if (rc)
		return status == 404 ? 0 : error_set(err, rc, "%s", e.message);
	const char *s = json_string_value(
		json_object_get(json_object_get(json_object_get(j, "Config"), "Labels"), STAMP_LABEL));
	snprintf(out, n, "%s", s ? s : "");
	json_decref(j);
	return 0;
}

/* The reply is a stream of JSON progress objects; a failure is one with
 * "error" in it. */
static int import_error(const char *body, struct aj_error *err)
{
	const char *p = strstr(body, "\"error\"");
	if (!p)
		return 0;
	char msg[300];
	snprintf(msg, sizeof msg, "%s", p);
	msg[strcspn(msg, "\n}")] = 0;
	return error_set(err, -EIO, "docker: import: %s", msg);
}

int docker_image_import(const char *socket_path, const char *root, const char *repo,
			const char *stamp, bool force, bool *imported, struct aj_error *err)
{
	*imported = false;
	struct http_conn c;
	int rc = http_connect(&c, socket_path, DOCKER_CALL_MS, err);
	if (rc)
		return rc;
	char have[128];
	if ((rc = current_stamp(&c, repo, have, sizeof have, err)) ||
	    (!force && have[0] && !strcmp(have, stamp))) {
		http_close(&c);
		return rc;
	}

	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		http_close(&c);
		return error_set(err, -errno, "docker: import: pipe: %s", errno_name(errno));
	}
	/* --numeric-owner: the image's uids as they are, not mapped through
	 * this host's /etc/passwd. */
	char *const argv[] = {"tar", "--numeric-owner", "-C", (char *)root, "-c", ".", NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	pid_t pid;
	extern char **environ;
	rc = posix_spawnp(&pid, "tar", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (rc) {
		close(pipefd[0]);
		http_close(&c);
		return error_set(err, -rc, "docker: import: cannot run tar: %s", errno_name(rc));
	}

	char label[300], query[600], path[1000];
	snprintf(label, sizeof label, "LABEL " STAMP_LABEL "=%s", stamp);
	url_encode(label, query, sizeof query);
	snprintf(path, sizeof path, "/images/create?fromSrc=-&repo=%s&tag=latest&changes=%s", repo,
		 query);
	struct http_reply r = {0};
	struct aj_error e = {0};
	rc = http_call_stream(&c, "POST", path, pipefd[0], "application/x-tar", IMPORT_MS, &r, &e);
	close(pipefd[0]);
	if (rc)
		kill(pid, SIGTERM); /* the daemon went away: stop tar too */
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	http_close(&c);
	if (rc) {
		http_reply_free(&r);
		return error_set(err, rc, "%s (import)", e.message);
	}
	if (r.status != 200)
		rc = error_set(err, -EIO, "docker: import: HTTP %d: %.200s", r.status, r.body);
	else if (!WIFEXITED(ws) || WEXITSTATUS(ws))
		rc = error_set(err, -EIO, "docker: import: tar -C %s failed (status 0x%x)", root, ws);
	else
		rc = import_error(r.body, err);
	http_reply_free(&r);
	*imported = rc == 0;
	return rc;
}
