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
 * hardened HostConfig built from the limits. NULL on ENOMEM. */
json_t *docker_container_spec(const struct aj_config *cfg, const char *image, uid_t uid,
			      gid_t gid, const char *owner);

/* PID 1's command line, also the gvisor tier's: PYTHON -I -S -c boot.py
 * (src/boot/boot.py), then src/core/launch.py, which boot.py starts
 * main.py with, then the program's environment (rule E1). -I -S: no
 * environment, user site or site-packages decides what boot.py imports.
 * NULL on ENOMEM. */
json_t *docker_boot_argv(const char *python);
/* The environment of PID 1 (rule E1): the program's own, nothing of the
 * deployer's. NULL on ENOMEM. */
json_t *docker_environment(void);
/* The rlimit table (rule E2) for these limits: HostConfig.Ulimits, or with
 * oci an OCI spec's process.rlimits (gvisor), which alone carries the
 * address space row. NULL on ENOMEM. */
json_t *docker_rlimits(const struct aj_limits *l, bool oci);
/* The seccomp policy as an OCI/Docker profile (JSON): also the gvisor
 * tier's. */
const char *docker_seccomp_json(void);

/* How the limit on writable space is shared among the container's three
 * tmpfs mounts (Docker mounts each on its own), in KiB; they sum to
 * disk_mb. */
struct docker_disk {
	uint64_t tmp_kb, var_tmp_kb, shm_kb;
};
void docker_disk_split(uint32_t disk_mb, struct docker_disk *d);

#endif
