#ifndef AJ_RLIMITS_H
#define AJ_RLIMITS_H

#include <stdbool.h>

#include "../core/internal.h"
#include "report.h"

/* Applies the run's resource limits to the calling process (inherited by
 * what it execs and forks). limit_procs: set RLIMIT_NPROC, which only means
 * something when the run has a uid of its own. address_space: the memory
 * limit as RLIMIT_AS, for a tier without a memory cgroup. */
int rlimits_apply(const struct aj_limits *l, bool limit_procs, bool address_space,
		  struct setup_error *e);

#endif
