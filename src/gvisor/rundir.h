/* The gvisor tier's run directories (RUN_BASE/NAME: a sandbox's bundle and
 * runsc's state), and the sweep of those a dead caller left. */
#ifndef AJ_GVISOR_RUNDIR_H
#define AJ_GVISOR_RUNDIR_H

/* Removes path and everything under it, not crossing mounts: 0 (also when
 * it is gone already), or -errno. */
int gvisor_remove_tree(const char *path);

/* Removes the run directories under base whose maker died. */
void gvisor_sweep_run_dirs(const char *base);

#endif
