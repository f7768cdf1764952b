/* The egress proxy's way into a sandbox whose PID 1 is boot.py (docker and
 * gvisor tiers; docs/egress.md, docs/tiers/docker.md): a unix socket the
 * proxy listens on, in a directory of the run's own on the host, mounted
 * read-only at BOOT_EGRESS_DIR inside. boot.py forwards the sandbox's
 * 127.0.0.1:CONTRACT_EGRESS_PORT to it; the sandbox has no other network. */
#ifndef AJ_BOOT_EGRESS_H
#define AJ_BOOT_EGRESS_H

#include <sys/types.h>

#include "../core/internal.h"

/* Inside the sandbox. Under /dev, a tmpfs of the sandbox's own on both
 * tiers: the mount point is made there, never in the image (runsc's gofer
 * would make it in the image directory on the host). */
#define BOOT_EGRESS_DIR "/dev/agentjail-egress"
#define BOOT_EGRESS_SOCKET BOOT_EGRESS_DIR "/proxy.sock"

/* In dir (made by the caller, empty, 0700): the proxy's unix socket,
 * listening, for the caller to give the proxy (egress_proxy_add_listener);
 * dir and socket are then owned by uid:gid, the sandbox's, so that only its
 * processes (and root) reach it. The fd, or -errno with err naming the
 * step. */
int boot_egress_socket(const char *dir, uid_t uid, gid_t gid, struct aj_error *err);

/* Removes what boot_egress_listen made in dir, and dir. */
void boot_egress_remove(const char *dir);

#endif
