/* What a sandbox whose PID 1 is boot.py is made of, shared by the docker
 * tier's create body and the gvisor tier's OCI spec. */
#ifndef AJ_BOOT_SPEC_H
#define AJ_BOOT_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/internal.h"

/* PID 1's command line, the docker and gvisor tiers': PYTHON -I -S -c boot.py
 * (boot.py, beside this file), then src/core/launch.py, which boot.py starts
 * main.py with, then the program's environment (rule E1, with its egress
 * rows when egress is on, and cfg's variables). -I -S: no environment, user site or
 * site-packages decides what boot.py imports. NULL on ENOMEM. */
json_t *boot_argv(const char *python, bool egress, const struct aj_config *cfg);
/* The environment of PID 1 (rule E1): the program's own (with cfg's
 * checked variables), nothing else of the deployer's. NULL on ENOMEM. */
json_t *boot_environment(bool egress, const struct aj_config *cfg);
/* The tasks boot.py itself adds with egress: its forwarder, one thread
 * (boot.py's Forwarder), which the pids cgroup and RLIMIT_NPROC (per uid:
 * boot.py's is the program's) count as they count a process. */
#define BOOT_EGRESS_TASKS 1
/* The limits a boot.py sandbox is made with: l, with pids raised by
 * exactly BOOT_EGRESS_TASKS when egress is on, so that the program can
 * start as many processes with egress rules as without: the run's limits
 * are the deployer's alone. (A program that reads its RLIMIT_NPROC then
 * sees the forwarder's one more.) */
struct aj_limits boot_limits(const struct aj_limits *l, bool egress);
/* The rlimit table (rule E2) for these limits: HostConfig.Ulimits, or with
 * oci an OCI spec's process.rlimits (gvisor), which alone carries the
 * address space row. NULL on ENOMEM. */
json_t *boot_rlimits(const struct aj_limits *l, bool oci);
/* The seccomp policy as an OCI/Docker profile (JSON): also the gvisor
 * tier's. */
const char *boot_seccomp_json(void);
/* That profile, parsed. With egress, less its refusal of socket(AF_UNIX):
 * boot.py (PID 1) connects to the proxy's unix socket, and takes that
 * refusal back for the program with a filter of its own before the
 * program starts (boot.py's deny_unix_sockets). NULL on ENOMEM, or when
 * the policy has no such rule to lift (it changed: refuse, never guess). */
json_t *boot_seccomp(bool egress);

/* How the limit on writable space is shared among the container's three
 * tmpfs mounts (Docker mounts each on its own), in KiB; they sum to
 * disk_mb. */
struct boot_disk {
	uint64_t tmp_kb, var_tmp_kb, shm_kb;
};
void boot_disk_split(uint32_t disk_mb, struct boot_disk *d);

#endif
