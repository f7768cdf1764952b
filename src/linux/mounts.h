/* Mount operations a tier applies in its child, inside its own mount
 * namespace. Each returns 0 or -errno with e naming the step. */
#ifndef AJ_MOUNTS_H
#define AJ_MOUNTS_H

#include <stdint.h>
#include <sys/types.h>

#include "report.h"

int mount_make_private(struct setup_error *e);
int mount_tree_readonly(const char *path, struct setup_error *e);
int mount_tmpfs(const char *path, uint32_t size_mb, uint32_t mode, struct setup_error *e);
/* An empty read-only tmpfs over path: what was there is out of reach. */
int mount_hide(const char *path, struct setup_error *e);
int mount_bind(const char *src, const char *dst, struct setup_error *e);
/* The file src over the file dst, read-only, nosuid, nodev, noexec. */
int mount_file_readonly(const char *src, const char *dst, struct setup_error *e);
int mount_proc(const char *path, struct setup_error *e);
/* A /dev of its own on a read-only tmpfs at `target`: null, zero, full,
 * random and urandom from the host, a private devpts instance (ptmx) and an
 * empty shm directory. The host's /dev, with its terminals, disks and
 * /dev/kvm, is out of sight. Built on `staging` (an existing directory, whose
 * contents it hides meanwhile) and then moved into place. */
int mount_minimal_dev(const char *staging, const char *target, struct setup_error *e);
/* mkdir + chown + chmod, refusing to follow a symlink planted at path. */
int make_dir(const char *path, uint32_t mode, uid_t uid, gid_t gid, struct setup_error *e);

#endif
