/* The accelerator the jailed QEMUs use: KVM where a probe boot with it
 * succeeds, TCG elsewhere, asked once per machine and the verdict cached
 * (with its reason) in the state directory; the deployer may force either
 * (cfg.accel). */
#ifndef AJ_VM_ACCEL_H
#define AJ_VM_ACCEL_H

#include <stddef.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "snapshot.h"

#define VM_ACCEL_CACHE "/var/lib/agentjail/vm-accel"

/* "kvm" or "tcg" into accel (n bytes): forced if not NULL (anything else
 * is -EINVAL), else the cache's verdict, else a probe boot of img under
 * uid (its run directory under run_base), whose verdict is cached. */
int vm_accel_choose(const struct vm_image *img, const char *run_base, const char *forced,
		    uid_t uid, char *accel, size_t n, struct aj_error *err);
/* The jailed QEMUs' group: /dev/kvm's under KVM (the device is reached
 * through its group only), else fallback. */
gid_t vm_accel_group(const char *accel, gid_t fallback);
/* What check says of the accelerator (err's message, code 0): forced, or
 * the cached verdict and its reason. */
void vm_accel_describe(const char *forced, struct aj_error *err);

#endif
