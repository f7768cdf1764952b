/* One run in a gVisor sandbox: the program in on boot.py's stdin, the
 * watch, the sandbox's end and the result. */
#ifndef AJ_GVISOR_RUN_H
#define AJ_GVISOR_RUN_H

#include "../core/internal.h"
#include "../core/run_request.h"
#include "../core/session_call.h"
#include "sandbox.h"

/* The program, in a started sandbox, under the wall clock from start_ms;
 * the sandbox is destroyed after. Fills res fully. */
int gvisor_run_in(struct gvisor_started *s, const struct aj_config *cfg,
		  const struct run_request *req, double start_ms, struct aj_result *res);
/* A sandbox of its own on platform, started, run in and destroyed. */
int gvisor_run_with(const struct gvisor_host *st, const char *platform,
		    const struct aj_config *cfg, const struct run_request *req,
		    struct aj_result *res);

#endif
