/* The background command routes' answers (proc_answer.h): what the
 * library answers, worded as HTTP. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "proc_answer.h"

json_t *proc_answer(int status, json_t *body)
{
	return json_pack("{s:i, s:o}", "http", status, "body", body ? body : json_object());
}

json_t *proc_answer_error(int status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return proc_answer(status, json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
}

/* What the library refused, as the answer a client can act on. */
json_t *proc_refused(struct aj_session *s, uint32_t pid, int rc, const struct aj_error *err)
{
	const char *closed = aj_session_closed_reason(s);
	if (rc == -ESHUTDOWN || closed)
		return proc_answer_error(410, "session_closed", "the session is closed, because %s",
				    closed ? closed : "it was deleted");
	switch (rc) {
	case -ESRCH:
		return proc_answer_error(404, "not_found", "no process %u in this session", pid);
	case -EPIPE:
		return proc_answer_error(409, "stdin_closed", "process %u: its stdin is closed", pid);
	case -EBADF:
		return proc_answer_error(409, "no_stdin", "process %u was started without \"stdin\": "
				    "true, so nothing can be written to it", pid);
	case -EFBIG:
		return proc_answer_error(413, "too_large", "%s", err->message);
	case -ENOTTY:
		return proc_answer_error(409, "not_a_terminal", "process %u has no terminal: only a "
				    "command started with \"pty\" can be resized", pid);
	case -EOPNOTSUPP: /* a tier without the feature (the docker tier's pty) */
		return proc_answer_error(501, "not_supported", "%s", err->message);
	case -EINVAL:
	case -ENOENT:
	case -ENOTDIR:
	case -EACCES:
		return proc_answer_error(400, "bad_request", "%s", err->message);
	default:
		return proc_answer_error(500, "session_error", "%s", err->message);
	}
}
