/* Background commands of a session (aj_session_spawn and the calls by
 * pid). The session's interpreter starts each (repl.py op "spawn") as it
 * starts a foreground one, so the same sandbox holds it on every tier, and
 * keeps its output, capped, for the reads here: a wait is a series of short
 * reads (PROC_POLL_MS each, the session's lock released between them, so a
 * cell or a file call goes on meanwhile), each streaming what came since
 * the last; its end becomes the result by the status rules. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../core/internal.h"
#include "../core/status.h"
#include "../core/stream_tap.h"
#include "api.h"

/* How long one read waits inside the sandbox for output or the end:
 * short, because the session's other calls wait for it. */
#define PROC_POLL_MS 200
/* The most bytes of each stream one read carries. */
#define PROC_READ_MAX (256u << 10)
#define PROC_REPLY_MAX (PROC_READ_MAX / 3 * 8 + 8192)
#define PROCS_REPLY_MAX (8u << 20)

int aj_session_spawn(struct aj_session *s, const struct aj_exec *x, bool stdin_open,
		     uint32_t *pid, struct aj_error *err)
{
	struct aj_result res;
	json_t *req = NULL;
	double timeout;
	result_init(&res);
	if (!s || !x || !pid)
		return error_set(err, -EINVAL, "spawn: no %s given", !s ? "session" : !x ? "command"
										       : "pid");
	int rc = exec_request(session_config(s), x, EXEC_SPAWN, &req, &timeout, &res);
	if (rc) {
		error_set(err, rc, "%s", res.message ? res.message : "spawn: refused");
		aj_result_free(&res);
		return rc;
	}
	if ((rc = session_proc_start(s, "spawn", req, pid, err)))
		return rc;
	/* Its first input, then its stdin closed unless the caller keeps it. */
	if (x->stdin_len || !stdin_open)
		rc = aj_session_proc_input(s, *pid, x->stdin_data, x->stdin_len, !stdin_open, err);
	return rc;
}

int session_proc_start(struct aj_session *s, const char *what, json_t *req, uint32_t *pid,
		       struct aj_error *err)
{
	json_t *reply = NULL;
	int rc = session_request(s, what, req, 4096, &reply, err);
	json_decref(req);
	json_int_t got = json_integer_value(json_object_get(reply, "pid"));
	json_decref(reply);
	if (!rc && (got <= 1 || got > INT32_MAX))
		rc = error_set(err, -EPROTO, "%s: the interpreter's reply holds no pid", what);
	if (!rc)
		*pid = (uint32_t)got;
	return rc;
}

/* One request about pid, with the reply's data (NULL when none wanted). */
static int proc_request(struct aj_session *s, const char *what, json_t *req, size_t reply_max,
			json_t **reply, struct aj_error *err)
{
	json_t *r = NULL;
	if (!req)
		return error_set(err, -ENOMEM, "%s: out of memory", what);
	int rc = session_request(s, what, req, reply_max, &r, err);
	json_decref(req);
	if (reply)
		*reply = r;
	else
		json_decref(r);
	return rc;
}

int aj_session_proc_input(struct aj_session *s, uint32_t pid, const void *data, size_t len,
			  bool close, struct aj_error *err)
{
	const struct aj_config *cfg = session_config(s);
	if (!cfg)
		return error_set(err, -EINVAL, "input: no session given");
	if (len && !data)
		return error_set(err, -EINVAL, "input: a length without its data");
	if (len > (size_t)cfg->session.transfer_mb << 20)
		return error_set(err, -EFBIG, "input: %zu bytes is more than the session's transfer "
					      "limit of %u MiB",
				 len, cfg->session.transfer_mb);
	char *b64 = base64_encode(data ? data : "", len, NULL);
	json_t *req = b64 ? json_pack("{s:s, s:I, s:s, s:b}", "op", "proc_input", "pid",
				      (json_int_t)pid, "data", b64, "close", close)
			  : NULL;
	free(b64);
	return proc_request(s, "input", req, 4096, NULL, err);
}

int aj_session_proc_signal(struct aj_session *s, uint32_t pid, int signal, struct aj_error *err)
{
	if (signal < 1 || signal > 64)
		return error_set(err, -EINVAL, "signal: %d is not a signal (1 to 64)", signal);
	return proc_request(s, "signal",
			    json_pack("{s:s, s:I, s:i}", "op", "proc_signal", "pid", (json_int_t)pid,
				      "signal", signal),
			    4096, NULL, err);
}

int aj_session_procs(struct aj_session *s, struct aj_proc_info **procs, size_t *count,
		     struct aj_error *err)
{
	json_t *reply = NULL;
	*procs = NULL;
	*count = 0;
	int rc = proc_request(s, "procs", json_pack("{s:s}", "op", "procs"), PROCS_REPLY_MAX,
			      &reply, err);
	json_t *arr = json_object_get(reply, "procs");
	size_t i, n = 0;
	json_t *e;
	if (!rc && !json_is_array(arr))
		rc = error_set(err, -EPROTO, "procs: the interpreter's reply holds no list");
	struct aj_proc_info *v = rc || !json_array_size(arr) ? NULL
				 : calloc(json_array_size(arr), sizeof *v);
	json_array_foreach(v ? arr : NULL, i, e) {
		json_int_t pid = json_integer_value(json_object_get(e, "pid"));
		const char *command = json_string_value(json_object_get(e, "command"));
		if (pid <= 1 || pid > INT32_MAX || !command || !(v[n].command = strdup(command)))
			continue; /* not what repl.py lists: the session's own doing */
		v[n].pid = (uint32_t)pid;
		v[n].running = json_is_true(json_object_get(e, "running"));
		n++;
	}
	json_decref(reply);
	*procs = v;
	*count = n;
	return rc;
}

void aj_proc_list_free(struct aj_proc_info *procs, size_t count)
{
	for (size_t i = 0; procs && i < count; i++)
		free(procs[i].command);
	free(procs);
}

/* One stream's part of a read: its bytes decoded (*buf, NULL when none),
 * checked against the offset it was asked from. A terminal's output is a
 * window: a read from before it answers where its data starts (from_key,
 * past *offset, which moves there: what lay between is gone). -EPROTO for
 * a reply that is not repl.py's. */
static int take_part(json_t *reply, const char *key, const char *end_key, const char *from_key,
		     uint64_t *offset, unsigned char **buf, size_t *n)
{
	json_t *d = json_object_get(reply, key);
	json_int_t end = json_integer_value(json_object_get(reply, end_key));
	json_t *from = json_object_get(reply, from_key);
	*buf = NULL;
	*n = 0;
	if (from) {
		json_int_t f = json_integer_value(from);
		if (!json_is_integer(from) || f < 0 || (uint64_t)f < *offset)
			return -EPROTO;
		*offset = (uint64_t)f;
	}
	if (!json_is_string(d) || base64_decode(json_string_value(d), json_string_length(d), buf, n))
		return -EPROTO;
	if ((uint64_t)end != *offset + *n || *n > PROC_READ_MAX) {
		free(*buf);
		*buf = NULL;
		return -EPROTO;
	}
	return 0;
}

/* One read of pid's output from off (stdout, stderr) on, waiting up to
 * wait_ms for some: 0 with *reply and each stream's new bytes in part
 * (malloc'ed), off moved to where each part starts, or -errno with err
 * saying why. */
static int read_once(struct aj_session *s, const char *what, uint32_t pid, uint64_t off[2],
		     int wait_ms, json_t **reply, unsigned char *part[2], size_t len[2],
		     struct aj_error *err)
{
	*reply = NULL;
	part[0] = part[1] = NULL;
	session_readers(s, 1);
	json_t *req = json_pack("{s:s, s:I, s:I, s:I, s:i, s:I, s:b}", "op", "proc_read", "pid",
				(json_int_t)pid, "out", (json_int_t)off[0], "err", (json_int_t)off[1],
				"wait_ms", session_poll_ms(s, wait_ms), "max",
				(json_int_t)PROC_READ_MAX, "nudge", session_nudges(s));
	int rc = req ? session_poll_request(s, what, req, PROC_REPLY_MAX, reply, err)
		     : error_set(err, -ENOMEM, "%s: out of memory", what);
	session_readers(s, -1);
	json_decref(req);
	if (!rc && (take_part(*reply, "out", "out_end", "out_from", &off[0], &part[0], &len[0]) ||
		    take_part(*reply, "err", "err_end", "err_from", &off[1], &part[1], &len[1]))) {
		free(part[0]);
		part[0] = NULL;
		rc = error_set(err, -EPROTO, "%s: the interpreter's reply is not a read", what);
	}
	if (rc) {
		json_decref(*reply);
		*reply = NULL;
	}
	return rc;
}

int aj_session_proc_read(struct aj_session *s, uint32_t pid, uint64_t out_offset,
			 uint64_t err_offset, int wait_ms, struct aj_proc_output *got,
			 struct aj_error *err)
{
	uint64_t off[2] = {out_offset, err_offset};
	unsigned char *part[2];
	size_t len[2] = {0, 0};
	json_t *reply;
	if (!got)
		return error_set(err, -EINVAL, "read: nowhere to put the output");
	*got = (struct aj_proc_output){0};
	if (!session_config(s))
		return error_set(err, -EINVAL, "read: no session given");
	if (wait_ms < 0 || wait_ms > PROC_POLL_MS)
		return error_set(err, -EINVAL, "read: wait_ms %d is not within 0 to %d", wait_ms,
				 PROC_POLL_MS);
	if (out_offset > INT64_MAX || err_offset > INT64_MAX)
		return error_set(err, -EINVAL, "read: an offset past what any command prints");
	int rc = read_once(s, "read", pid, off, wait_ms, &reply, part, len, err);
	if (rc)
		return rc;
	*got = (struct aj_proc_output){(char *)part[0], (char *)part[1], len[0], len[1],
				       json_is_true(json_object_get(reply, "ended")), off[0]};
	json_decref(reply);
	return 0;
}

void aj_proc_output_free(struct aj_proc_output *got)
{
	if (!got)
		return;
	free(got->out);
	free(got->err);
	*got = (struct aj_proc_output){0};
}

/* What a read brought of one stream, appended to its capture and pushed
 * to the stream. */
static void keep_part(unsigned char *buf, size_t n, uint64_t *offset, struct capture *c, int which,
		      struct stream_tap *tap)
{
	*offset += n;
	/* The last bytes are kept: a terminal's output is a window in the
	 * sandbox too, and a wait that starts (or falls) behind it must end
	 * with the screen's last lines, not its first. A command without a
	 * terminal is stopped at the same cap, so its capture never drops. */
	capture_append_tail(c, (const char *)buf, n);
	if (tap && n)
		stream_tap_push(tap, which, (const char *)buf, n);
	free(buf);
}

/* The end, as exec's: the status by the rules, the output kept. */
static void proc_result(struct aj_session *s, json_t *reply, const struct aj_config *cfg,
			struct capture *out, struct capture *err, struct aj_result *res)
{
	/* (Or this wait's own capture filled: a terminal's output, which the
	 * sandbox keeps as a window and never stops for, can outgrow it.) */
	res->stdout_truncated = json_is_true(json_object_get(reply, "out_truncated")) ||
				out->truncated;
	res->stderr_truncated = json_is_true(json_object_get(reply, "err_truncated")) ||
				err->truncated;
	free(res->stdout_buf);
	free(res->stderr_buf);
	res->stdout_buf = capture_take(out, &res->stdout_len);
	res->stderr_buf = capture_take(err, &res->stderr_len);
	double wall = json_number_value(json_object_get(reply, "wall_ms"));
	json_int_t deadline = json_integer_value(json_object_get(reply, "timeout_ms"));
	/* Its own deadline, for the words of a timeout. */
	struct aj_config own = *cfg;
	if (deadline > 0)
		own.limits.wall_sec = (double)deadline / 1000.0;
	cfg = &own;
	session_exec_reply(reply, cfg, res);
	if (res->status != AJ_STATUS_SANDBOX_ERROR &&
	    json_is_true(json_object_get(reply, "output_limit"))) {
		struct end_facts f = {.ended = true, .output_overflow = true, .wstatus = SIGKILL};
		status_decide(&f, &cfg->limits, res);
	}
	if (wall > 0)
		res->wall_ms = wall;
	session_command_oom(s, reply, now_ms() - (wall > 0 ? wall : 0), res);
}

static bool cancelled(struct aj_cancel *cancel)
{
	struct pollfd p = {.fd = cancel_fd(cancel), .events = POLLIN};
	return p.fd >= 0 && poll(&p, 1, 0) > 0;
}

int aj_session_proc_wait(struct aj_session *s, uint32_t pid, struct aj_cancel *cancel,
			 const struct aj_stream *stream, struct aj_result *res)
{
	struct stream_tap *tap = NULL;
	struct aj_error err = {0};
	const struct aj_config *cfg = session_config(s);
	uint64_t off[2] = {0, 0};
	struct capture out, errc;
	int rc;
	result_init(res);
	if (!cfg) {
		result_sandbox_error(res, "wait: no session given");
		return -EINVAL;
	}
	capture_init(&out, (size_t)cfg->limits.output_kb * 1024);
	capture_init(&errc, (size_t)cfg->limits.output_kb * 1024);
	if ((rc = session_stream_start(stream, &tap, res)))
		goto out;
	for (;;) {
		if (cancelled(cancel)) {
			rc = -ECANCELED;
			result_sandbox_error(res, "wait: cancelled by the caller (the command goes on)");
			break;
		}
		json_t *reply;
		unsigned char *part[2];
		size_t len[2] = {0, 0};
		const uint64_t asked[2] = {off[0], off[1]};
		if ((rc = read_once(s, "wait", pid, off, PROC_POLL_MS, &reply, part, len, &err))) {
			result_sandbox_error(res, "%s", err.message);
			break;
		}
		/* A terminal's window moved past what this wait had read: the
		 * bytes between are gone, so the result is not the whole output
		 * even when what it kept fits (a wait that starts after a burst,
		 * or falls behind one on a busy machine). */
		out.truncated |= off[0] > asked[0];
		errc.truncated |= off[1] > asked[1];
		keep_part(part[0], len[0], &off[0], &out, 0, tap);
		keep_part(part[1], len[1], &off[1], &errc, 1, tap);
		bool ended = json_is_true(json_object_get(reply, "ended"));
		if (ended)
			proc_result(s, reply, cfg, &out, &errc, res);
		json_decref(reply);
		if (ended)
			break;
	}
out:
	capture_free(&out);
	capture_free(&errc);
	stream_tap_finish(tap);
	result_ensure_streams(res);
	return rc;
}
