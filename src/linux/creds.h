/* Who the sandboxed program runs as. */
#ifndef AJ_CREDS_H
#define AJ_CREDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "report.h"

/* A uid of the run's own, as isolate's boxes have: slot N of the config's
 * range, held by an flock on STATE_DIR/slot-N for as long as the run lasts, so
 * no two runs (in this process or any other) share a uid, and RLIMIT_NPROC,
 * counted per uid, counts one run's processes only. */
struct uid_slot {
	uint32_t slot;
	uid_t uid;
	gid_t gid;
	int lock_fd;
};
int slot_acquire(const struct aj_config *cfg, struct uid_slot *s, struct aj_error *err);
/* Slot `only` and no other, without waiting: -EBUSY while another holds it.
 * Holding it proves that nothing of that slot's last holder is running. */
int slot_acquire_nr(const struct aj_config *cfg, uint32_t only, struct uid_slot *s,
		    struct aj_error *err);
void slot_release(struct uid_slot *s);

/* In the child: become uid/gid with no supplementary groups and no
 * capabilities, and set no_new_privs. In a user namespace (in_userns) the
 * caller's groups cannot be dropped (setgroups is denied there) and stay. */
int creds_drop(uid_t uid, gid_t gid, bool in_userns, struct setup_error *e);

/* Drops every capability but keep[0..n) from the bounding set (needs
 * CAP_SETPCAP): what the process execs can hold no other. */
int creds_limit_bounding_set(const int *keep, size_t n, struct setup_error *e);

/* In a child that has just entered a new user namespace: map the caller's
 * own uid and gid to themselves (the one mapping an unprivileged user may
 * write). */
int userns_map_self(uid_t outer_uid, gid_t outer_gid, struct setup_error *e);

#endif
