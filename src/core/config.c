#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_rule.h"
#include "internal.h"
#include "secret.h"

static const char *const tier_names[AJ_TIER_COUNT] = {
	[AJ_TIER_PROCESS] = "process",
	[AJ_TIER_CONTAINER] = "container",
	[AJ_TIER_MICROVM] = "microvm",
	[AJ_TIER_DOCKER] = "docker",
	[AJ_TIER_GVISOR] = "gvisor",
};

static const char *const status_names[AJ_STATUS_COUNT] = {
	[AJ_STATUS_OK] = "ok",
	[AJ_STATUS_ERROR] = "error",
	[AJ_STATUS_TIMEOUT] = "timeout",
	[AJ_STATUS_MEMORY] = "memory",
	[AJ_STATUS_OUTPUT_LIMIT] = "output_limit",
	[AJ_STATUS_KILLED] = "killed",
	[AJ_STATUS_SANDBOX_ERROR] = "sandbox_error",
};

const char *aj_tier_name(enum aj_tier tier)
{
	return (unsigned)tier < AJ_TIER_COUNT ? tier_names[tier] : "unknown";
}

int aj_tier_parse(const char *name, enum aj_tier *out)
{
	for (int t = 0; t < AJ_TIER_COUNT; t++) {
		if (name && strcmp(name, tier_names[t]) == 0) {
			*out = (enum aj_tier)t;
			return 0;
		}
	}
	return -EINVAL;
}

const char *aj_status_name(enum aj_status status)
{
	return (unsigned)status < AJ_STATUS_COUNT ? status_names[status] : "unknown";
}

void aj_config_init(struct aj_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->tier = AJ_TIER_PROCESS;
	cfg->limits = (struct aj_limits){
		.wall_sec = AJ_DEFAULT_WALL_SEC,
		.cpu_sec = AJ_DEFAULT_CPU_SEC,
		.memory_mb = AJ_DEFAULT_MEMORY_MB,
		.pids = AJ_DEFAULT_PIDS,
		.file_size_mb = AJ_DEFAULT_FILE_SIZE_MB,
		.disk_mb = AJ_DEFAULT_DISK_MB,
		.output_kb = AJ_DEFAULT_OUTPUT_KB,
		.open_files = AJ_DEFAULT_OPEN_FILES,
	};
	cfg->python = AJ_DEFAULT_PYTHON;
	cfg->uid_base = AJ_DEFAULT_UID_BASE;
	cfg->slots = AJ_DEFAULT_SLOTS;
	cfg->session = (struct aj_session_limits){
		.idle_sec = AJ_DEFAULT_SESSION_IDLE_SEC,
		.lifetime_sec = AJ_DEFAULT_SESSION_LIFETIME_SEC,
		.cpu_sec = AJ_DEFAULT_SESSION_CPU_SEC,
		.max_sessions = AJ_DEFAULT_MAX_SESSIONS,
		.transfer_mb = AJ_DEFAULT_TRANSFER_MB,
		.images = AJ_DEFAULT_IMAGES,
		.image_kb = AJ_DEFAULT_IMAGE_KB,
	};
	cfg->egress = (struct aj_egress_limits){
		.out_mb = AJ_DEFAULT_EGRESS_OUT_MB,
		.in_mb = AJ_DEFAULT_EGRESS_IN_MB,
		.connections = AJ_DEFAULT_EGRESS_CONNECTIONS,
	};
}

/* The allowed range of each limit. The lower bounds are what Python needs to
 * start at all; the upper ones keep a typo from meaning "unlimited". */
struct range {
	const char *name;
	const char *unit;
	uint32_t min, max;
};
static const struct range cpu_range = {"cpu", "seconds", 1, 86400};
static const struct range memory_range = {"memory", "MiB", 32, 1048576};
static const struct range pids_range = {"pids", "processes", 1, 32768};
static const struct range file_size_range = {"file-size", "MiB", 1, 1048576};
static const struct range disk_range = {"disk", "MiB", 1, 65536};
static const struct range output_range = {"output", "KiB", 1, 1048576};
static const struct range open_files_range = {"open-files", "files", 16, 65536};
static const struct range slots_range = {"slots", "slots", 1, 65536};
static const struct range session_cpu_range = {"session-cpu", "seconds", 1, 864000};
static const struct range max_sessions_range = {"max-sessions", "sessions", 1, 4096};
/* A transfer travels base64 in one frame: 256 MiB keeps that in memory. */
static const struct range transfer_range = {"transfer", "MiB", 1, 256};
static const struct range images_range = {"images", "images", 0, 64};
static const struct range image_kb_range = {"image-size", "KiB", 1, 65536};

static int check_range(const struct range *r, uint32_t v, struct aj_error *err)
{
	if (v < r->min || v > r->max)
		return error_set(err, -EINVAL, "%s: %u is out of range (%u to %u %s)",
				 r->name, v, r->min, r->max, r->unit);
	return 0;
}

/* preload is handed to the zygote as the modules it imports before its
 * first run. Only a plain dotted name (ASCII [A-Za-z_][A-Za-z0-9_]* parts
 * joined by '.') is accepted: that is all `import` takes, so a space, a
 * path or a fragment of code is refused here, with the item named, rather
 * than reaching the interpreter. The bounds keep a pasted list from making
 * a zygote that takes minutes to start. */
#define PRELOAD_MAX_MODULES 32
#define PRELOAD_MAX_CHARS 1024

static bool is_module_name(const char *s, size_t n)
{
	bool start = true; /* at the first character of a dotted part */
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
		bool digit = c >= '0' && c <= '9';
		if (c == '.' && !start)
			start = true;
		else if (letter || (digit && !start))
			start = false;
		else
			return false;
	}
	return n > 0 && !start;
}

static int check_preload(const char *list, struct aj_error *err)
{
	size_t len = strlen(list);
	if (len > PRELOAD_MAX_CHARS)
		return error_set(err, -EINVAL, "preload: %zu characters is too long (at most %d)",
				 len, PRELOAD_MAX_CHARS);
	unsigned modules = 0;
	for (const char *p = list;; p++) {
		size_t n = strcspn(p, ",");
		if (n == 0)
			return error_set(err, -EINVAL,
					 "preload: '%s' has an empty module name (a stray comma)", list);
		if (!is_module_name(p, n))
			return error_set(err, -EINVAL, "preload: '%.*s' is not a module name", (int)n,
					 p);
		if (++modules > PRELOAD_MAX_MODULES)
			return error_set(err, -EINVAL, "preload: more than %d modules",
					 PRELOAD_MAX_MODULES);
		p += n;
		if (!*p)
			return 0;
	}
}

static const struct range egress_out_range = {"egress-out-mb", "MiB", 1, 1048576};
static const struct range egress_in_range = {"egress-in-mb", "MiB", 1, 1048576};
/* The connections over a run's or session's life: each costs the host a
 * log entry and a decision, so a typo's 100000 is refused (issue 35). At
 * most EGRESS_CONCURRENT (src/egress/proxy.h) are open at once whatever
 * this is. */
static const struct range egress_conn_range = {"egress-connections", "connections", 1, 10000};

/* The egress rules' syntax (src/core/egress_rule.c) and their caps; the
 * caps are checked whether or not a rule opens egress, so that a config is
 * either valid or not, whatever is added to it later. */
static int egress_check(const struct aj_config *cfg, struct aj_error *err)
{
	int rc;
	if ((cfg->allow_host_count && !cfg->allow_hosts) || (cfg->allow_cidr_count && !cfg->allow_cidrs))
		return error_set(err, -EINVAL, "egress: a rule count without its rules");
	if (cfg->allow_host_count > AJ_MAX_EGRESS_RULES || cfg->allow_cidr_count > AJ_MAX_EGRESS_RULES)
		return error_set(err, -EINVAL, "egress: more than %d host or CIDR rules",
				 AJ_MAX_EGRESS_RULES);
	char why[256];
	for (uint32_t i = 0; i < cfg->allow_host_count; i++) {
		struct egress_host_rule r;
		if (egress_host_rule_parse(cfg->allow_hosts[i], &r, why, sizeof why))
			return error_set(err, -EINVAL, "allow-host: %s", why);
	}
	for (uint32_t i = 0; i < cfg->allow_cidr_count; i++) {
		struct egress_cidr_rule r;
		if (egress_cidr_rule_parse(cfg->allow_cidrs[i], &r, why, sizeof why))
			return error_set(err, -EINVAL, "allow-cidr: %s", why);
	}
	if (egress_rules_check(cfg->allow_hosts, cfg->allow_host_count, cfg->allow_cidrs,
			       cfg->allow_cidr_count, why, sizeof why))
		return error_set(err, -EINVAL, "allow-host: %s", why);
	const struct aj_egress_limits *e = &cfg->egress;
	if ((rc = check_range(&egress_out_range, e->out_mb, err)) ||
	    (rc = check_range(&egress_in_range, e->in_mb, err)) ||
	    (rc = check_range(&egress_conn_range, e->connections, err)))
		return rc;
	return 0;
}

/* Secrets (issue 39, src/core/secret.h): parsed once to be checked; the
 * proxy parses them again for itself. Secrets go only where egress rules
 * let the program reach: without rules there is nowhere to send one. */
static int secrets_check(const struct aj_config *cfg, struct aj_error *err)
{
	if (!cfg->secrets)
		return 0;
	struct secret_set set;
	char why[AJ_ERROR_MAX];
	int rc = secret_set_parse(cfg->secrets, &set, why, sizeof why);
	if (rc)
		return error_set(err, rc, "%s", why);
	uint32_t n = set.n;
	secret_set_free(&set);
	if (n && !cfg->allow_host_count && !cfg->allow_cidr_count)
		return error_set(err, -EINVAL,
				 "secrets: no egress rule lets the program reach a host; give "
				 "allow-host rules for the secrets' hosts");
	return 0;
}

/* egress_ca: certificates only, as trust_ca (trust_ca.c reads both). */
static int egress_ca_check(const struct aj_config *cfg, struct aj_error *err)
{
	if (!cfg->egress_ca)
		return 0;
	char *pem;
	size_t len;
	unsigned certs;
	int rc = trust_ca_read("egress_ca", cfg->egress_ca, &pem, &len, &certs, err);
	free(pem);
	return rc;
}

int aj_config_validate(const struct aj_config *cfg, struct aj_error *err)
{
	const struct aj_limits *l = &cfg->limits;
	int rc;

	if ((unsigned)cfg->tier >= AJ_TIER_COUNT)
		return error_set(err, -EINVAL, "tier: unknown tier %d", (int)cfg->tier);
	if (!(l->wall_sec >= 0.1 && l->wall_sec <= 86400.0))
		return error_set(err, -EINVAL,
				 "timeout: %g is out of range (0.1 to 86400 seconds)", l->wall_sec);
	if ((rc = check_range(&cpu_range, l->cpu_sec, err)) ||
	    (rc = check_range(&memory_range, l->memory_mb, err)) ||
	    (rc = check_range(&pids_range, l->pids, err)) ||
	    (rc = check_range(&file_size_range, l->file_size_mb, err)) ||
	    (rc = check_range(&disk_range, l->disk_mb, err)) ||
	    (rc = check_range(&output_range, l->output_kb, err)) ||
	    (rc = check_range(&open_files_range, l->open_files, err)) ||
	    (rc = check_range(&slots_range, cfg->slots, err)))
		return rc;
	const struct aj_session_limits *sl = &cfg->session;
	if (!(sl->idle_sec >= 1.0 && sl->idle_sec <= 864000.0))
		return error_set(err, -EINVAL,
				 "session-idle: %g is out of range (1 to 864000 seconds)", sl->idle_sec);
	if (!(sl->lifetime_sec >= 1.0 && sl->lifetime_sec <= 864000.0))
		return error_set(err, -EINVAL,
				 "session-lifetime: %g is out of range (1 to 864000 seconds)",
				 sl->lifetime_sec);
	if (!(sl->pause_keep_sec >= 0.0 && sl->pause_keep_sec <= AJ_MAX_PAUSE_KEEP_SEC))
		return error_set(err, -EINVAL,
				 "pause-keep: %g is out of range (0 to %g seconds)", sl->pause_keep_sec,
				 AJ_MAX_PAUSE_KEEP_SEC);
	if ((rc = check_range(&session_cpu_range, sl->cpu_sec, err)) ||
	    (rc = check_range(&max_sessions_range, sl->max_sessions, err)) ||
	    (rc = check_range(&transfer_range, sl->transfer_mb, err)) ||
	    (rc = check_range(&images_range, sl->images, err)) ||
	    (rc = check_range(&image_kb_range, sl->image_kb, err)))
		return rc;
	if (cfg->python && cfg->python[0] != '/')
		return error_set(err, -EINVAL, "python: '%s' is not an absolute path", cfg->python);
	/* An image is a plain name (a directory in the images directory) or an
	 * absolute path: never a relative path that depends on the cwd. */
	if (cfg->image && (!cfg->image[0] || (cfg->image[0] != '/' && strchr(cfg->image, '/')) ||
			   strcmp(cfg->image, ".") == 0 || strcmp(cfg->image, "..") == 0))
		return error_set(err, -EINVAL,
				 "image: '%s' is neither a name nor an absolute path", cfg->image);
	/* Warm mode forks each run from a zygote on this host: only the tiers
	 * whose runs are host processes (process, container) can do that. A
	 * warm flag the tier would ignore is refused, not silently dropped: the
	 * deployer asked for something this tier does not give. */
	if (cfg->warm && cfg->tier != AJ_TIER_PROCESS && cfg->tier != AJ_TIER_CONTAINER)
		return error_set(err, -EINVAL,
				 "warm: the %s tier has no warm mode (the process and container tiers have)",
				 aj_tier_name(cfg->tier));
	if (cfg->preload && cfg->preload[0]) {
		/* Without a zygote nothing would import them: say so. */
		if (!cfg->warm)
			return error_set(err, -EINVAL, "preload: needs warm mode (--warm)");
		if ((rc = check_preload(cfg->preload, err)))
			return rc;
	}
	if ((rc = ro_bind_check(cfg, err)))
		return rc;
	if ((rc = env_check(cfg, err)) || (rc = exec_env_allow_check(cfg, err)))
		return rc;
	if ((rc = egress_check(cfg, err)))
		return rc;
	/* uid 0 must never be a sandbox uid, and the range must not wrap into
	 * (uid_t)-1, which the kernel treats as "no change". */
	if (cfg->uid_base < 1000 || (uint64_t)cfg->uid_base + cfg->slots >= 0xFFFFFFFEull)
		return error_set(err, -EINVAL,
				 "uid-base: %u with %u slots is out of range (1000 to 4294967293)",
				 cfg->uid_base, cfg->slots);
	/* The Docker Engine refuses a container user past 2^31 - 1 (its
	 * runtime keeps uids as int32: "uids and gids must be in range
	 * 0-2147483647"): every run of such a range would be a sandbox_error,
	 * so the configuration is refused at open, with the reason. */
	if (cfg->tier == AJ_TIER_DOCKER && (uint64_t)cfg->uid_base + cfg->slots > 2147483648ull)
		return error_set(err, -EINVAL,
				 "uid-base: %u with %u slots passes uid 2147483647, the highest "
				 "the Docker Engine accepts",
				 cfg->uid_base, cfg->slots);
	if ((rc = secrets_check(cfg, err)))
		return rc;
	/* Last: the only checks that read a file. */
	if ((rc = trust_ca_check(cfg, err)))
		return rc;
	return egress_ca_check(cfg, err);
}
