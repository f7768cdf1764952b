/* The ops table every tier fills. Front ends and the core reach a tier only
 * through this table, so adding one (Firecracker, gVisor) touches no other. */
#ifndef AJ_TIER_H
#define AJ_TIER_H

#include "../core/internal.h"
#include "../core/run_request.h"
#include "../core/session_call.h"

struct tier_ops {
	const char *name;
	/* Why this tier refuses egress rules at open (docs/egress.md); NULL:
	 * it carries the proxy to its sandboxes, runs and sessions alike. */
	const char *egress_refusal;
	/* 0 if the tier can run here, else -errno and the precise reason. */
	int (*check)(const struct aj_config *cfg, struct aj_error *err);
	/* Prepares long-lived state (pools, images); *state may stay NULL. */
	int (*open)(const struct aj_config *cfg, void **state, struct aj_error *err);
	/* One run in a fresh sandbox. Fills res fully, always. */
	int (*run)(void *state, const struct aj_config *cfg, const struct run_request *req,
		   struct aj_result *res);
	void (*close)(void *state);
	/* Sessions (aj_session_open): one sandbox kept alive across calls,
	 * over the state from open. NULL where a tier has none. egress: the
	 * session's proxy (as in run_request), or NULL. */
	int (*session_open)(void *state, const struct aj_config *cfg, struct egress_proxy *egress,
			    void **session, struct aj_error *err);
	/* One call. Fills res (status ok when a reply came, else how the
	 * interpreter ended) and ans. 0, or -errno when the session's sandbox
	 * itself is gone or broken (res says why): the session is closed. */
	int (*session_call)(void *session, const struct aj_config *cfg,
			    const struct session_call *call, struct aj_result *res,
			    struct session_answer *ans);
	/* Destroys the sandbox: nothing of it remains. */
	/* Wakes a background read that waits inside the sandbox for output
	 * (repl.py's proc_read), so that a call waiting behind it goes now.
	 * Called without the core's session lock while a read holds it, its
	 * request short (under PIPE_BUF) and sent, or being sent, in one
	 * piece: a wake must never fall inside a request. A wake that comes
	 * early is lost, and the read waits its time. NULL: the tier cannot,
	 * and reads are kept short while the session is in use instead
	 * (session_poll_ms). */
	void (*session_nudge)(void *session);
	/* The OOM kills in the session's sandbox since since_ms (now_ms's
	 * clock) that no earlier answer counted, counted now (a later ask
	 * does not see them again); 0 where none or unknown. Asked only for a
	 * command that ended by a SIGKILL nobody here sent, to tell the
	 * kernel's OOM killer from other kills (status memory, rule 7 of
	 * src/core/status.h); NULL: the tier cannot tell. */
	uint64_t (*session_oom_kills)(void *session, double since_ms);
	void (*session_close)(void *session);
	/* The session's workspace (AJ_SESSION_WORKSPACE) as this host sees
	 * it: an O_PATH directory fd, the caller's to close, through which the
	 * host may read and write the sandbox's files itself (a checkpoint's
	 * state, never encoded); or -errno. NULL: the tier has no such view
	 * (the workspace is in a VM, or behind runsc's or Docker's files). */
	int (*session_workspace)(void *session, struct aj_error *err);
	/* Freezes every process of the session's sandbox (frozen: no CPU, its
	 * memory kept, nothing runs, not even a signal handler) or thaws it;
	 * 0, or -errno (-ENOTSUP: this sandbox cannot be) with err. A frozen
	 * sandbox can still be closed. NULL: the tier cannot freeze. */
	int (*session_freeze)(void *session, bool frozen, struct aj_error *err);
	/* The host directory whose tree the sandbox sees as / (an image root;
	 * the host's own / on the process tier), from which the core reads
	 * what the view holds (its CA bundle, for trust_ca): 0, or -errno and
	 * why no such directory is known here. */
	int (*view_root)(const struct aj_config *cfg, char *out, size_t n, struct aj_error *err);
	/* The tier shows cfg.trust_ca (at open, the bundle the core made) at
	 * CONTRACT_CA_BUNDLE itself; false: the core adds the bundle to
	 * cfg.ro_binds, which the tier mounts. */
	bool shows_trust_bundle;
	/* Runs whose sandboxes the tier makes ahead: whether this sandbox's
	 * config has them at all, how many wait now, and how many runs took
	 * one so far (for tests: that the path is taken). NULL: none. */
	bool (*made_ahead)(void *state, unsigned *ready, unsigned long *served);
};

/* Opens the tier, runs an empty program, closes it: 0 if that ran with
 * status ok, else the reason (the run's sandbox_error message). */
int tier_trial_run(const struct tier_ops *t, const struct aj_config *cfg, struct aj_error *err);

/* The configured image's directory (IMAGES/NAME or an absolute path); an
 * error naming how to build it if it is missing. */
int image_dir(const struct aj_config *cfg, char *out, size_t n, struct aj_error *err);

/* view_root for a tier that runs the configured image's root. */
int image_view_root(const struct aj_config *cfg, char *out, size_t n, struct aj_error *err);

/* The interpreter is an executable file in the image root, resolved inside
 * it (as it will be once the root is the image's): an error naming which
 * and where if not. */
int image_check_python(const char *root, const char *python, struct aj_error *err);

/* An open refused because the image lacks a module warm mode preloads
 * (ModuleNotFoundError in err): err then names the image and the one that
 * has the usual modules, since it is the image's lack, not the tier's. */
void image_lacks_module(const struct aj_config *cfg, struct aj_error *err);

extern const struct tier_ops process_tier;
extern const struct tier_ops container_tier;
extern const struct tier_ops microvm_tier;
extern const struct tier_ops docker_tier;
extern const struct tier_ops gvisor_tier;

#endif
