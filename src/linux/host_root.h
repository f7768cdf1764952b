/* The process tier's view: an allow-list of the host's system directories
 * on a root of the run's own (host_root.c says what is in it and why). */
#ifndef AJ_HOST_ROOT_H
#define AJ_HOST_ROOT_H

#include "../core/internal.h"
#include "jail.h"

/* What the view needs besides the spec, found by the supervisor before the
 * clone (init may not allocate). */
struct host_root {
	/* Where an interpreter outside the system directories keeps its
	 * files (a venv, /opt/python3.12): each shown read-only at its own
	 * path. "": none. */
	char prefix[2][256];
};

/* The interpreter's directories the view must show beside the system's:
 * the prefix of `python` (two levels up: /opt/py for /opt/py/bin/python3),
 * and of the file its symlinks lead to, where either lies outside them. 0,
 * or -errno with err naming the path. */
int host_root_prepare(struct host_root *r, const char *python, struct aj_error *err);

/* In init, in its own private mount namespace: builds the view (the
 * deployer's --ro-bind paths included), the run's /dev, /tmp and /proc
 * (jail_populate_root), and pivots into it, leaving nothing of the host's
 * tree reachable. 0, or -errno with e naming the step. */
int host_root_build(const struct jail_spec *s, const struct host_root *r,
		    struct setup_error *e);

#endif
