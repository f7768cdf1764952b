/* agentjail worker: its log, and the answers its callers read in Redis
 * (worker.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "worker.h"

void worker_log(const struct worker *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	/* One line at a time: runs log from several threads, and stderr is
	 * unbuffered, so without the lock the three writes of two lines could
	 * interleave (a log reader counting "run:" lines missed one). */
	flockfile(stderr);
	fprintf(stderr, "agentjail worker %s: ", w->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	va_end(ap);
}

void worker_answer(const struct worker *w, redisContext *c, json_t *request, json_t *body)
{
	const char *reply = json_string_value(json_object_get(request, "reply"));
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!reply || !text) {
		free(text);
		return;
	}
	struct aj_error err;
	redisReply *r = queue_cmd(c, &err, "LPUSH %s %s", reply, text);
	if (r)
		freeReplyObject(r);
	else
		worker_log(w, "cannot answer: %s", err.message);
	/* Unread answers (a caller that gave up) do not stay forever. */
	queue_do(c, "EXPIRE %s 300", reply);
	free(text);
}

json_t *worker_refusal(const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "error", msg);
}

json_t *worker_terms_refusal(const char *code, const struct aj_error *err)
{
	/* Said of this worker: serve's own checks passed, its deployer's did not. */
	const char *what = !strcmp(code, "bad_limits")	   ? "limits are narrower"
			   : !strcmp(code, "bad_egress")   ? "egress rules are narrower"
			   : !strcmp(code, "bad_language") ? "languages are fewer"
							   : "deployer refuses the variables";
	return worker_refusal(code, "this worker's %s: %s", what, err->message);
}

json_t *worker_result(const struct worker *w, struct aj_result *res)
{
	json_t *o = json_pack("{s:b, s:o}", "ok", 1, "result",
			      result_to_json_object(res, w->cfg.tier));
	aj_result_free(res);
	return o;
}
