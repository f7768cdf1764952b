/* Snapshots of a booted, ready VM; see snapshot.c. */
#ifndef AJ_VM_SNAPSHOT_H
#define AJ_VM_SNAPSHOT_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "../core/internal.h"

/* An image's VM parts (images/build-vm.sh makes them). */
struct vm_image {
	char vm_dir[PATH_MAX];
	char kernel[PATH_MAX + 16];
	char initrd[PATH_MAX + 16];
	char rootfs[PATH_MAX + 16];
};

/* The snapshot for this image, accelerator and memory size, made now if it
 * is not there yet (one boot). dir receives its directory. */
int vm_snapshot_ensure(const struct vm_image *img, const char *accel, unsigned mem_mb,
		       uid_t uid, gid_t gid, char *dir, size_t n, struct aj_error *err);
/* Boots the image once with accel and waits for the guest to be ready:
 * 0 if it was within timeout_ms. The accelerator probe. */
int vm_boot_probe(const struct vm_image *img, const char *run_base, const char *accel, uid_t uid,
		  gid_t gid, double timeout_ms, struct aj_error *err);
/* A run's directory for the jailed QEMU's sockets and log, under base
 * (traversable by the jailed QEMUs, unlike the slot locks' directory), and
 * its removal. */
int vm_run_dir(const char *base, char *out, size_t n, uid_t uid, struct aj_error *err);
void vm_run_dir_remove(const char *dir);
/* Run directories under base whose maker died (a caller SIGKILLed with a
 * run or a session in flight; its QEMU died with it): each belongs to a
 * uid slot of cfg's, and one whose slot's lock can be taken now has no
 * holder left, so it is removed, under that lock. */
void vm_run_dirs_sweep(const struct aj_config *cfg, const char *base);

#endif
