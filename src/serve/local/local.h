/* Runs on this machine: the deployer's sandbox, and one more for each set
 * of terms a caller asks for (narrower limits, fewer egress rules, more
 * variables: aj_open fixes a sandbox's config),
 * kept while used and reused when asked for again; one with a key's or a
 * request's secrets serves its run alone and is closed after it. */
#ifndef AJ_SERVE_LOCAL_H
#define AJ_SERVE_LOCAL_H

#include <pthread.h>
#include <stdint.h>

#include "agentjail.h"
#include "../admit/narrow.h"
#include "../admit/runners.h"

#define LOCAL_SANDBOXES 8

struct local_entry {
	struct run_terms terms;
	struct aj_sandbox *sb;
	unsigned refs;
	uint64_t used; /* tick of its last use: the least recent goes first */
};

struct local {
	struct aj_config base;
	pthread_mutex_t lock;
	struct local_entry entries[LOCAL_SANDBOXES]; /* [0]: the deployer's, kept */
	uint64_t tick;
	/* Recorded runs' threads (local_runs.c): stop waits for them. */
	struct runners runners;
};

int local_open(struct local *l, const struct aj_config *base, struct aj_error *err);
/* aj_run_cancellable under terms t (NULL: the deployer's); fills *res
 * whatever happens. */
void local_run(struct local *l, const struct run_terms *t, const char *code, size_t len,
	       struct aj_cancel *cancel, struct aj_result *res);
/* local_run, streaming to stream (NULL: none). */
void local_run_streaming(struct local *l, const struct run_terms *t, const char *code,
			 size_t len, struct aj_cancel *cancel, const struct aj_stream *stream,
			 struct aj_result *res);
void local_close(struct local *l);

#endif
