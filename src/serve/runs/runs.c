/* What both run stores share: freeing what they hand out, and a record's
 * JSON as the API answers it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "runs.h"

char *dup_bytes(const char *p, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		if (n)
			memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

void run_events_free(struct run_event *ev, size_t n)
{
	for (size_t i = 0; ev && i < n; i++) {
		free(ev[i].data);
		free(ev[i].name);
		free(ev[i].mime);
	}
	free(ev);
}

void run_info_clear(struct run_info *info)
{
	json_decref(info->result);
	info->result = NULL;
}

const char *run_state_name(enum run_state s)
{
	switch (s) {
	case RUN_QUEUED:
		return "queued";
	case RUN_RUNNING:
		return "running";
	default:
		return "done";
	}
}

json_t *run_info_json(const struct run_info *info)
{
	json_t *o = json_pack("{s:s, s:s, s:f, s:b}", "id", info->id, "state",
			      run_state_name(info->state), "created", info->created, "background",
			      info->background);
	if (!o)
		return NULL;
	if (info->state == RUN_DONE)
		json_object_set_new(o, "ended", json_real(info->ended));
	if (info->session) {
		json_object_set_new(o, "session", json_true());
		json_object_set_new(o, "session_id", json_string(info->session_id));
	}
	if (info->state == RUN_DONE && info->result)
		json_object_set(o, "result", info->result);
	return o;
}

size_t run_reserve(const struct aj_limits *limits, const struct aj_session_limits *session)
{
	/* Each stream up to its cap, twice: its events, and the result's copy. */
	size_t n = (size_t)4 * limits->output_kb * 1024;
	if (session) /* an image's bytes in its event, and 4/3 of them in the result */
		n += (size_t)session->images * session->image_kb * 1024 * 7 / 3;
	return n;
}

void serve_id_new(char id[33])
{
	unsigned char b[16];
	/* Ids must never repeat: no fallback to anything weaker. */
	while (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
		if (errno != EINTR)
			abort();
	for (int i = 0; i < 16; i++)
		snprintf(id + 2 * i, 3, "%02x", b[i]);
}
