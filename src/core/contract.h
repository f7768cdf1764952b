/* The program's world, as data every tier reads (docs/design.md, rules E1
 * and E2): the environment it starts with and the resource limits on each
 * of its processes. One table each; a tier walks it, never keeps a copy:
 * setrlimit on the process, container and warm tiers (src/linux/rlimits.c)
 * and in the microvm guest (agent.c hands the rows to zygote.py;
 * session.c), the OCI spec's rlimits on gvisor, HostConfig.Ulimits on
 * docker, and the environment of every interpreter and PID 1.
 *
 * libc only: the microvm's static guest agent compiles this file too
 * (images/build-vm.sh). */
#ifndef AJ_CONTRACT_H
#define AJ_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../include/agentjail.h"

/* E1. Entries before the NULL. */
#define CONTRACT_ENVIRONMENT_COUNT 10
/* NULL-terminated, as execve takes it. */
extern char *const contract_environment[CONTRACT_ENVIRONMENT_COUNT + 1];

/* E1 with egress rules: these rows too, after the ones above. The proxy
 * listens on 127.0.0.1:CONTRACT_EGRESS_PORT inside every sandbox. */
#define CONTRACT_EGRESS_PORT 3128
#define CONTRACT_EGRESS_PORT_TEXT "3128"
#define CONTRACT_EGRESS_HTTP_URL "http://127.0.0.1:3128"
#define CONTRACT_EGRESS_SOCKS_URL "socks5h://127.0.0.1:3128"
#define CONTRACT_EGRESS_ENVIRONMENT_COUNT 9
extern char *const contract_egress_environment[CONTRACT_EGRESS_ENVIRONMENT_COUNT + 1];

/* The CA bundle every client in the sandbox verifies TLS with, on every
 * tier: the image's (the host's on the process tier), or with trust_ca the
 * bundle made when the sandbox opened, shown read-only here
 * (src/core/trust_ca.c). Rule E1's rows name it. */
#define CONTRACT_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
/* E1 whole: the rows above, the egress rows when egress is set, then the
 * deployer's variables (cfg->env, which aj_config_validate checked; cfg
 * may be NULL), into out[CONTRACT_ENVIRONMENT_MAX + 1], NULL-terminated,
 * as execve takes it. The strings are the tables' and cfg's, not copies.
 * Returns how many. Every tier builds the program's environment with it. */
#define CONTRACT_ENVIRONMENT_MAX \
	(CONTRACT_ENVIRONMENT_COUNT + CONTRACT_EGRESS_ENVIRONMENT_COUNT + AJ_MAX_ENV)
size_t contract_environment_fill(char **out, bool egress, const struct aj_config *cfg);

/* A row whose value is its own, whatever the deployer set. */
#define CONTRACT_FIXED SIZE_MAX

/* When a row applies; 0: on every tier. */
enum {
	/* The memory limit as address space: only a tier whose memory has
	 * no cgroup around the run (process) or whose cgroup's OOM kill
	 * would take more than the program (gvisor's sentry). */
	CONTRACT_IF_ADDRESS_SPACE = 1 << 0,
	/* Counted per real uid: only meaningful with a uid no one else uses. */
	CONTRACT_IF_OWN_UID = 1 << 1,
};

/* E2. soft = the limit at field * unit (unit itself when field is
 * CONTRACT_FIXED); hard = soft + hard_extra. */
struct contract_rlimit {
	int resource;           /* RLIMIT_* */
	const char *word;       /* in errors: "rlimit WORD: ERRNO" */
	const char *oci;        /* the OCI runtime spec's type (gvisor) */
	const char *docker;     /* HostConfig.Ulimits' name; NULL: Docker has none */
	size_t field;           /* offsetof a uint32_t of struct aj_limits, or CONTRACT_FIXED */
	uint64_t unit;
	uint64_t hard_extra;
	unsigned when;          /* CONTRACT_IF_* */
};

extern const struct contract_rlimit contract_rlimits[];
extern const size_t contract_rlimit_count;

/* The row's values for these limits. */
void contract_rlimit_values(const struct contract_rlimit *row, const struct aj_limits *l,
			    uint64_t *soft, uint64_t *hard);

/* Whether the row applies to a tier with these properties. */
static inline bool contract_rlimit_applies(const struct contract_rlimit *row,
					   bool address_space, bool own_uid)
{
	return (!(row->when & CONTRACT_IF_ADDRESS_SPACE) || address_space) &&
	       (!(row->when & CONTRACT_IF_OWN_UID) || own_uid);
}

/* Calls fn with each row that applies to a tier with these properties, in
 * the table's order, and the row's values for these limits; returns the
 * first nonzero fn returns, else 0. */
int contract_rlimits_each(const struct aj_limits *l, bool address_space, bool own_uid,
			  int (*fn)(const struct contract_rlimit *row, uint64_t soft,
				    uint64_t hard, void *ctx),
			  void *ctx);

#endif
