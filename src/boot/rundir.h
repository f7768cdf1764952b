/* The run directories of the tiers whose PID 1 is boot.py (BASE/run-PID-...:
 * gvisor's bundle and runsc's state, the egress proxy's socket directory of
 * a docker run), and the sweep of those a dead caller left. */
#ifndef AJ_BOOT_RUNDIR_H
#define AJ_BOOT_RUNDIR_H

/* Removes the run directories under base whose maker died. */
void boot_sweep_run_dirs(const char *base);

#endif
