/* The memory store's one addition to the table (runs.h): the local
 * backend's runner hands it the run's cancel token, so that a DELETE fires
 * it at once, from the store that took the request, without a poll. */
#ifndef AJ_SERVE_RUNS_MEM_H
#define AJ_SERVE_RUNS_MEM_H

#include "../runs/runs.h"

/* The token that stops run id (NULL: the run no longer has one; call
 * that before freeing it). A cancel asked before the token came fires it
 * here. */
void local_store_set_cancel(struct run_store *st, const char *id, struct aj_cancel *token);
/* While run id waits for its turn: fn(arg) is what a cancel calls (under
 * the store's lock: fn only flags and wakes), so that the run leaves the
 * queue at once (NULL: no longer waiting; called before arg goes). A
 * cancel asked before calls it here. */
void local_store_set_call_off(struct run_store *st, const char *id, void (*fn)(void *arg),
			   void *arg);

#endif
