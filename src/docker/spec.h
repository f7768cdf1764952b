/* What one run's container is: the create body the docker tier sends. */
#ifndef AJ_DOCKER_SPEC_H
#define AJ_DOCKER_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../core/internal.h"

/* The label every container of agentjail's carries, so leftovers can be
 * found (and the tests can count them). */
#define DOCKER_LABEL "org.agentjail.run"

/* The engine image the config names: docker_image, else agentjail/NAME for
 * the image NAME (or an image directory's base name). */
int docker_image_name(const struct aj_config *cfg, char *out, size_t n, struct aj_error *err);

/* The POST /containers/create body: the image, PID 1 (boot.py), and the
 * hardened HostConfig built from the limits. egress_dir: the host
 * directory of the egress proxy's socket (src/boot/egress.h), mounted
 * read-only at BOOT_EGRESS_DIR, with E1's egress rows; NULL: no egress.
 * NULL on ENOMEM. */
json_t *docker_container_spec(const struct aj_config *cfg, const char *image, uid_t uid,
			      gid_t gid, const char *owner, const char *egress_dir);

#endif
