/* agentjail worker's pieces (worker.c is the command): one struct worker,
 * made by cmd_worker and passed to every thread and step.
 *
 *   worker_reply.c     the log, and the answers a caller reads in Redis
 *   worker_sessions.c  the sessions this worker holds
 *   worker_take.c      the readers: runs and session opens from the tier's
 *                      stream, calls from this worker's ops list
 *   worker_keeper.c    the heartbeat, sessions the library closed, and what
 *                      lost workers left behind
 *   worker_record.c    recorded runs: their events written to Redis as they
 *                      happen, and the one poller of their cancels
 */
#ifndef AJ_SERVE_WORKER_H
#define AJ_SERVE_WORKER_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "../http/keys.h"
#include "../local/local.h"
#include "../remote/queue.h"
#include "../runs/runs.h"

struct wsession {
	char id[40];
	char owner[KEY_NAME_MAX + 1];
	struct aj_session *s;
	bool closed_reported;
	struct wsession *next;
};

/* A recorded run under way here (worker_record.c), on its runner's stack
 * from worker_record_begin to worker_record_end. */
struct worker_record {
	struct worker *w;         /* NULL: the run is not recorded */
	struct run_store st;      /* the worker's store, with serve's keep time */
	char id[33];
	struct aj_cancel *cancel; /* fired when serve asks (cancel in Redis) */
	bool fired;
	bool recording;
	struct aj_stream stream;  /* its fn writes each event to the record */
	struct worker_record *next;
};

struct worker {
	struct aj_config cfg;
	struct queue q;
	struct local local;
	char name[128];           /* --name: what logs and people call it */
	/* This start of it, NAME@START (START: 16 random hex digits, new at
	 * each start): what Redis knows it by (heartbeat, claims, consumer,
	 * sessions, ops list). A worker restarted under the same name is
	 * another instance, so its predecessor's runs are found lost, not
	 * taken for its own: it can neither adopt nor hide them. */
	char id[160];
	char name_key[160];       /* agentjail:workername:NAME -> id, while it lives */
	char stream[64];
	char ops[200];
	unsigned concurrency;
	atomic_bool stopping;     /* take nothing new */
	atomic_bool keeper_stop;  /* the runs are over: the heartbeat may end */
	pthread_mutex_t lock;     /* sessions */
	struct wsession *sessions;
	struct run_store runs;    /* recorded runs' records (remote/store.c) */
	pthread_mutex_t rec_lock; /* recorded */
	struct worker_record *recorded;
};

static inline void worker_pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---- worker_reply.c ---- */

/* One line on stderr, named by the worker. */
void worker_log(const struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Pushes body (taken) to the request's reply list. */
void worker_answer(const struct worker *w, redisContext *c, json_t *request, json_t *body);
json_t *worker_refusal(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A run's answer; frees res. */
/* A refusal of a request's terms (terms_narrow's code and err). */
json_t *worker_terms_refusal(const char *code, const struct aj_error *err);
json_t *worker_result(const struct worker *w, struct aj_result *res);

/* ---- worker_sessions.c ---- */

json_t *worker_session_open(struct worker *w, redisContext *c, json_t *req);
/* session_run (streamed to stream, cancelled by cancel: a recorded
 * call's, NULL both when it is not recorded), put, get, list on a session
 * of this worker's. */
json_t *worker_session_op(struct worker *w, json_t *req, const char *op,
			  const struct aj_stream *stream, struct aj_cancel *cancel);
json_t *worker_session_close(struct worker *w, redisContext *c, json_t *req);
/* Marks in Redis the sessions not reported closed yet that the library
 * closed (reason NULL: its own reason), or all of them (reason given). */
void worker_sessions_report_closed(struct worker *w, redisContext *c, const char *reason);
/* Closes every session; the threads are gone. */
void worker_sessions_end(struct worker *w);

/* ---- worker_take.c: thread bodies, arg the worker ---- */

void *worker_stream_loop(void *arg);
void *worker_ops_loop(void *arg);

/* ---- worker_record.c ---- */

/* If req asks to be recorded: marks its record running and registers it
 * for cancels. 0 (recorded or not: worker_record_stream says), or -1 when
 * its record has ended or is gone: then the run must not start. */
int worker_record_begin(struct worker *w, json_t *req, struct worker_record *rec);
/* The stream and cancel token the run takes (NULL when not recorded). */
const struct aj_stream *worker_record_stream(const struct worker_record *rec);
struct aj_cancel *worker_record_cancel(const struct worker_record *rec);
/* Whether it was cancelled before it began: then it is not run. */
bool worker_record_cancelled(const struct worker_record *rec);
/* Ends the record with the worker's answer (borrowed): its result with
 * the run's id, or its refusal; unregisters it. Nothing when not
 * recorded. */
void worker_record_end(struct worker_record *rec, json_t *answer);
/* Thread body, arg the worker: the one cancel poller, until keeper_stop. */
void *worker_canceller_loop(void *arg);

/* ---- worker_keeper.c: thread body, arg the worker ---- */

void *worker_keeper_loop(void *arg);

#endif
