/* The host's end of the jail's egress door (src/linux/egress_door.h), for
 * the tiers that run the jail (process, container, and their warm runs):
 * a unix socket pair whose one end goes into the sandbox's init, which
 * sends back the listener it made in the run's network namespace, and
 * whose other end the proxy waits on. */
#ifndef AJ_EGRESS_PAIR_H
#define AJ_EGRESS_PAIR_H

#include "../core/internal.h"

struct egress_proxy;

/* With a proxy: *child_fd is the end for jail_spec.egress_fd (the caller
 * closes it once init has been started); without one, *child_fd = -1.
 * 0, or -errno with err. */
int egress_pair_open(struct egress_proxy *p, int *child_fd, struct aj_error *err);

#endif
