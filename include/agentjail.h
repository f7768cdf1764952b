/* agentjail — run untrusted Python in a sandbox and get back what it printed
 * and how it ended.
 *
 *   struct aj_config cfg;
 *   aj_config_init(&cfg);                 // the defaults of DESIGN.md
 *   cfg.tier = AJ_TIER_PROCESS;
 *   struct aj_sandbox *sb;
 *   struct aj_error err;
 *   if (aj_open(&cfg, &sb, &err) != 0) { fprintf(stderr, "%s\n", err.message); ... }
 *   struct aj_result res;
 *   aj_run(sb, code, strlen(code), &res); // res.status, res.stdout_buf, ...
 *   aj_result_free(&res);
 *   aj_close(sb);
 *
 * Functions return 0 or a negative errno; failures carry a message naming the
 * step that failed. aj_run may be called from several threads at once on one
 * sandbox: each call is its own run, isolated from the others.
 */
#ifndef AGENTJAIL_H
#define AGENTJAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGENTJAIL_VERSION "0.3.0"

enum aj_tier {
	AJ_TIER_PROCESS = 0,
	AJ_TIER_CONTAINER,
	AJ_TIER_MICROVM,
	AJ_TIER_DOCKER,
	AJ_TIER_COUNT
};

enum aj_status {
	AJ_STATUS_OK = 0,        /* exit code 0 */
	AJ_STATUS_ERROR,         /* non-zero exit code */
	AJ_STATUS_TIMEOUT,       /* wall clock or CPU time limit */
	AJ_STATUS_MEMORY,        /* the memory limit stopped it */
	AJ_STATUS_OUTPUT_LIMIT,  /* stdout or stderr passed its cap; the run was stopped */
	AJ_STATUS_KILLED,        /* ended by another signal */
	AJ_STATUS_SANDBOX_ERROR, /* the sandbox itself failed; never the code's fault */
	AJ_STATUS_COUNT
};

/* Every limit a deployer sets. Zero never means "unlimited": aj_config_init
 * fills the defaults, and aj_config_validate rejects out-of-range values. */
struct aj_limits {
	double wall_sec;        /* wall clock, enforced by the supervisor */
	uint32_t cpu_sec;       /* CPU seconds (RLIMIT_CPU soft; hard = soft + 1) */
	uint32_t memory_mb;     /* memory (address space in the process tier) */
	uint32_t pids;          /* processes and threads */
	uint32_t file_size_mb;  /* largest file the program may write */
	uint32_t disk_mb;       /* all writable space: /tmp, /var/tmp, /dev/shm, cwd */
	uint32_t output_kb;     /* cap on each of stdout and stderr */
	uint32_t open_files;    /* RLIMIT_NOFILE */
};

#define AJ_DEFAULT_WALL_SEC 10.0
#define AJ_DEFAULT_CPU_SEC 10
#define AJ_DEFAULT_MEMORY_MB 256
#define AJ_DEFAULT_PIDS 64
#define AJ_DEFAULT_FILE_SIZE_MB 16
#define AJ_DEFAULT_DISK_MB 64
#define AJ_DEFAULT_OUTPUT_KB 1024
#define AJ_DEFAULT_OPEN_FILES 256
/* Runs started as root get uid/gid AJ_DEFAULT_UID_BASE + slot: a range no
 * distribution, systemd or subuid allocation hands out. */
#define AJ_DEFAULT_UID_BASE 2000000000u
#define AJ_DEFAULT_SLOTS 64
#define AJ_DEFAULT_PYTHON "/usr/bin/python3"
#define AJ_DEFAULT_IMAGE "default"
#define AJ_DEFAULT_IMAGES_DIR "/var/lib/agentjail/images"

struct aj_config {
	enum aj_tier tier;
	struct aj_limits limits;
	const char *python;     /* interpreter path (absolute); NULL = default */
	uint32_t uid_base;      /* first sandbox uid when started as root */
	uint32_t slots;         /* how many runs may hold their own uid at once */
	const char *state_dir;  /* slot locks; NULL = /run/agentjail */
	/* container tier: the image, by name (in AJ_DEFAULT_IMAGES_DIR or
	 * $AGENTJAIL_IMAGES) or as an absolute path to an image directory;
	 * NULL = "default". */
	const char *image;
	const char *cgroup_root; /* NULL = /sys/fs/cgroup */
	/* microvm tier: "kvm", "tcg", or NULL to use KVM where a probe boot
	 * succeeds (the verdict is cached) and TCG elsewhere. */
	const char *accel;
	/* microvm tier: VMs kept restored and ready, so a run skips QEMU's
	 * start and the restore (0: none). Each still serves one run. */
	uint32_t vm_pool;
	/* docker tier: the engine's unix socket (NULL: $DOCKER_HOST when it is
	 * unix://PATH, else /var/run/docker.sock), and the engine image to run
	 * (NULL: agentjail/IMAGE, which `agentjail image build --docker`
	 * imports; any image with python3 on its PATH will do). */
	const char *docker_socket;
	const char *docker_image;
};

#define AJ_ERROR_MAX 512
struct aj_error {
	int code;                    /* negative errno, 0 if none */
	char message[AJ_ERROR_MAX];  /* "step: reason" */
};

struct aj_result {
	enum aj_status status;
	int exit_code;          /* valid when has_exit_code */
	bool has_exit_code;
	int signal;             /* terminating signal, 0 if none */
	char *stdout_buf;       /* raw bytes, NUL-terminated for convenience */
	size_t stdout_len;
	bool stdout_truncated;
	char *stderr_buf;
	size_t stderr_len;
	bool stderr_truncated;
	double wall_ms;
	double cpu_ms;
	uint64_t memory_kb;     /* peak resident set */
	char *message;          /* why: for sandbox_error, memory, timeout, output_limit; else NULL */
};

struct aj_sandbox;

void aj_config_init(struct aj_config *cfg);
/* 0, or -EINVAL with err naming the limit and its allowed range. */
int aj_config_validate(const struct aj_config *cfg, struct aj_error *err);

int aj_open(const struct aj_config *cfg, struct aj_sandbox **out, struct aj_error *err);
/* Runs code (Python source bytes) in a fresh sandbox. Always fills *res (a
 * failure of the sandbox is status AJ_STATUS_SANDBOX_ERROR with a message);
 * returns 0 when the program ran, -errno when it could not be started. */
int aj_run(struct aj_sandbox *sb, const char *code, size_t len, struct aj_result *res);
void aj_close(struct aj_sandbox *sb);
void aj_result_free(struct aj_result *res);

/* Cancelling a run from another thread (an MCP client's
 * notifications/cancelled, say): aj_cancel_fire stops the sandbox as a
 * timeout would, and the run ends with status killed and the message
 * "cancelled". A token serves one run; aj_cancel_fire is async-signal-safe. */
struct aj_cancel;
int aj_cancel_new(struct aj_cancel **out);
void aj_cancel_fire(struct aj_cancel *c);
void aj_cancel_free(struct aj_cancel *c);
int aj_run_cancellable(struct aj_sandbox *sb, const char *code, size_t len,
		       struct aj_cancel *cancel, struct aj_result *res);

/* Whether a tier can run on this machine; 0 if so, else -errno with the
 * precise reason in err ("network namespace: unshare: EPERM"). */
int aj_check(enum aj_tier tier, const struct aj_config *cfg, struct aj_error *err);

const char *aj_tier_name(enum aj_tier tier);
int aj_tier_parse(const char *name, enum aj_tier *out);
const char *aj_status_name(enum aj_status status);

/* One JSON object of the command-line contract (DESIGN.md), valid UTF-8,
 * malloc'ed; NULL on allocation failure. */
char *aj_result_to_json(const struct aj_result *res, enum aj_tier tier);

#ifdef __cplusplus
}
#endif
#endif
