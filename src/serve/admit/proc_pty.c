/* A terminal over HTTP (proc_pty.h): the "pty" of a spawn's body and the
 * resize route, read into the library's calls (aj_session_pty,
 * aj_session_pty_resize), whose rules (a side of 1 to AJ_PTY_SIDE_MAX, a
 * tier that offers one) and words they keep. What a terminal shows and
 * what is typed into it go by the routes every background command has
 * (events, stdin), so nothing else here is a terminal's own. */
#include <stdio.h>
#include <string.h>

#include "proc_answer.h"
#include "proc_pty.h"

/* {"cols": C, "rows": R} as size: NULL, or the 400 naming what is wrong.
 * A whole number the library can be given (0 to 65535) is its to judge,
 * in its words; anything else is not a size at all. */
static json_t *pty_size(json_t *o, const char *what, uint16_t size[2])
{
	static const char *const sides[] = {"cols", "rows"};
	const char *key;
	json_t *v;
	if (!json_is_object(o))
		return proc_answer_error(400, "bad_request", "%s: expected {\"cols\": C, \"rows\": R}",
					 what);
	json_object_foreach(o, key, v)
		if (strcmp(key, "cols") && strcmp(key, "rows"))
			return proc_answer_error(400, "bad_request", "%s: unknown field '%.40s' (a "
						 "terminal's size is \"cols\" and \"rows\")", what, key);
	for (int i = 0; i < 2; i++) {
		v = json_object_get(o, sides[i]);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > UINT16_MAX)
			return proc_answer_error(400, "bad_request", "%s: %s: expected a whole number "
						 "from 1 to %d", what, sides[i], AJ_PTY_SIDE_MAX);
		size[i] = (uint16_t)json_integer_value(v);
	}
	return NULL;
}

json_t *proc_pty_body(json_t *body, uint16_t size[2], json_t **spawn_body)
{
	*spawn_body = NULL;
	/* Keys typed into a terminal are its input; a pipe beside it would be
	 * a second stdin the terminal never sees. */
	if (json_object_get(body, "stdin"))
		return proc_answer_error(400, "bad_request", "stdin: does not go with \"pty\": a "
					 "terminal's input is typed, by POST "
					 ".../processes/PID/stdin");
	json_t *bad = pty_size(json_object_get(body, "pty"), "pty", size);
	if (bad)
		return bad;
	json_t *o = json_copy(body);
	/* No command: the library's shell, named here so that the checks and
	 * the list see the command it runs. */
	if (!o || json_object_del(o, "pty") ||
	    (!json_object_get(o, "command") && !json_object_get(o, "argv") &&
	     json_object_set_new(o, "argv", json_pack("[s]", "/bin/bash")))) {
		json_decref(o);
		return proc_answer_error(500, "internal", "out of memory");
	}
	*spawn_body = o;
	return NULL;
}

json_t *proc_pty_resize(struct aj_session *s, uint32_t pid, json_t *body)
{
	uint16_t size[2];
	struct aj_error err = {0};
	json_t *bad = pty_size(body, "resize", size);
	if (bad)
		return bad;
	int rc = aj_session_pty_resize(s, pid, size[0], size[1], &err);
	if (rc)
		return proc_refused(s, pid, rc, &err);
	return proc_answer(200, json_pack("{s:I, s:i, s:i}", "pid", (json_int_t)pid, "cols",
					  (int)size[0], "rows", (int)size[1]));
}
