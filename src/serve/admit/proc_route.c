/* proc_route.h: one front for the background command routes. */
#include "proc_call.h"
#include "proc_route.h"
#include "service.h"

void proc_route(struct service *svc, const struct http_request *rq, struct http_response *rs,
		const struct session_route *r, const struct proc_source *src)
{
	if (r->proc == PROC_EVENTS) {
		uint64_t off[2];
		if (proc_events_after(rq, rs, off))
			goto done;
		if (proc_events_answer(rs, src, r->pid, off, svc->cfg.idle_sec))
			respond_error(rs, 500, "internal", "out of memory");
		return; /* the stream calls done */
	}
	json_t *req = proc_call_request(rq, rs, r);
	if (!req)
		goto done;
	/* A spawn starts a program in the sandbox, as an exec does: it waits
	 * for a slot and counts against the key's rate. What follows (its
	 * reads, stdin, signals) is the session's, as a file call is. */
	struct key_use *u = r->proc == PROC_SPAWN ? admission_use(&svc->adm, rq->key) : NULL;
	if (!u || !service_admit(svc, u, rs)) {
		json_t *ans = src->call(src->arg, req);
		if (u)
			admit_finish(&svc->adm, u);
		if (ans)
			proc_call_answer(ans, rs);
		else if (!rs->code)
			respond_error(rs, 503, "session_unavailable", "the session cannot be "
				      "reached; retry");
		json_decref(ans);
	}
	json_decref(req);
done:
	if (src->done)
		src->done(src->arg);
}
