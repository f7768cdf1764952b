/* agentjail worker: recorded runs (worker.h). A request that carries
 * "record": true is a run whose events serve's readers follow in Redis
 * (remote/store.h): the worker marks it running, writes each chunk of its
 * output as the library hands it over, and ends the record with the run's
 * contract object, then answers as for any run. One thread polls the
 * records of all the runs under way here for a cancel, and keeps them
 * from expiring while they run. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "../http/respond.h"
#include "../remote/store.h"
#include "worker.h"

/* How often a cancel asked in Redis is looked for: what a DELETE waits
 * at most before the sandbox is told, beside the round trip. */
#define CANCEL_POLL_MS 200

static void on_event(void *arg, const struct aj_event *ev)
{
	struct worker_record *rec = arg;
	enum run_event_kind k = ev->kind == AJ_EVENT_STDOUT   ? RUN_EV_STDOUT
				: ev->kind == AJ_EVENT_STDERR ? RUN_EV_STDERR
							      : RUN_EV_IMAGE;
	rec->st.ops->append(&rec->st, rec->id, k, ev->data, ev->len, ev->name, ev->mime);
}

int worker_record_begin(struct worker *w, json_t *req, struct worker_record *rec)
{
	memset(rec, 0, sizeof *rec);
	if (!json_is_true(json_object_get(req, "record")))
		return 0;
	const char *id = json_string_value(json_object_get(req, "id"));
	if (!id)
		return -1;
	rec->w = w;
	rec->st = w->runs;
	/* serve's --keep-runs: the record outlives the run's end this long. */
	json_t *keep = json_object_get(req, "keep_sec");
	if (json_is_number(keep) && json_number_value(keep) > 0)
		rec->st.keep_sec = json_number_value(keep);
	snprintf(rec->id, sizeof rec->id, "%s", id);
	/* A record already ended (a reader found it lost meanwhile) or gone
	 * (expired): its run must not start, nobody can follow it. */
	if (!remote_store_started(&rec->st, rec->id, w->id))
		return -1;
	/* Out of memory: it runs, not cancellable, rather than not at all. */
	if (aj_cancel_new(&rec->cancel))
		rec->cancel = NULL;
	/* Cancelled while it waited in the queue: it never starts. */
	const char *idp = rec->id;
	bool asked = false;
	if (!remote_store_poll(&rec->st, &idp, 1, &asked) && asked)
		rec->fired = true;
	rec->stream = (struct aj_stream){.fn = on_event, .arg = rec};
	rec->recording = true;
	pthread_mutex_lock(&w->rec_lock);
	rec->next = w->recorded;
	w->recorded = rec;
	pthread_mutex_unlock(&w->rec_lock);
	return 0;
}

const struct aj_stream *worker_record_stream(const struct worker_record *rec)
{
	return rec->recording ? &rec->stream : NULL;
}

bool worker_record_cancelled(const struct worker_record *rec)
{
	return rec->recording && rec->fired;
}

struct aj_cancel *worker_record_cancel(const struct worker_record *rec)
{
	return rec->cancel;
}

void worker_record_end(struct worker_record *rec, json_t *answer)
{
	if (!rec->w)
		return;
	struct worker *w = rec->w;
	pthread_mutex_lock(&w->rec_lock);
	for (struct worker_record **p = &w->recorded; *p; p = &(*p)->next)
		if (*p == rec) {
			*p = rec->next;
			break;
		}
	pthread_mutex_unlock(&w->rec_lock);
	aj_cancel_free(rec->cancel);
	rec->cancel = NULL;
	/* The record ends with what the non-streaming POST would have
	 * answered: the result with its run_id, or the refusal as serve
	 * words it. */
	json_t *result = json_object_get(answer, "result");
	json_t *end;
	if (json_is_true(json_object_get(answer, "ok")) && json_is_object(result)) {
		end = json_copy(result);
		json_object_set_new(end, "run_id", json_string(rec->id));
	} else {
		const char *code = json_string_value(json_object_get(answer, "code"));
		const char *why = json_string_value(json_object_get(answer, "error"));
		end = run_failure_json(code ? code : "refused", rec->id, false, false,
				       why ? why : "the worker refused the run");
	}
	if (end)
		rec->st.ops->finish(&rec->st, rec->id, end);
	json_decref(end);
	rec->w = NULL;
}

void *worker_canceller_loop(void *arg)
{
	struct worker *w = arg;
	enum { MAX = 256 };
	while (!atomic_load(&w->keeper_stop)) {
		char ids[MAX][33];
		const char *idp[MAX];
		bool cancel[MAX];
		size_t n = 0;
		pthread_mutex_lock(&w->rec_lock);
		for (struct worker_record *r = w->recorded; r && n < MAX; r = r->next) {
			memcpy(ids[n], r->id, sizeof ids[n]);
			idp[n] = ids[n];
			n++;
		}
		pthread_mutex_unlock(&w->rec_lock);
		if (n && !remote_store_poll(&w->runs, idp, n, cancel)) {
			/* Fired under the lock, on records still registered: a run
			 * that ended meanwhile took its token with it. */
			pthread_mutex_lock(&w->rec_lock);
			for (struct worker_record *r = w->recorded; r; r = r->next)
				for (size_t i = 0; i < n; i++)
					if (cancel[i] && r->cancel && !r->fired &&
					    !strcmp(r->id, ids[i])) {
						aj_cancel_fire(r->cancel);
						r->fired = true;
					}
			pthread_mutex_unlock(&w->rec_lock);
		}
		worker_pause_ms(CANCEL_POLL_MS);
	}
	return NULL;
}
