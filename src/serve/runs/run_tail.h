/* A record's events handed to an aj_stream as they land in the run store,
 * on a thread of its own: how a caller that wants a run's output as it
 * happens, but no record of its own to read, follows a run that only a
 * record can carry live (one on a worker, through the queue). */
#ifndef AJ_SERVE_RUN_TAIL_H
#define AJ_SERVE_RUN_TAIL_H

#include "agentjail.h"
#include "runs.h"

struct run_tail;

/* Starts following record id of owner from its first event: each stdout,
 * stderr and image event goes to stream->fn on the tail's thread, in
 * order. NULL when the thread cannot start (nothing follows then). */
struct run_tail *run_tail_start(struct run_store *st, const char *id, const char *owner,
				const struct aj_stream *stream);
/* Waits until the tail has handed over every event up to the record's
 * end (the record must have ended, or the store be unreachable: then it
 * stops at once), and frees it. NULL: nothing. */
void run_tail_stop(struct run_tail *t);

#endif
