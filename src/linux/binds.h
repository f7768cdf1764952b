/* The deployer's read-only host paths (cfg.ro_binds) in a jail's view:
 * binds_open while the host's paths still resolve, binds_attach once the
 * view is built (binds.c says why two steps). */
#ifndef AJ_BINDS_H
#define AJ_BINDS_H

#include <stdint.h>

#include "agentjail.h"
#include "../core/internal.h"
#include "report.h"

struct bind_trees {
	int fd[RO_BIND_SLOTS]; /* detached read-only clones, in cfg order */
	uint32_t n;
};

/* A detached clone of what is mounted at host and below it, read-only,
 * nosuid and nodev, as *fd (-1 when the clone failed); `what` starts the
 * error. */
int bind_clone_readonly(const char *host, const char *what, int *fd, struct setup_error *e);
/* Clones each HOST as a detached, read-only, nosuid, nodev mount tree. */
int binds_open(const struct aj_config *cfg, struct bind_trees *t, struct setup_error *e);
/* Mounts each clone at root + SANDBOX, making its mount point where the
 * view allows (binds.c), and closes the clones. */
int binds_attach(const char *root, const struct aj_config *cfg, struct bind_trees *t,
		 struct setup_error *e);
/* The same, into a root the run built for itself (a tmpfs of its own,
 * still writable): its directories take a missing mount point as they
 * are, while one among the host's files is refused as by binds_attach. */
int binds_attach_own_root(const char *root, const struct aj_config *cfg, struct bind_trees *t,
			  struct setup_error *e);
void binds_close(struct bind_trees *t);

#endif
