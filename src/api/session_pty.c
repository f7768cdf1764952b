/* A terminal in a session (aj_session_pty, aj_session_pty_resize): a
 * background command whose stdin, stdout, stderr and controlling terminal
 * are a pseudo-terminal's slave. The session's interpreter opens the pty
 * (repl.py op "pty") in the sandbox's own devpts instance and starts the
 * command on it as it starts any command, so the same sandbox holds it on
 * every tier that gives a session a devpts of its own; what it shows is
 * read, and what is typed written, by the calls background commands use
 * (session_proc.c). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "../core/internal.h"
#include "api.h"

static int size_check(const char *what, uint16_t cols, uint16_t rows, struct aj_error *err)
{
	if (!cols || !rows || cols > AJ_PTY_SIDE_MAX || rows > AJ_PTY_SIDE_MAX)
		return error_set(err, -EINVAL, "%s: a terminal of %u columns and %u rows: each must "
					       "be 1 to %d",
				 what, cols, rows, AJ_PTY_SIDE_MAX);
	return 0;
}

/* Whether the session's tier gives it a terminal; -EOPNOTSUPP with why. */
static int tier_has_pty(const struct aj_config *cfg, struct aj_error *err)
{
	/* Docker mounts a devpts instance with no max= of the container's own,
	 * so its ptys come from the host's shared pool (kernel.pty.max): the
	 * docker tier masks /dev/ptmx, and a session there has no terminal
	 * rather than an unbounded one. The other tiers mount one of at most
	 * 16 ptys (src/linux/mounts.c, the microVM guest's boot) or keep
	 * gVisor's own. */
	if (cfg->tier == AJ_TIER_DOCKER)
		return error_set(err, -EOPNOTSUPP, "pty: the docker tier offers no terminal: Docker "
						   "mounts devpts without a bound of the container's "
						   "own, so the tier masks /dev/ptmx (the container, "
						   "gvisor, microvm and process tiers offer one)");
	return 0;
}

int aj_session_pty(struct aj_session *s, const struct aj_exec *x, uint16_t cols, uint16_t rows,
		   uint32_t *pid, struct aj_error *err)
{
	static const char *const shell[] = {"/bin/bash", NULL};
	const struct aj_config *cfg = session_config(s);
	const struct aj_exec dflt = {.argv = shell};
	struct aj_result res;
	json_t *req = NULL;
	double timeout;
	int rc;
	if (!cfg || !pid)
		return error_set(err, -EINVAL, "pty: no %s given", !cfg ? "session" : "pid");
	if ((rc = size_check("pty", cols, rows, err)) || (rc = tier_has_pty(cfg, err)))
		return rc;
	if (!x)
		x = &dflt;
	result_init(&res);
	if ((rc = exec_request(cfg, x, EXEC_PTY, &req, &timeout, &res))) {
		error_set(err, rc, "%s", res.message ? res.message : "pty: refused");
		aj_result_free(&res);
		return rc;
	}
	aj_result_free(&res);
	if (json_object_set_new(req, "cols", json_integer(cols)) ||
	    json_object_set_new(req, "rows", json_integer(rows))) {
		json_decref(req);
		return error_set(err, -ENOMEM, "pty: out of memory");
	}
	if ((rc = session_proc_start(s, "pty", req, pid, err)))
		return rc;
	if (x->stdin_len)
		rc = aj_session_proc_input(s, *pid, x->stdin_data, x->stdin_len, false, err);
	return rc;
}

int aj_session_pty_resize(struct aj_session *s, uint32_t pid, uint16_t cols, uint16_t rows,
			  struct aj_error *err)
{
	int rc = size_check("resize", cols, rows, err);
	if (rc)
		return rc;
	json_t *req = json_pack("{s:s, s:I, s:i, s:i}", "op", "proc_resize", "pid",
				(json_int_t)pid, "cols", (int)cols, "rows", (int)rows);
	if (!req)
		return error_set(err, -ENOMEM, "resize: out of memory");
	json_t *reply = NULL;
	rc = session_request(s, "resize", req, 4096, &reply, err);
	json_decref(req);
	json_decref(reply);
	return rc;
}
