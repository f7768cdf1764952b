/* aj_session_exec: a command in a session's sandbox. The command is one
 * more program of the session: the session's interpreter (src/core/repl.py,
 * op "exec") starts it as its own child, so it runs as the session's user,
 * in its namespaces, under its rlimits, cgroups, seccomp filter and egress
 * rules, on every tier that keeps a session, with nothing a tier must add.
 * Its stdout and stderr are the interpreter's own pipes: the tier captures,
 * caps and streams them as a cell's. This file checks what the caller asks
 * (the command, its directory, its environment, stdin, the deadline) and
 * words every refusal; repl.py's reply becomes the result by the status
 * rules (session_exec_reply). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../core/stream_tap.h"
#include "api.h"

/* Most argv entries: far more than any command line an agent writes, and
 * few enough that the request stays one small line. */
#define EXEC_MAX_ARGS 4096
/* The reply: an exit code or a signal and two counters. */
#define EXEC_REPLY_MAX (64u << 10)

/* The command as JSON: "shell" (a string for /bin/sh -c) or "argv". */
static int command_json(const struct aj_exec *x, json_t *req, struct aj_result *res)
{
	if (!x->command == !x->argv)
		return result_sandbox_error(res, "exec: give either a command (for /bin/sh -c) or an "
						 "argv, not %s",
					    x->command ? "both" : "neither"),
		       -EINVAL;
	if (x->command) {
		size_t n = strlen(x->command);
		if (!n || n > AJ_MAX_CODE_BYTES || !utf8_valid(x->command, n))
			return result_sandbox_error(res, "exec: the command is %s",
						    !n ? "empty"
						    : n > AJ_MAX_CODE_BYTES
							? "longer than the 4 MiB allowed"
							: "not valid UTF-8"),
			       -EINVAL;
		return json_object_set_new(req, "shell", json_string(x->command)) ? -ENOMEM : 0;
	}
	json_t *argv = json_array();
	size_t total = 0, i = 0;
	int rc = argv ? 0 : -ENOMEM;
	for (; !rc && x->argv[i]; i++) {
		size_t n = strlen(x->argv[i]);
		total += n;
		if (i >= EXEC_MAX_ARGS || total > AJ_MAX_CODE_BYTES)
			rc = -EINVAL, result_sandbox_error(res, "exec: argv is longer than %d entries or "
								"4 MiB",
							   EXEC_MAX_ARGS);
		else if (!utf8_valid(x->argv[i], n))
			rc = -EINVAL,
			result_sandbox_error(res, "exec: argv[%zu] is not valid UTF-8", i);
		else if (json_array_append_new(argv, json_string(x->argv[i])))
			rc = -ENOMEM;
	}
	if (!rc && (!i || !x->argv[0][0]))
		rc = -EINVAL, result_sandbox_error(res, "exec: argv has no program (argv[0] is %s)",
						   i ? "empty" : "missing");
	if (!rc && json_object_set(req, "argv", argv))
		rc = -ENOMEM;
	json_decref(argv);
	return rc;
}

/* The additions to the environment, by the rules the deployer's own
 * variables pass (env.c): a NAME=VALUE list as a JSON object. */
static int env_json(const struct aj_config *cfg, const struct aj_exec *x, json_t *req,
		    struct aj_result *res)
{
	struct aj_config check = *cfg;
	struct aj_error err = {0};
	check.env = x->env;
	check.env_count = x->env_count;
	int rc = env_check(&check, &err);
	if (rc)
		return result_sandbox_error(res, "exec: %s", err.message), rc;
	json_t *env = json_object();
	rc = env ? 0 : -ENOMEM;
	for (uint32_t i = 0; !rc && i < x->env_count; i++) {
		/* The name whole, however long (env_check bounds the bytes). */
		const char *eq = strchr(x->env[i], '=');
		size_t n = (size_t)(eq - x->env[i]);
		if (!exec_env_allowed(cfg, x->env[i], n))
			rc = -EPERM, result_sandbox_error(res, "exec: env: %.*s is not among the names "
								"the deployer lets a command set "
								"(exec_env_allow)",
							   (int)n, x->env[i]);
		else if (!utf8_valid(eq + 1, strlen(eq + 1)))
			rc = -EINVAL, result_sandbox_error(res, "exec: env: %.*s: the value is not "
								"valid UTF-8",
							   (int)n, x->env[i]);
		else if (json_object_setn_new(env, x->env[i], n, json_string(eq + 1)))
			rc = -ENOMEM;
	}
	if (!rc && json_object_set(req, "env", env))
		rc = -ENOMEM;
	json_decref(env);
	return rc;
}

int exec_request(const struct aj_config *cfg, const struct aj_exec *x, enum exec_kind kind,
		 json_t **out, double *timeout, struct aj_result *res)
{
	const bool background = kind == EXEC_SPAWN || kind == EXEC_PTY;
	struct aj_error err = {0};
	const char *cwd = "";
	int rc;
	*out = NULL;
	if (x->cwd && x->cwd[0] && (rc = session_workspace_path(x->cwd, true, &cwd, &err)))
		return result_sandbox_error(res, "exec: cwd: %s", err.message), rc;
	/* A command in the foreground has the call's wall clock at most; one in
	 * the background may run as long as the session lives (0: so long). */
	double most = background ? cfg->session.lifetime_sec : cfg->limits.wall_sec;
	*timeout = x->timeout_sec ? x->timeout_sec : background ? 0 : most;
	if (x->timeout_sec < 0 || (!background && !(*timeout > 0)) || *timeout > most)
		return result_sandbox_error(res, "exec: timeout: %g s is not within the session's "
						 "%s (0 < timeout <= %g s)",
					    x->timeout_sec,
					    background ? "lifetime" : "wall-clock limit", most),
		       -EINVAL;
	size_t cap = (size_t)cfg->session.transfer_mb << 20;
	if (x->stdin_len && !x->stdin_data)
		return result_sandbox_error(res, "exec: stdin: a length without its data"), -EINVAL;
	if (x->stdin_len > cap)
		return result_sandbox_error(res, "exec: stdin: %zu bytes is more than the session's "
						 "transfer limit of %u MiB",
					    x->stdin_len, cfg->session.transfer_mb),
		       -EFBIG;
	json_t *req = json_pack("{s:s, s:s, s:I, s:i, s:I}", "op",
				kind == EXEC_PTY ? "pty" : background ? "spawn" : "exec",
				"cwd", cwd, "timeout_ms", (json_int_t)(*timeout * 1000.0), "cpu",
				(int)cfg->limits.cpu_sec, "cap",
				(json_int_t)cfg->limits.output_kb * 1024);
	if (!req)
		return result_sandbox_error(res, "exec: out of memory"), -ENOMEM;
	if ((rc = command_json(x, req, res)) || (rc = env_json(cfg, x, req, res)))
		goto fail;
	/* In the background, stdin is always a pipe: the caller's first bytes
	 * go in once it runs, and it is closed then unless the caller keeps it
	 * open (aj_session_spawn). A check counts stdin's bytes, and encodes
	 * none. */
	if (kind == EXEC_SPAWN && json_object_set_new(req, "stdin", json_true()))
		rc = -ENOMEM;
	else if (x->stdin_data && kind == EXEC_RUN) {
		char *b64 = base64_encode(x->stdin_data, x->stdin_len, NULL);
		if (!b64 || json_object_set_new(req, "stdin", json_string(b64)))
			rc = -ENOMEM;
		free(b64);
	}
	if (rc)
		goto fail;
	*out = req;
	return 0;
fail:
	if (rc == -ENOMEM && !res->message)
		result_sandbox_error(res, "exec: out of memory");
	json_decref(req);
	return rc;
}

int aj_session_exec(struct aj_session *s, const struct aj_exec *x, struct aj_cancel *cancel,
		    const struct aj_stream *stream, struct aj_result *res)
{
	struct stream_tap *tap = NULL;
	json_t *req = NULL;
	double timeout = 0;
	int rc;

	result_init(res);
	if (!s || !x) {
		result_sandbox_error(res, "exec: no %s given", s ? "command" : "session");
		rc = -EINVAL;
	} else if (!(rc = exec_request(session_config(s), x, EXEC_RUN, &req, &timeout, res)) &&
		   !(rc = session_stream_start(stream, &tap, res))) {
		rc = session_call_streaming(s, req, EXEC_REPLY_MAX, timeout, cancel, tap,
					    session_exec_reply, res);
	}
	json_decref(req);
	stream_tap_finish(tap);
	result_ensure_streams(res);
	return rc;
}

static int check_as(const struct aj_config *cfg, const struct aj_exec *x, enum exec_kind kind,
		    struct aj_error *err)
{
	struct aj_result res;
	json_t *req = NULL;
	double timeout;
	result_init(&res);
	int rc = cfg && x ? exec_request(cfg, x, kind, &req, &timeout, &res) : -EINVAL;
	if (rc)
		error_set(err, rc, "%s", res.message ? res.message : "exec: no command given");
	json_decref(req);
	aj_result_free(&res);
	return rc;
}

int session_exec_check(const struct aj_config *cfg, const struct aj_exec *x,
		       struct aj_error *err)
{
	return check_as(cfg, x, EXEC_CHECK, err);
}

int session_spawn_check(const struct aj_config *cfg, const struct aj_exec *x,
			struct aj_error *err)
{
	/* spawn's request counts stdin's bytes, and encodes none. */
	return check_as(cfg, x, EXEC_SPAWN, err);
}
