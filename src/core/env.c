/* cfg.env: the variables a deployer adds to the program's environment
 * (docs/design.md rules I3 and E1). Checked here, once, by
 * aj_config_validate; contract_environment_fill then hands them on to every
 * tier. A name that would let the code (or what the sandbox runs before
 * it) load other code, reach past the proxy, or change what the contract
 * promises is refused, each with its reason. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "contract.h"
#include "internal.h"

/* Refused by name (prefix: every name that starts so). */
static const struct {
	const char *name;
	bool prefix;
	const char *why;
} refused[] = {
	/* The dynamic loader reads these in every process, the sandbox's
	 * own init and interpreters included: LD_PRELOAD or LD_AUDIT would
	 * load a library (from the workspace the code writes), and
	 * LD_LIBRARY_PATH would replace the ones the image holds. */
	{"LD_", true, "the dynamic loader reads it: it would load or redirect code in every "
		      "process of the sandbox"},
	/* glibc loads charset converters from GCONV_PATH: the same as LD_PRELOAD. */
	{"GCONV_PATH", false, "glibc loads code from it"},
	/* The allocator's and the loader's settings, which the contract fixes
	 * (MALLOC_ARENA_MAX) and which reach past it (rtld tunables). */
	{"GLIBC_TUNABLES", false, "it changes glibc's allocator and loader settings"},
	/* A session's interpreter sets them (repl.py) for its charts. */
	{"MPLBACKEND", false, "a session's interpreter sets it (matplotlib's charts)"},
	{"MPLCONFIGDIR", false, "a session's interpreter sets it (matplotlib's charts)"},
};

/* The PYTHON* variables that change how Python behaves but not what it
 * runs; every other PYTHON* (PYTHONSTARTUP runs a file first, PYTHONHOME
 * and PYTHONPLATLIBDIR move the standard library, PYTHONINSPECT keeps an
 * interpreter reading stdin, PYTHONUSERBASE adds a site directory...) is
 * refused. PYTHONPATH is taken inside the workspace only (python_path). */
static const char *const python_allowed[] = {
	"PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
	"PYTHONWARNINGS",   "PYTHONUTF8",       "PYTHONFAULTHANDLER",
};

static bool variable_name(const char *s, size_t n)
{
	if (n == 0 || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* Whether name (n bytes) is one a row of table sets. */
static bool in_table(char *const *table, size_t rows, const char *name, size_t n)
{
	for (size_t i = 0; i < rows; i++)
		if (!strncmp(table[i], name, n) && table[i][n] == '=')
			return true;
	return false;
}

/* PYTHONPATH: directories under the workspace, which is the code's own
 * already; anywhere else it would put the host's or the image's other
 * files first on sys.path. */
static bool python_path(const char *v)
{
	const size_t wl = strlen(AJ_SESSION_WORKSPACE);
	if (!*v)
		return false; /* an empty PYTHONPATH is the cwd */
	while (*v) {
		size_t len = strcspn(v, ":");
		if (len < wl || strncmp(v, AJ_SESSION_WORKSPACE, wl) || (len > wl && v[wl] != '/'))
			return false;
		for (const char *p = v; p < v + len; p++)
			if (!strncmp(p, "/..", 3) && (p + 3 == v + len || p[3] == '/'))
				return false;
		v += len;
		if (*v == ':' && !*++v)
			return false; /* an empty last entry is the cwd */
	}
	return true;
}

/* Why name=value may not be set, or NULL. */
static const char *refusal(const char *name, size_t n, const char *value)
{
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		size_t rn = strlen(refused[i].name);
		if (refused[i].prefix ? n >= rn && !strncmp(name, refused[i].name, rn)
				      : n == rn && !strncmp(name, refused[i].name, n))
			return refused[i].why;
	}
	/* HTTP_PROXY, https_proxy, ALL_PROXY, NO_PROXY, PIP_PROXY, any case:
	 * where the code's connections go is the rules' to say. */
	if (n >= 6 && !strncasecmp(name + n - 6, "_PROXY", 6))
		return "egress owns the proxy variables: the allow-host and allow-cidr rules "
		       "decide where the code may connect";
	if (in_table(contract_egress_environment, CONTRACT_EGRESS_ENVIRONMENT_COUNT, name, n))
		return "the sandbox sets it with egress rules (the CA bundle for node and git)";
	/* A secret's placeholder variable is the secret's own (secrets): it
	 * may only hold its own name, the placeholder text, as a sandbox's
	 * config carries it to a fork or a woken pause. */
	if (n > 10 && !strncmp(name, "AJ_SECRET_", 10) &&
	    (strlen(value) != n || strncmp(value, name, n)))
		return "AJ_SECRET_ names are the secrets' placeholders, each holding its own name "
		       "(docs/secrets.md)";
	if (in_table(contract_environment, CONTRACT_ENVIRONMENT_COUNT, name, n))
		return "the sandbox sets it (docs/design.md rule E1: PATH, LANG, HOME, TMPDIR, "
		       "MALLOC_ARENA_MAX and PIP_TARGET are the same on every tier)";
	if (n == 10 && !strncmp(name, "PYTHONPATH", 10))
		return python_path(value) ? NULL
					  : "only directories under " AJ_SESSION_WORKSPACE
					    " (the workspace) may be on it";
	if (n >= 6 && !strncmp(name, "PYTHON", 6)) {
		for (size_t i = 0; i < sizeof python_allowed / sizeof python_allowed[0]; i++)
			if (strlen(python_allowed[i]) == n && !strncmp(name, python_allowed[i], n))
				return NULL;
		return "it changes what Python runs or where it looks for it (only "
		       "PYTHONUNBUFFERED, PYTHONIOENCODING, PYTHONHASHSEED, "
		       "PYTHONDONTWRITEBYTECODE, PYTHONWARNINGS, PYTHONUTF8, "
		       "PYTHONFAULTHANDLER and a PYTHONPATH in the workspace are taken)";
	}
	return NULL;
}

int env_check(const struct aj_config *cfg, struct aj_error *err)
{
	if (cfg->env_count && !cfg->env)
		return error_set(err, -EINVAL, "env: a count without its variables");
	if (cfg->env_count > AJ_MAX_ENV)
		return error_set(err, -EINVAL, "env: %u variables, more than %d", cfg->env_count,
				 AJ_MAX_ENV);
	size_t bytes = 0;
	for (uint32_t i = 0; i < cfg->env_count; i++) {
		const char *e = cfg->env[i];
		if (!e)
			return error_set(err, -EINVAL, "env: variable %u is missing", i + 1);
		const char *eq = strchr(e, '=');
		size_t n = eq ? (size_t)(eq - e) : strlen(e);
		if (!eq)
			return error_set(err, -EINVAL, "env: '%.64s' is not NAME=VALUE", e);
		if (!variable_name(e, n))
			return error_set(err, -EINVAL,
					 "env: '%.*s' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)",
					 (int)(n > 64 ? 64 : n), e);
		/* One line a variable where a tier passes them as lines (the
		 * microvm guest's request to its zygote). */
		if (strchr(eq + 1, '\n'))
			return error_set(err, -EINVAL, "env: %.*s: a value holds no newline", (int)n, e);
		const char *why = refusal(e, n, eq + 1);
		if (why)
			return error_set(err, -EINVAL, "env: %.*s may not be set: %s", (int)n, e, why);
		for (uint32_t j = 0; j < i; j++)
			if (!strncmp(cfg->env[j], e, n + 1))
				return error_set(err, -EINVAL, "env: %.*s is set twice", (int)n, e);
		bytes += strlen(e) + 1;
		if (bytes > AJ_MAX_ENV_BYTES)
			return error_set(err, -EINVAL, "env: the variables pass %d bytes together",
					 AJ_MAX_ENV_BYTES);
	}
	return 0;
}

/* Whether an entry of exec_env_allow lets name[0..n) be set. */
static bool allow_entry_matches(const char *entry, const char *name, size_t n)
{
	size_t k = strlen(entry);
	if (k && entry[k - 1] == '*')
		return n >= k - 1 && !strncmp(entry, name, k - 1);
	return k == n && !strncmp(entry, name, n);
}

int exec_env_allow_check(const struct aj_config *cfg, struct aj_error *err)
{
	if (cfg->exec_env_allow_count && !cfg->exec_env_allow)
		return error_set(err, -EINVAL, "exec_env_allow: a count without its names");
	if (cfg->exec_env_allow_count > AJ_MAX_ENV)
		return error_set(err, -EINVAL, "exec_env_allow: %u names, more than %d",
				 cfg->exec_env_allow_count, AJ_MAX_ENV);
	for (uint32_t i = 0; i < cfg->exec_env_allow_count; i++) {
		const char *e = cfg->exec_env_allow[i];
		size_t n = e ? strlen(e) : 0;
		size_t name_n = n && e[n - 1] == '*' ? n - 1 : n;
		/* "*" alone would be the default said another way: refused as
		 * the mistake it most likely is. */
		if (!e || !name_n || !variable_name(e, name_n))
			return error_set(err, -EINVAL, "exec_env_allow: '%.64s' is not a variable name "
						       "or a prefix of one ending in '*'",
					 e ? e : "(missing)");
	}
	return 0;
}

bool exec_env_allowed(const struct aj_config *cfg, const char *name, size_t n)
{
	if (!cfg->exec_env_allow_count)
		return true;
	for (uint32_t i = 0; i < cfg->exec_env_allow_count; i++)
		if (allow_entry_matches(cfg->exec_env_allow[i], name, n))
			return true;
	return false;
}
