/* Recorded runs: a run's events (its output as it came, its images, then
 * its result) kept under the run's id, so that a client can read them as
 * they happen, come back after a dropped connection (from the last event
 * it saw, no gap and no duplicate), or ask later for a run it started in
 * the background.
 *
 * Two stores keep them behind one table, chosen with the backend:
 *   local/store.c    serve's memory (no queue): lost when serve stops
 *   remote/store.c  Redis (with a queue): the worker that runs it writes the
 *                 events and the result there, so they outlive serve's
 *                 restart and any serve replica can answer for them
 *
 * A run's events are numbered from 1 in the order they happened; the
 * number is the SSE id. The last event of an ended run is its "result"
 * (the JSON contract object the POST would have answered). A record is
 * kept for keep_runs_sec after its end, and a key's records together hold
 * at most runs_budget bytes: its oldest ended ones go first. A run's own
 * events are bounded by its output caps.
 *
 * Ownership: every read names the key it is for; another key's run is
 * answered exactly as a missing one (-ENOENT), so an id tells nobody
 * whether it exists. */
#ifndef AJ_SERVE_RUNS_H
#define AJ_SERVE_RUNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentjail.h"

/* The owner of a record no key reads or lists (no key's name is empty:
 * key_name_check): one a run's caller follows without keeping it (MCP's
 * streamed call through the queue, run_tail.h). */
#define RUNS_NO_OWNER ""
/* How long such a record outlives its run: its caller has read it all by
 * then. */
#define RUNS_NO_OWNER_KEEP_SEC 60

enum run_state { RUN_QUEUED, RUN_RUNNING, RUN_DONE };

enum run_event_kind { RUN_EV_STDOUT, RUN_EV_STDERR, RUN_EV_IMAGE, RUN_EV_RESULT };

/* One event as a reader gets it (copies it owns; run_events_free). data:
 * the bytes for stdout/stderr, the image's bytes for an image (name,
 * mime set), the result's JSON text for the result. */
struct run_event {
	uint64_t id;
	enum run_event_kind kind;
	char *data;
	size_t len;
	char *name, *mime; /* RUN_EV_IMAGE */
};

/* What a run record says of itself (GET /v1/runs/ID, and each row of
 * the list). */
struct run_info {
	char id[33];
	enum run_state state;
	double created;      /* epoch seconds */
	double ended;        /* epoch seconds; 0 while not done */
	bool background;
	bool session;        /* a session's call (its session id in session_id) */
	char session_id[40];
	json_t *result;      /* RUN_DONE: the contract object (a reference) */
	uint64_t last_id;    /* RUN_DONE (info only): its result's event number */
	/* create only: the most the run can record (its events and its
	 * result's copy of them: 2 x (stdout cap + stderr cap), plus its
	 * images' most for a session's call), held against the key's budget
	 * from its create to its end, when its actual bytes replace it: live
	 * runs never hold more than the budget. 0: nothing held ahead. */
	size_t reserve;
	/* create only: the background run's webhook URL (NULL: none). A store
	 * that schedules webhooks itself (run_store.schedules_webhooks) keeps
	 * it in the record and makes the delivery due when the record ends,
	 * whoever ends it. */
	const char *webhook;
};

struct run_store;

struct run_store_ops {
	/* A new record for id, owned by owner (a key's name): 0, or -EDQUOT
	 * when the key's budget is held by its runs still going, -EIO. */
	int (*create)(struct run_store *st, const char *id, const char *owner,
		      const struct run_info *info, struct aj_error *err);
	/* The run began (RUN_QUEUED -> RUN_RUNNING). */
	void (*started)(struct run_store *st, const char *id);
	/* One event at the end of the record; kind not RUN_EV_RESULT. */
	void (*append)(struct run_store *st, const char *id, enum run_event_kind kind,
		       const char *data, size_t len, const char *name, const char *mime);
	/* The run ended with result (its contract object; borrowed): the
	 * last event, the state RUN_DONE, readers woken. */
	void (*finish)(struct run_store *st, const char *id, json_t *result);
	/* The record as its owner sees it: 0 with *info (run_info_clear), or
	 * -ENOENT (missing, expired or another key's), -EIO. */
	int (*info)(struct run_store *st, const char *id, const char *owner,
		    struct run_info *info);
	/* The events after event number after, waiting at most wait_ms for
	 * one when none is there yet: 0 with *ev (n of them, possibly 0) and
	 * *done when the result is among those already read (no event will
	 * follow it); -ENOENT as info; -EIO. */
	int (*events)(struct run_store *st, const char *id, const char *owner, uint64_t after,
		      int wait_ms, struct run_event **ev, size_t *n, bool *done);
	/* Asks a run that has not ended to stop: 0 (it will end cancelled;
	 * one already ended is left as it is), -ENOENT as info, -EIO. */
	int (*cancel)(struct run_store *st, const char *id, const char *owner);
	/* Whether cancel was asked for id: what runs it polls this. */
	bool (*cancel_requested)(struct run_store *st, const char *id);
	/* The owner's runs, newest first: at most limit, older than the run
	 * before (NULL: from the newest). A JSON array of run_info objects. */
	json_t *(*list)(struct run_store *st, const char *owner, const char *before,
			unsigned limit, struct aj_error *err);
	/* Drops the expired records; called about every second. */
	void (*sweep)(struct run_store *st);
	void (*close)(struct run_store *st);
};

struct run_store {
	const struct run_store_ops *ops;
	/* Its records' webhooks are delivered from the store (Redis: by any
	 * serve replica, after a restart too), not by the run's thread. */
	bool schedules_webhooks;
	double keep_sec;
	size_t budget;
	void *impl;
};

/* local/store.c, remote/store.c: 0, or -errno with err. */
int local_store_open(struct run_store *st, double keep_sec, size_t budget, struct aj_error *err);
struct queue;
int remote_store_open(struct run_store *st, struct queue *q, double keep_sec, size_t budget,
		    struct aj_error *err);

/* run_info.reserve for a run under limits, or for a session's call when
 * session is set (its images' most, raw and as base64, besides). */
size_t run_reserve(const struct aj_limits *limits, const struct aj_session_limits *session);
void run_events_free(struct run_event *ev, size_t n);
/* n bytes of p copied and NUL-ended (an event's data may hold NULs; the
 * end is for text readers): NULL when out of memory. */
char *dup_bytes(const char *p, size_t n);
/* A new id of 32 hex digits for a run or a session, from getrandom:
 * never repeated, never guessed. */
void serve_id_new(char id[33]);
void run_info_clear(struct run_info *info);
/* A run_info as the API's JSON: {"id", "state", "created", "ended"?,
 * "background", "session_id"?, "result"? (when done)}. */
json_t *run_info_json(const struct run_info *info);
const char *run_state_name(enum run_state s);

#endif
