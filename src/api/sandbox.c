/* aj_open / aj_run / aj_close: the public API over the tier ops tables. This
 * file checks what every tier would otherwise check again (the config, the
 * code) and never branches on which tier it drives. */
#include <errno.h>
#include <openssl/crypto.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../tiers/tier.h"
#include "../core/contract.h"
#include "../core/internal.h"
#include "../core/stream_tap.h"
#include "../core/secret.h"
#include "../egress/mitm_ca.h"
#include "../egress/proxy.h"
#include "api.h"

static const struct tier_ops *const tiers[AJ_TIER_COUNT] = {
	[AJ_TIER_PROCESS] = &process_tier,
	[AJ_TIER_CONTAINER] = &container_tier,
	[AJ_TIER_MICROVM] = &microvm_tier,
	[AJ_TIER_DOCKER] = &docker_tier,
	[AJ_TIER_GVISOR] = &gvisor_tier,
};

struct aj_sandbox {
	struct aj_config cfg;
	char *python;      /* owned copies: the caller's strings may go away */
	char *state_dir;
	char *image;
	char *cgroup_root;
	char *accel;
	char *preload;
	char **ro_binds;   /* resolved: "REALHOST:SANDBOX" */
	char **allow_hosts, **allow_cidrs; /* egress rules, copied */
	char *trust_dir, *trust_file; /* trust_ca: the bundle made at open */
	char **env;        /* the deployer's variables, copied */
	char **exec_env_allow; /* the names a command's env may set, copied */
	char *secrets, *egress_ca; /* copied; the secrets wiped at close */
	/* What the caller gave, before open added to it (the trust bundle's
	 * bind, the placeholders' variables, the bundle for trust_ca): a
	 * copy's config (a fork's) is opened from these. */
	char *trust_ca_given;
	uint32_t ro_binds_given, env_given;
	struct mitm_ca *mitm;      /* with secrets: the CA interception mints from */
	const struct tier_ops *ops;
	void *state;
	struct tool_packages packages; /* tool.c's probe, run once */
};

/* The host paths, resolved now (ro_bind.c): what the runs are shown is
 * what they named when the sandbox opened. */
static int own_ro_binds(struct aj_sandbox *sb, struct aj_error *err)
{
	uint32_t n = sb->cfg.ro_bind_count;
	if (n == 0) {
		sb->cfg.ro_binds = NULL;
		return 0;
	}
	if (!(sb->ro_binds = calloc(n, sizeof *sb->ro_binds)))
		return error_set(err, -ENOMEM, "open: out of memory");
	for (uint32_t i = 0; i < n; i++) {
		int rc = ro_bind_resolve(sb->cfg.ro_binds[i], &sb->ro_binds[i], err);
		if (rc)
			return rc;
	}
	sb->cfg.ro_binds = (const char *const *)sb->ro_binds;
	return 0;
}

/* trust_ca: the view's CA bundle and the deployer's certificates, joined
 * now into a file of this sandbox's (src/core/trust_ca.c), which every run
 * and session sees read-only at CONTRACT_CA_BUNDLE: through cfg.ro_binds
 * on the tiers that mount host paths, by the tier itself on the others
 * (the microvm guest's agent). In sb->cfg, trust_ca names that bundle. */
static int own_trust_bundle(struct aj_sandbox *sb, struct aj_error *err)
{
	const struct tier_ops *ops = tiers[sb->cfg.tier];
	if (!sb->cfg.trust_ca && !sb->mitm)
		return 0;
	char root[PATH_MAX];
	int rc;
	if ((rc = ops->view_root(&sb->cfg, root, sizeof root, err))) {
		char why[AJ_ERROR_MAX];
		snprintf(why, sizeof why, "%s", err->message);
		return error_set(err, rc, "trust_ca: %s", why);
	}
	size_t extra_len = 0;
	const char *extra = sb->mitm ? mitm_ca_pem(sb->mitm, &extra_len) : NULL;
	if ((rc = trust_bundle_make(&sb->cfg, root, extra, extra_len, &sb->trust_dir,
				    &sb->trust_file, err)))
		return rc;
	sb->cfg.trust_ca = sb->trust_file;
	if (ops->shows_trust_bundle)
		return 0;
	uint32_t n = sb->cfg.ro_bind_count;
	char **list = realloc(sb->ro_binds, (n + 1) * sizeof *list);
	if (!list)
		return error_set(err, -ENOMEM, "open: out of memory");
	sb->ro_binds = list;
	size_t len = strlen(sb->trust_file) + 1 + sizeof CONTRACT_CA_BUNDLE;
	if (!(list[n] = malloc(len)))
		return error_set(err, -ENOMEM, "open: out of memory");
	snprintf(list[n], len, "%s:%s", sb->trust_file, CONTRACT_CA_BUNDLE);
	sb->cfg.ro_binds = (const char *const *)list;
	sb->cfg.ro_bind_count = n + 1;
	return 0;
}

/* Secrets (issue 39): a copy of their text (every proxy parses it again),
 * the CA the proxy mints leaves from (its key only in this process), and
 * for each placeholder secret AJ_SECRET_NAME=AJ_SECRET_NAME in the
 * program's environment: the placeholder, never the value. Before the
 * trust bundle, which gains the CA's certificate. */
static int own_secrets(struct aj_sandbox *sb, const struct aj_config *cfg, struct aj_error *err)
{
	sb->cfg.secrets = sb->cfg.egress_ca = NULL;
	if (cfg->egress_ca && !(sb->cfg.egress_ca = sb->egress_ca = strdup(cfg->egress_ca)))
		return error_set(err, -ENOMEM, "open: out of memory");
	struct secret_set set;
	char why[AJ_ERROR_MAX];
	int rc = secret_set_parse(cfg->secrets, &set, why, sizeof why);
	if (rc)
		return error_set(err, rc, "%s", why);
	if (!set.n)
		return 0;
	uint32_t placeholders = 0;
	for (uint32_t i = 0; i < set.n; i++)
		placeholders += set.s[i].placeholder;
	if (sb->cfg.env_count + placeholders > AJ_MAX_ENV) {
		secret_set_free(&set);
		return error_set(err, -EINVAL,
				 "secrets: %u placeholder variables and %u env variables pass the "
				 "%d the sandbox takes",
				 placeholders, sb->cfg.env_count, AJ_MAX_ENV);
	}
	char **env = realloc(sb->env, (sb->cfg.env_count + placeholders) * sizeof *env);
	if (env)
		sb->env = env;
	for (uint32_t i = 0; env && !rc && i < set.n; i++) {
		if (!set.s[i].placeholder)
			continue;
		const char *ph = set.s[i].placeholder_text;
		size_t len = 2 * strlen(ph) + 2;
		/* A config that came from a sandbox (a fork's, a woken pause's)
		 * has it already. */
		bool there = false;
		for (uint32_t k = 0; k < sb->cfg.env_count && !there; k++)
			there = !strncmp(env[k], ph, strlen(ph)) && env[k][strlen(ph)] == '=';
		if (there)
			continue;
		if (!(env[sb->cfg.env_count] = malloc(len)))
			rc = -ENOMEM;
		else
			snprintf(env[sb->cfg.env_count++], len, "%s=%s", ph, ph);
	}
	sb->cfg.env = (const char *const *)sb->env;
	secret_set_free(&set);
	if (!env || rc || !(sb->cfg.secrets = sb->secrets = strdup(cfg->secrets)))
		return error_set(err, -ENOMEM, "open: out of memory");
	return mitm_ca_new(&sb->mitm, err);
}

/* Copies of the rule strings: every run's proxy reads them again. */
static int own_rules(char ***own, const char *const **rules, uint32_t n, struct aj_error *err)
{
	if (n == 0) {
		*rules = NULL;
		return 0;
	}
	if (!(*own = calloc(n, sizeof **own)))
		return error_set(err, -ENOMEM, "open: out of memory");
	for (uint32_t i = 0; i < n; i++)
		if (!((*own)[i] = strdup((*rules)[i])))
			return error_set(err, -ENOMEM, "open: out of memory");
	*rules = (const char *const *)*own;
	return 0;
}

static void free_rules(char **own, uint32_t n)
{
	for (uint32_t i = 0; own && i < n; i++)
		free(own[i]);
	free(own);
}

int aj_open(const struct aj_config *cfg, struct aj_sandbox **out, struct aj_error *err)
{
	int rc;

	*out = NULL;
	if ((rc = aj_config_validate(cfg, err)))
		return rc;
	/* Rules ask for egress, which this tier cannot carry: refused, never
	 * run with a network other than the one asked for. */
	if (egress_wanted(cfg) && tiers[cfg->tier]->egress_refusal)
		return error_set(err, -EOPNOTSUPP,
				 "egress: the %s tier refuses allow-host and allow-cidr rules: %s "
				 "(without rules it has no network at all)",
				 aj_tier_name(cfg->tier), tiers[cfg->tier]->egress_refusal);
	struct aj_sandbox *sb = calloc(1, sizeof *sb);
	if (!sb)
		return error_set(err, -ENOMEM, "open: out of memory");
	pthread_mutex_init(&sb->packages.lock, NULL);
	sb->cfg = *cfg;
	sb->python = strdup(cfg->python ? cfg->python : AJ_DEFAULT_PYTHON);
	sb->state_dir = cfg->state_dir ? strdup(cfg->state_dir) : NULL;
	sb->image = cfg->image ? strdup(cfg->image) : NULL;
	sb->cgroup_root = cfg->cgroup_root ? strdup(cfg->cgroup_root) : NULL;
	sb->accel = cfg->accel ? strdup(cfg->accel) : NULL;
	sb->preload = cfg->preload ? strdup(cfg->preload) : NULL;
	if (!sb->python || (cfg->state_dir && !sb->state_dir) || (cfg->image && !sb->image) ||
	    (cfg->cgroup_root && !sb->cgroup_root) || (cfg->accel && !sb->accel) ||
	    (cfg->preload && !sb->preload)) {
		aj_close(sb);
		return error_set(err, -ENOMEM, "open: out of memory");
	}
	sb->cfg.python = sb->python;
	sb->cfg.state_dir = sb->state_dir;
	sb->cfg.image = sb->image;
	sb->cfg.cgroup_root = sb->cgroup_root;
	sb->cfg.accel = sb->accel;
	sb->cfg.preload = sb->preload;
	sb->ro_binds_given = cfg->ro_bind_count;
	sb->env_given = cfg->env_count;
	if (cfg->trust_ca && !(sb->trust_ca_given = strdup(cfg->trust_ca))) {
		aj_close(sb);
		return error_set(err, -ENOMEM, "open: out of memory");
	}
	if ((rc = own_ro_binds(sb, err)) ||
	    (rc = own_rules(&sb->env, &sb->cfg.env, cfg->env_count, err)) ||
	    (rc = own_secrets(sb, cfg, err)) || (rc = own_trust_bundle(sb, err)) ||
	    (rc = own_rules(&sb->allow_hosts, &sb->cfg.allow_hosts, cfg->allow_host_count, err)) ||
	    (rc = own_rules(&sb->allow_cidrs, &sb->cfg.allow_cidrs, cfg->allow_cidr_count, err)) ||
	    (rc = own_rules(&sb->exec_env_allow, &sb->cfg.exec_env_allow, cfg->exec_env_allow_count,
			    err))) {
		aj_close(sb);
		return rc;
	}
	sb->ops = tiers[cfg->tier];
	if ((rc = sb->ops->open(&sb->cfg, &sb->state, err))) {
		sb->ops = NULL;
		aj_close(sb);
		return rc;
	}
	*out = sb;
	return 0;
}

int code_check(const char *code, size_t len, struct aj_result *res)
{
	if (!code) {
		result_sandbox_error(res, "code: missing");
		return -EINVAL;
	}
	if (len > AJ_MAX_CODE_BYTES) {
		result_sandbox_error(res, "code: %zu bytes is more than the %u allowed", len,
				     AJ_MAX_CODE_BYTES);
		return -E2BIG;
	}
	const char *nul = memchr(code, '\0', len);
	if (nul) {
		result_sandbox_error(res, "code: contains a NUL byte at offset %zu",
				     (size_t)(nul - code));
		return -EINVAL;
	}
	return 0;
}

struct aj_cancel {
	int fd;
};

int aj_cancel_new(struct aj_cancel **out)
{
	struct aj_cancel *c = malloc(sizeof *c);
	if (!c)
		return -ENOMEM;
	c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->fd < 0) {
		int e = errno;
		free(c);
		return -e;
	}
	*out = c;
	return 0;
}

void aj_cancel_fire(struct aj_cancel *c)
{
	uint64_t one = 1;
	if (c)
		(void)!write(c->fd, &one, sizeof one);
}

void aj_cancel_free(struct aj_cancel *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c);
}

int aj_run_streaming(struct aj_sandbox *sb, const char *code, size_t len, struct aj_cancel *cancel,
		     const struct aj_stream *stream, struct aj_result *res)
{
	int rc;

	result_init(res);
	if (!sb) {
		result_sandbox_error(res, "run: no sandbox");
		rc = -EINVAL;
	} else if (stream && !stream->fn) {
		result_sandbox_error(res, "run: the stream has no fn to deliver events to");
		rc = -EINVAL;
	} else if (!(rc = code_check(code, len, res))) {
		struct run_request req = {.code = code, .len = len, .cancel_fd = cancel_fd(cancel)};
		struct aj_error err = {0};
		/* One proxy per run, stopped with it: nothing of the run's
		 * network outlives it. */
		if (stream && (rc = stream_tap_start(stream, &req.tap)))
			result_sandbox_error(res, "run: the stream's delivery thread: %s",
					     strerror(-rc));
		else if (egress_wanted(&sb->cfg) &&
			 (rc = egress_proxy_start(&sb->cfg, sb->mitm, &req.egress, &err)))
			result_sandbox_error(res, "%s", err.message);
		else
			rc = sb->ops->run(sb->state, &sb->cfg, &req, res);
		if (req.egress) {
			egress_proxy_stop(req.egress);
			res->egress_log = egress_proxy_take_log(req.egress);
			egress_proxy_free(req.egress);
		}
		/* Every event is delivered before the run returns. */
		stream_tap_catch_up(req.tap, res);
		stream_tap_finish(req.tap);
	}
	result_ensure_streams(res);
	return rc;
}

int aj_run_cancellable(struct aj_sandbox *sb, const char *code, size_t len,
		       struct aj_cancel *cancel, struct aj_result *res)
{
	return aj_run_streaming(sb, code, len, cancel, NULL, res);
}

int aj_run(struct aj_sandbox *sb, const char *code, size_t len, struct aj_result *res)
{
	return aj_run_cancellable(sb, code, len, NULL, res);
}

const struct tier_ops *sandbox_ops(const struct aj_sandbox *sb)
{
	return sb->ops;
}

void *sandbox_state(const struct aj_sandbox *sb)
{
	return sb->state;
}

struct tool_packages *sandbox_packages(struct aj_sandbox *sb)
{
	return &sb->packages;
}

const struct aj_config *sandbox_config(const struct aj_sandbox *sb)
{
	return &sb->cfg;
}

struct mitm_ca *sandbox_mitm_ca(const struct aj_sandbox *sb)
{
	return sb->mitm;
}

void sandbox_given_config(const struct aj_sandbox *sb, struct aj_config *out)
{
	*out = sb->cfg;
	out->trust_ca = sb->trust_ca_given;
	out->ro_bind_count = sb->ro_binds_given;
	out->env_count = sb->env_given;
}

int cancel_fd(const struct aj_cancel *c)
{
	return c ? c->fd : -1;
}

void aj_close(struct aj_sandbox *sb)
{
	if (!sb)
		return;
	if (sb->ops)
		sb->ops->close(sb->state);
	for (uint32_t i = 0; sb->ro_binds && i < sb->cfg.ro_bind_count; i++)
		free(sb->ro_binds[i]);
	free(sb->ro_binds);
	trust_bundle_remove(sb->trust_dir);
	free(sb->trust_file);
	free_rules(sb->allow_hosts, sb->cfg.allow_host_count);
	free_rules(sb->allow_cidrs, sb->cfg.allow_cidr_count);
	free_rules(sb->env, sb->cfg.env_count);
	free_rules(sb->exec_env_allow, sb->cfg.exec_env_allow_count);
	if (sb->secrets) {
		OPENSSL_cleanse(sb->secrets, strlen(sb->secrets));
		free(sb->secrets);
	}
	free(sb->egress_ca);
	free(sb->trust_ca_given);
	mitm_ca_unref(sb->mitm);
	free(sb->python);
	free(sb->state_dir);
	free(sb->image);
	free(sb->cgroup_root);
	free(sb->accel);
	free(sb->preload);
	pthread_mutex_destroy(&sb->packages.lock);
	free(sb);
}

int aj_check(enum aj_tier tier, const struct aj_config *cfg, struct aj_error *err)
{
	struct aj_config c;
	int rc;

	if ((unsigned)tier >= AJ_TIER_COUNT)
		return error_set(err, -EINVAL, "tier: unknown tier %d", (int)tier);
	if (cfg)
		c = *cfg;
	else
		aj_config_init(&c);
	c.tier = tier;
	if (!c.python)
		c.python = AJ_DEFAULT_PYTHON;
	if ((rc = aj_config_validate(&c, err)))
		return rc;
	return tiers[tier]->check(&c, err);
}

const char *aj_version(void)
{
	return AGENTJAIL_VERSION;
}

bool sandbox_made_ahead(struct aj_sandbox *sb, unsigned *ready, unsigned long *served)
{
	*ready = 0;
	*served = 0;
	return sb->ops->made_ahead && sb->state && sb->ops->made_ahead(sb->state, ready, served);
}
