/* The gvisor tier's run directories (RUN_BASE/NAME: a sandbox's bundle and
 * runsc's state), and the sweep of those a dead caller left. */
#ifndef AJ_GVISOR_RUNDIR_H
#define AJ_GVISOR_RUNDIR_H

/* Removes the run directories under base whose maker died. */
void gvisor_sweep_run_dirs(const char *base);

#endif
