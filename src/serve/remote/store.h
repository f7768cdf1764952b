/* The Redis run store's extras beyond runs.h's table: what a worker that
 * runs a recorded run says of it, and the lost-run answer any reader
 * writes for a run whose worker died.
 *
 *   agentjail:run:ID          a hash: owner, state (queued|running|done),
 *                             created, ended, background, session_id,
 *                             result (the contract's JSON text), worker,
 *                             cancel ("1" once asked), bytes (held)
 *   agentjail:run:ID:events   a stream, entry ids 0-N (N: the event's
 *                             number), fields kind, data, and for an image
 *                             name, mime
 *   agentjail:key:NAME:runs   a sorted set of the key's run ids, score
 *                             created
 *
 * Every change to a record that a second writer could race (an event, the
 * start, the end) is one Lua script, so a record ends exactly once: the
 * worker's result and a reader's lost answer cannot both land, and nothing
 * is appended after the end. */
#ifndef AJ_SERVE_RUNS_REDIS_H
#define AJ_SERVE_RUNS_REDIS_H

#include <stdbool.h>

#include "../runs/runs.h"

/* A record stays this long past its last sign of life while its run is
 * live: the worker that runs it renews it (remote_store_renew) each second,
 * so a dead worker's record outlives it long enough to be found lost. */
#define RUNS_REDIS_LIVE_SEC 600
/* A sorted set: the ids of ended records whose webhook is to be attempted,
 * scored by when (Redis's clock, ms). remote_hooks.c takes them. */
#define RUNS_REDIS_HOOKS "agentjail:hooks"

/* Records made from now on are given up run_sec (a session's call:
 * session_sec) seconds after they were made if no worker has claimed
 * them by then: a reader ends such a one "no_worker" (it never started),
 * and no worker can take it any more. serve sets them past the longest
 * its own wait for a worker can last, for a record whose serve stopped
 * without ending it. 0 (the default): never. */
void remote_store_give_up(struct run_store *st, double run_sec, double session_sec);
/* fn(arg, may_have_started) once for each record this store ends with the
 * lost-run answer (a reader that found its worker gone, or the runner
 * that learnt it): only the call that ended it counts it, so a run lost
 * is counted once however many replicas read it. NULL: none (a worker). */
void remote_store_on_lost(struct run_store *st, void (*fn)(void *arg, bool may_have_started),
			void *arg);
/* fn(arg, id) after a cancel of run id was marked through this store (the
 * replica that took the DELETE): the run may be waiting for its turn here,
 * and leaves the queue at once. NULL: none. */
void remote_store_on_cancel(struct run_store *st, void (*fn)(void *arg, const char *id),
			  void *arg);
/* The worker took run id: RUN_QUEUED -> RUN_RUNNING, naming worker. false
 * when the record is gone or has already ended (a reader found it lost,
 * or it expired): the run must not start. */
bool remote_store_started(struct run_store *st, const char *id, const char *worker);
/* Renews the expiry of the live records in ids (n of them) and says which
 * were asked to cancel (cancel[i]). One round trip for all: the worker's
 * one poller calls it about every 200 ms. 0, or -1 when Redis fails. */
int remote_store_poll(struct run_store *st, const char *const *ids, size_t n, bool *cancel);

#endif
