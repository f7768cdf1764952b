/* The host's requests to a zygote and its replies (warm.c, helper.c): one
 * SOCK_SEQPACKET message each way per run, with fds attached. Both ends are
 * this build's: the layout is the struct's. */
#ifndef AJ_WARM_PROTOCOL_H
#define AJ_WARM_PROTOCOL_H

#include <stdint.h>

#include "agentjail.h"

#define WARM_MAGIC 0x6d726177u /* "warm" */

/* The fds a request carries, in this order. */
enum {
	WARM_FD_OUT,    /* the program's stdout (the pipe's write end) */
	WARM_FD_ERR,    /* its stderr */
	WARM_FD_REPORT, /* init's report pipe */
	WARM_FD_CODE,   /* the program, a file init copies into the workspace (made
			 * ahead: the socket its "go" and program come on) */
	WARM_FD_CGROUP, /* v2: the run's cgroup directory; v1: its tasks files */
};
#define WARM_MAX_CGROUP_FDS 4
/* After the cgroup fds, with egress: the run's door to the proxy
 * (jail_spec.egress_fd). */
#define WARM_MAX_FDS (WARM_FD_CGROUP + WARM_MAX_CGROUP_FDS + 1)

struct warm_request {
	uint32_t magic;
	uint32_t seq;                 /* echoed in the reply */
	uint32_t uid, gid;            /* the run's */
	struct aj_limits limits;
	uint8_t address_space_limit;  /* RLIMIT_AS is the memory limit (process tier) */
	uint8_t cgroup_ns;            /* a cgroup namespace at the run's cgroup */
	uint8_t cgroup_v2;            /* the cgroup fd is a v2 directory to be born in */
	uint8_t n_cgroup_fds;
	uint8_t own_users;            /* the run's own passwd and group (process tier) */
	uint8_t egress;               /* one more fd, the egress door; E1's egress rows */
	/* Made ahead (warm_prepare): WARM_FD_CODE is the run's life socket,
	 * on which "go" and the program come later (jail_spec.code_after_go). */
	uint8_t ahead;
};

struct warm_reply {
	uint32_t magic;
	uint32_t seq;
	int32_t err;                  /* 0: init started, its pidfd attached; else -errno */
	char message[244];
};

#endif
