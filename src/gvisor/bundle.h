/* The OCI bundle of one gVisor sandbox: the config.json runsc reads,
 * built from the run's limits. */
#ifndef AJ_GVISOR_BUNDLE_H
#define AJ_GVISOR_BUNDLE_H

#include <sys/types.h>

#include "../core/internal.h"

struct gvisor_bundle {
	const char *root;        /* the image's root directory on the host */
	const char *python;      /* the interpreter, inside the image */
	uid_t uid;               /* the run's own (a uid slot) */
	gid_t gid;
	const struct aj_limits *limits;
	const struct aj_config *cfg; /* its env: the deployer's variables (rule E1) */
	const char *const *ro_binds; /* cfg.ro_binds, resolved */
	uint32_t ro_bind_count;
	/* The egress proxy's socket directory on the host (src/boot/egress.h),
	 * mounted at BOOT_EGRESS_DIR; NULL: no egress. */
	const char *egress_dir;
};

/* Whether each of b's ro_binds can be mounted in b's image (its SANDBOX
 * there already): 0, or -errno with err naming the path. */
int gvisor_bundle_check_binds(const struct gvisor_bundle *b, struct aj_error *err);
/* Writes DIR/config.json (DIR exists, empty). 0 or -errno with err naming
 * the step. */
int gvisor_bundle_write(const char *dir, const struct gvisor_bundle *b, struct aj_error *err);

#endif
