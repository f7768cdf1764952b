/* The program's environment and resource limits, every tier's (rules E1
 * and E2 of docs/design.md; contract.h says who reads them). libc only:
 * the microvm's guest agent is built from this file too. */
#include <string.h>
#include <sys/resource.h>

#include "contract.h"

#define MIB (1024ull * 1024ull)
/* A row's limit in struct aj_limits, every one a uint32_t. */
#define FROM(limit) offsetof(struct aj_limits, limit)
_Static_assert(sizeof(((struct aj_limits *)0)->cpu_sec) == sizeof(uint32_t), "uint32_t limits");

/* E1. Built from nothing: no variable of the caller's or the deployer's
 * (API keys least of all) reaches the program. HOME is the workspace, the
 * program's cwd on every tier. MALLOC_ARENA_MAX: glibc reserves 64 MiB of
 * address space per malloc arena, which under RLIMIT_AS would make a
 * handful of threads fail. */
char *const contract_environment[CONTRACT_ENVIRONMENT_COUNT + 1] = {
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"LANG=C.UTF-8",
	"HOME=" AJ_SESSION_WORKSPACE,
	"TMPDIR=/tmp",
	"MALLOC_ARENA_MAX=2",
	/* Where `pip install` puts packages (docs/egress.md): the image's
	 * site-packages is read-only, and the workspace's tmpfs (the disk
	 * limit) is the program's own. Every runner puts it on sys.path
	 * (launch.py, repl.py, the zygotes), so the next cell imports what a
	 * cell installed. A --target install skips Debian's
	 * externally-managed refusal, which guards the system's packages. */
	"PIP_TARGET=" AJ_SESSION_WORKSPACE "/.packages",
	/* The one CA bundle (docs/egress.md, "HTTPS"), named for the clients
	 * that would otherwise read one of their own: a pip-installed
	 * requests or pip itself (certifi's), curl built elsewhere, and
	 * OpenSSL's file. Without trust_ca the file is the image's bundle;
	 * with it, that bundle and the deployer's CA, read-only. */
	"SSL_CERT_FILE=" CONTRACT_CA_BUNDLE,
	"REQUESTS_CA_BUNDLE=" CONTRACT_CA_BUNDLE,
	"PIP_CERT=" CONTRACT_CA_BUNDLE,
	"CURL_CA_BUNDLE=" CONTRACT_CA_BUNDLE,
	NULL,
};

/* E1, with egress rules (docs/egress.md): every client the image has finds
 * the proxy without being told. Lower and upper case, as tools disagree
 * (curl reads only lower-case http_proxy); ALL_PROXY as SOCKS5 with the
 * name resolved by the proxy ("h"), as the sandbox has no resolver; pip
 * reads PIP_PROXY as well as the environment's. The proxy is the only way
 * out whatever these say: they are convenience, never the protection. */
char *const contract_egress_environment[CONTRACT_EGRESS_ENVIRONMENT_COUNT + 1] = {
	"HTTP_PROXY=" CONTRACT_EGRESS_HTTP_URL,
	"HTTPS_PROXY=" CONTRACT_EGRESS_HTTP_URL,
	"ALL_PROXY=" CONTRACT_EGRESS_SOCKS_URL,
	"http_proxy=" CONTRACT_EGRESS_HTTP_URL,
	"https_proxy=" CONTRACT_EGRESS_HTTP_URL,
	"all_proxy=" CONTRACT_EGRESS_SOCKS_URL,
	"PIP_PROXY=" CONTRACT_EGRESS_HTTP_URL,
	/* The one CA bundle again, for the clients that add to a store of
	 * their own rather than read OpenSSL's (docs/secrets.md): node (its
	 * compiled-in roots, plus this file: the deployer's trust_ca and the
	 * sandbox's egress CA) and git. Only with egress: without it there is
	 * no network for them to verify, and node's start stays as fast. */
	"NODE_EXTRA_CA_CERTS=" CONTRACT_CA_BUNDLE,
	"GIT_SSL_CAINFO=" CONTRACT_CA_BUNDLE,
	NULL,
};

size_t contract_environment_fill(char **out, bool egress, const struct aj_config *cfg)
{
	size_t n = 0;
	for (size_t i = 0; i < CONTRACT_ENVIRONMENT_COUNT; i++)
		out[n++] = contract_environment[i];
	for (size_t i = 0; egress && i < CONTRACT_EGRESS_ENVIRONMENT_COUNT; i++)
		out[n++] = contract_egress_environment[i];
	/* The deployer's last: env.c refused every name above, so none of
	 * them can override the contract's, whichever copy a libc reads. */
	for (uint32_t i = 0; cfg && cfg->env && i < cfg->env_count && i < AJ_MAX_ENV; i++)
		out[n++] = (char *)cfg->env[i];
	out[n] = NULL;
	return n;
}

/* E2. In the order a tier applies them: RLIMIT_NPROC last, after which the
 * setting process itself may count against it. */
const struct contract_rlimit contract_rlimits[] = {
	/* CPU: SIGXCPU at the soft limit, SIGKILL one second later at the
	 * hard one, for a program that catches or ignores SIGXCPU. (gVisor's
	 * sentry counts it on its own clock; the host counts the sandbox's
	 * cgroup there as well, src/gvisor/watch.h.
	 * A session's interpreter moves the soft one to each call's share and
	 * cannot raise the hard one, the session's total.) */
	{RLIMIT_CPU, "cpu", "RLIMIT_CPU", "cpu", FROM(cpu_sec), 1, 1, 0},
	/* Address space: the memory limit where it is no cgroup's. malloc
	 * fails and Python raises MemoryError instead of the host swapping
	 * or OOMing (process); on gvisor the host's OOM killer would take the
	 * sentry, and so the whole sandbox, a session's included. Docker has
	 * no such ulimit and needs none: its memory cgroup bounds the
	 * container, as the container and microvm tiers' cgroups do. */
	{RLIMIT_AS, "address space", "RLIMIT_AS", NULL, FROM(memory_mb), MIB, 0,
	 CONTRACT_IF_ADDRESS_SPACE},
	/* File size: a write past it fails with EFBIG (Python ignores SIGXFSZ). */
	{RLIMIT_FSIZE, "file size", "RLIMIT_FSIZE", "fsize", FROM(file_size_mb), MIB, 0, 0},
	/* Open files: the deployer's bound (EMFILE past it), so no run takes
	 * more of the kernel's file table than it was given; on every tier,
	 * the microvm's too (its frames carry the value, vm_run.open_files). */
	{RLIMIT_NOFILE, "open files", "RLIMIT_NOFILE", "nofile", FROM(open_files), 1, 0, 0},
	/* No core dumps: they would write the program's memory to disk. */
	{RLIMIT_CORE, "core", "RLIMIT_CORE", "core", CONTRACT_FIXED, 0, 0, 0},
	/* A fixed stack makes thread stacks (sized from it) and recursion
	 * depth the same on every host. */
	{RLIMIT_STACK, "stack", "RLIMIT_STACK", "stack", CONTRACT_FIXED, 8 * MIB, 0, 0},
	/* No locked memory: mlock could pin pages the host cannot reclaim. */
	{RLIMIT_MEMLOCK, "memlock", "RLIMIT_MEMLOCK", "memlock", CONTRACT_FIXED, 0, 0, 0},
	/* No POSIX message queues: their memory is charged outside the run. */
	{RLIMIT_MSGQUEUE, "msgqueue", "RLIMIT_MSGQUEUE", "msgqueue", CONTRACT_FIXED, 0, 0, 0},
	/* Processes and threads, counted per real uid: a fork or thread bomb
	 * stops at the limit. Every tier runs the program under a uid of its
	 * own (a slot; uid 1000 in a VM nothing else uses), so it counts the
	 * program's only: a second bound beside the pids cgroup, and on gvisor
	 * the bound (the host's pids cgroup counts gVisor's own threads too). */
	{RLIMIT_NPROC, "processes", "RLIMIT_NPROC", "nproc", FROM(pids), 1, 0,
	 CONTRACT_IF_OWN_UID},
};

const size_t contract_rlimit_count = sizeof contract_rlimits / sizeof contract_rlimits[0];

void contract_rlimit_values(const struct contract_rlimit *row, const struct aj_limits *l,
			    uint64_t *soft, uint64_t *hard)
{
	uint32_t n = 1;
	if (row->field != CONTRACT_FIXED)
		memcpy(&n, (const char *)l + row->field, sizeof n);
	*soft = n * row->unit;
	*hard = *soft + row->hard_extra;
}

int contract_rlimits_each(const struct aj_limits *l, bool address_space, bool own_uid,
			  int (*fn)(const struct contract_rlimit *row, uint64_t soft,
				    uint64_t hard, void *ctx),
			  void *ctx)
{
	for (size_t i = 0; i < contract_rlimit_count; i++) {
		const struct contract_rlimit *row = &contract_rlimits[i];
		if (!contract_rlimit_applies(row, address_space, own_uid))
			continue;
		uint64_t soft, hard;
		contract_rlimit_values(row, l, &soft, &hard);
		int rc = fn(row, soft, hard, ctx);
		if (rc)
			return rc;
	}
	return 0;
}
