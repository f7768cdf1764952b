/* The config file: one JSON object, e.g.
 *
 *   {"tier": "container", "image": "default", "timeout": 10, "cpu": 10,
 *    "memory": 256, "pids": 64, "file_size": 16, "disk": 64, "output": 1024,
 *    "python": "/usr/bin/python3", "concurrency": 4, "sessions": true,
 *    "session_idle": 300, "session_lifetime": 3600, "max_sessions": 16,
 *    "transfer_mb": 16, "warm": true, "preload": ["numpy", "pandas"],
 *    "ro_bind": ["/srv/data:/mnt/data"], "allow_hosts": ["pypi.org:443"],
 *    "allow_cidrs": ["10.1.0.0/16:5432"], "egress_out_mb": 64,
 *    "egress_in_mb": 1024, "egress_connections": 256, "egress_kbps": 0,
 *    "env": {"TZ": "UTC"}, "tools": ["run_python", "run_command"],
 *    "uid_base": 2000000000, "state_dir": "/run/agentjail",
 *    "secrets": "/etc/agentjail/secrets.json", "egress_ca": "/etc/ca.pem"}
 *
 * Every key is optional; an unknown key is an error, not ignored: a typo in
 * a limit must not silently leave the default in force. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../api/tool_files.h"
#include "config.h"
#include "secrets_file.h"

void mcp_config_init(struct mcp_config *c)
{
	memset(c, 0, sizeof *c);
	aj_config_init(&c->sandbox);
	c->concurrency = MCP_DEFAULT_CONCURRENCY;
	c->tools = TOOLS_DEFAULT;
}

static void mcp_env_clear(struct mcp_config *c)
{
	for (size_t i = 0; i < AJ_MAX_ENV; i++)
		free(c->env[i]);
	memset(c->env, 0, sizeof c->env);
	c->sandbox.env = NULL;
	c->sandbox.env_count = 0;
}

void mcp_config_free(struct mcp_config *c)
{
	for (size_t i = 0; i < sizeof c->strings / sizeof c->strings[0]; i++)
		free(c->strings[i]);
	memset(c->strings, 0, sizeof c->strings);
	for (size_t i = 0; i < AJ_MAX_RO_BINDS; i++)
		free(c->ro_binds[i]);
	memset(c->ro_binds, 0, sizeof c->ro_binds);
	c->sandbox.ro_binds = NULL;
	c->sandbox.ro_bind_count = 0;
	for (size_t i = 0; i < AJ_MAX_EGRESS_RULES; i++) {
		free(c->allow_hosts[i]);
		free(c->allow_cidrs[i]);
	}
	memset(c->allow_hosts, 0, sizeof c->allow_hosts);
	memset(c->allow_cidrs, 0, sizeof c->allow_cidrs);
	c->sandbox.allow_hosts = c->sandbox.allow_cidrs = NULL;
	c->sandbox.allow_host_count = c->sandbox.allow_cidr_count = 0;
	mcp_env_clear(c);
	secrets_text_free(c->secrets);
	c->secrets = NULL;
	c->sandbox.secrets = NULL;
}

enum kind { WHOLE, SECONDS, TEXT, FLAG, MODULES, PATHS, RULES, VARIABLES, TOOLS, SECRETS };

static const struct key {
	const char *name;
	enum kind kind;
} keys[] = {
	{"tier", TEXT},    {"image", TEXT},     {"python", TEXT}, {"timeout", SECONDS},
	{"cpu", WHOLE},    {"memory", WHOLE},   {"pids", WHOLE},  {"file_size", WHOLE},
	{"disk", WHOLE},   {"output", WHOLE},   {"concurrency", WHOLE}, {"vm_pool", WHOLE},
	{"docker_image", TEXT}, {"docker_socket", TEXT},
	{"sessions", FLAG}, {"session_idle", SECONDS}, {"session_lifetime", SECONDS},
	{"max_sessions", WHOLE}, {"transfer_mb", WHOLE},
	{"warm", FLAG}, {"preload", MODULES}, {"ro_bind", PATHS},
	{"allow_hosts", RULES}, {"allow_cidrs", RULES}, {"egress_out_mb", WHOLE},
	{"egress_in_mb", WHOLE}, {"egress_connections", WHOLE}, {"egress_kbps", WHOLE},
	{"uid_base", WHOLE}, {"state_dir", TEXT}, {"trust_ca", TEXT}, {"env", VARIABLES},
	{"tools", TOOLS}, {"egress_ca", TEXT}, {"secrets", SECRETS},
};

static const char known[] = "tier, image, python, timeout, cpu, memory, pids, file_size, disk, "
			    "output, concurrency, vm_pool, docker_image, docker_socket, sessions, "
			    "session_idle, session_lifetime, max_sessions, transfer_mb, warm, "
			    "preload, ro_bind, allow_hosts, allow_cidrs, egress_out_mb, "
			    "egress_in_mb, egress_connections, egress_kbps, uid_base, state_dir, trust_ca, "
			    "env, tools, egress_ca, secrets";

static int set_whole(struct mcp_config *c, const char *name, json_int_t v, struct aj_error *err)
{
	if (v < 0 || v > UINT32_MAX)
		return error_set(err, -EINVAL, "%s: %lld is out of range", name, (long long)v);
	uint32_t u = (uint32_t)v;
	struct aj_limits *l = &c->sandbox.limits;
	if (!strcmp(name, "cpu"))
		l->cpu_sec = u;
	else if (!strcmp(name, "memory"))
		l->memory_mb = u;
	else if (!strcmp(name, "pids"))
		l->pids = u;
	else if (!strcmp(name, "file_size"))
		l->file_size_mb = u;
	else if (!strcmp(name, "disk"))
		l->disk_mb = u;
	else if (!strcmp(name, "output"))
		l->output_kb = u;
	else if (!strcmp(name, "max_sessions"))
		c->sandbox.session.max_sessions = u;
	else if (!strcmp(name, "transfer_mb"))
		c->sandbox.session.transfer_mb = u;
	else if (!strcmp(name, "egress_out_mb"))
		c->sandbox.egress.out_mb = u;
	else if (!strcmp(name, "egress_in_mb"))
		c->sandbox.egress.in_mb = u;
	else if (!strcmp(name, "egress_connections"))
		c->sandbox.egress.connections = u;
	else if (!strcmp(name, "egress_kbps"))
		c->sandbox.egress.kbps = u;
	else if (!strcmp(name, "uid_base"))
		/* Two servers on one machine each with a uid range of their
		 * own (and a state_dir) never count or reap each other's
		 * sandboxes: aj_config_validate checks the range. */
		c->sandbox.uid_base = u;
	else if (!strcmp(name, "vm_pool")) {
		if (u > 64)
			return error_set(err, -EINVAL, "vm_pool: %u is out of range (0 to 64)", u);
		c->sandbox.vm_pool = u;
	} else if (!strcmp(name, "concurrency")) {
		if (u < 1 || u > MCP_MAX_CONCURRENCY)
			return error_set(err, -EINVAL, "concurrency: %u is out of range (1 to %d)",
					 u, MCP_MAX_CONCURRENCY);
		c->concurrency = u;
	}
	return 0;
}

/* Ranges are aj_config_validate's, checked once everything is read. */
static void set_seconds(struct mcp_config *c, const char *name, double v)
{
	if (!strcmp(name, "timeout"))
		c->sandbox.limits.wall_sec = v;
	else if (!strcmp(name, "session_idle"))
		c->sandbox.session.idle_sec = v;
	else if (!strcmp(name, "session_lifetime"))
		c->sandbox.session.lifetime_sec = v;
}

static int set_text(struct mcp_config *c, const char *name, const char *v, struct aj_error *err)
{
	if (!strcmp(name, "tier")) {
		if (aj_tier_parse(v, &c->sandbox.tier) < 0)
			return error_set(err, -EINVAL,
					 "tier: unknown tier '%s' (process, container, microvm, docker, gvisor)",
					 v);
		return 0;
	}
	/* Slots 0-4, 6 and 7 (5 is preload's). */
	static const char *const texts[] = {"image",	 "python",    "docker_image", "docker_socket",
					    "state_dir", "(preload)", "trust_ca",     "egress_ca"};
	size_t slot = 0;
	while (strcmp(texts[slot], name))
		slot++;
	free(c->strings[slot]);
	c->strings[slot] = strdup(v);
	if (!c->strings[slot])
		return error_set(err, -ENOMEM, "out of memory");
	const char **field[] = {&c->sandbox.image,	   &c->sandbox.python,
				&c->sandbox.docker_image,  &c->sandbox.docker_socket,
				&c->sandbox.state_dir,	   NULL,
				&c->sandbox.trust_ca,	   &c->sandbox.egress_ca};
	*field[slot] = c->strings[slot];
	return 0;
}

/* preload: "numpy,pandas", or the same as ["numpy", "pandas"], kept as the
 * one comma-separated string cfg.preload is. Only the shape is checked
 * here; the names are aj_config_validate's, so every front end refuses
 * the same ones with the same words. */
static int set_modules(struct mcp_config *c, json_t *v, struct aj_error *err)
{
	char *list;
	if (json_is_string(v)) {
		list = strdup(json_string_value(v));
	} else {
		size_t len = 1, i;
		json_t *item;
		json_array_foreach(v, i, item) {
			if (!json_is_string(item))
				return error_set(err, -EINVAL,
						 "preload: item %zu of the array is not a string", i + 1);
			len += json_string_length(item) + 1;
		}
		list = malloc(len);
		if (list) {
			char *p = list;
			*p = '\0';
			json_array_foreach(v, i, item) {
				size_t n = json_string_length(item);
				if (i)
					*p++ = ',';
				memcpy(p, json_string_value(item), n);
				p += n;
				*p = '\0';
			}
		}
	}
	if (!list)
		return error_set(err, -ENOMEM, "out of memory");
	/* strings[5]: after set_text's five, freed with them. */
	free(c->strings[5]);
	c->strings[5] = list;
	c->sandbox.preload = list;
	return 0;
}

/* A list key: one string or an array of them, copied into owned[] and
 * viewed through view[] as the config's const list; what each string says
 * is aj_config_validate's to check, so every front end refuses the same
 * values with the same words. */
struct list_key {
	size_t max;
	const char *what;  /* "paths", "rules" */
	char **owned;
	const char **view;
	const char *const **field;
	uint32_t *count;
};

static int set_list(const char *name, json_t *v, const struct list_key *k, struct aj_error *err)
{
	size_t n = json_is_string(v) ? 1 : json_array_size(v);
	if (n > k->max)
		return error_set(err, -EINVAL, "%s: %zu %s is more than %zu", name, n, k->what,
				 k->max);
	for (size_t i = 0; i < n; i++) {
		json_t *item = json_is_string(v) ? v : json_array_get(v, i);
		if (!json_is_string(item))
			return error_set(err, -EINVAL, "%s: item %zu of the array is not a string",
					 name, i + 1);
	}
	for (size_t i = 0; i < k->max; i++) {
		free(k->owned[i]);
		k->owned[i] = NULL;
	}
	*k->count = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *item = json_is_string(v) ? v : json_array_get(v, i);
		if (!(k->owned[i] = strdup(json_string_value(item))))
			return error_set(err, -ENOMEM, "out of memory");
		k->view[i] = k->owned[i];
		*k->count = (uint32_t)i + 1;
	}
	*k->field = k->view;
	return 0;
}

/* ro_bind: "HOST[:SANDBOX]" or a list of them, kept as cfg.ro_binds is;
 * allow_hosts and allow_cidrs: "RULE" or a list, as cfg.allow_hosts and
 * allow_cidrs are. */
static int set_strings(struct mcp_config *c, const char *name, json_t *v, struct aj_error *err)
{
	struct aj_config *s = &c->sandbox;
	const struct list_key ro = {AJ_MAX_RO_BINDS, "paths", c->ro_binds, c->ro_bind_list,
				    &s->ro_binds, &s->ro_bind_count};
	const struct list_key hosts = {AJ_MAX_EGRESS_RULES, "rules", c->allow_hosts,
				       c->allow_host_list, &s->allow_hosts, &s->allow_host_count};
	const struct list_key cidrs = {AJ_MAX_EGRESS_RULES, "rules", c->allow_cidrs,
				       c->allow_cidr_list, &s->allow_cidrs, &s->allow_cidr_count};
	const struct list_key *k = !strcmp(name, "ro_bind") ? &ro :
				   !strcmp(name, "allow_hosts") ? &hosts : &cidrs;
	return set_list(name, v, k, err);
}

/* env: {"NAME": "VALUE", ...}, kept as cfg.env is ("NAME=VALUE"); which
 * names may be set is aj_config_validate's to say. */
static int set_env(struct mcp_config *c, json_t *v, struct aj_error *err)
{
	if (json_object_size(v) > AJ_MAX_ENV)
		return error_set(err, -EINVAL, "env: %zu variables is more than %d",
				 json_object_size(v), AJ_MAX_ENV);
	mcp_env_clear(c);
	const char *name;
	json_t *value;
	uint32_t n = 0;
	json_object_foreach(v, name, value) {
		if (!json_is_string(value))
			return error_set(err, -EINVAL, "env: %s: the value is not a string", name);
		size_t len = strlen(name) + json_string_length(value) + 2;
		if (!(c->env[n] = malloc(len)))
			return error_set(err, -ENOMEM, "out of memory");
		snprintf(c->env[n], len, "%s=%s", name, json_string_value(value));
		c->env_list[n] = c->env[n];
		c->sandbox.env_count = ++n;
	}
	c->sandbox.env = c->env_list;
	return 0;
}

/* secrets: the path of a secrets file, read and checked as --secrets reads
 * it (secrets_file.c). A path, never the array itself: this file is named
 * on command lines and kept beside other configuration, often readable by
 * others, while the secrets file is held to its owner alone. */
static int set_secrets(struct mcp_config *c, const char *path, struct aj_error *err)
{
	char *text;
	struct aj_error why;
	int rc = secrets_file_read(path, &text, &why);
	if (rc)
		return error_set(err, rc, "secrets: %s", why.message);
	secrets_text_free(c->secrets);
	c->secrets = text;
	c->sandbox.secrets = text;
	return 0;
}

/* One name of a tools list (n bytes) into *tools. */
static int add_tool(const char *name, size_t n, unsigned *tools, struct aj_error *err)
{
	unsigned bit = tool_bit_named(name, n);
	if (!bit)
		return error_set(err, -EINVAL,
				 "tools: unknown tool '%.*s' (run_python, run_command; the file "
				 "tools come with sessions)",
				 (int)(n > 64 ? 64 : n), name);
	*tools |= bit;
	return 0;
}

int mcp_tools_parse(const char *list, unsigned *tools, struct aj_error *err)
{
	unsigned t = 0;
	for (const char *p = list;; p++) {
		size_t n = strcspn(p, ",");
		if (add_tool(p, n, &t, err))
			return -EINVAL;
		p += n;
		if (!*p)
			break;
	}
	*tools = t;
	return 0;
}

/* tools: "run_python,run_command", or the same as an array of names. */
static int set_tools(struct mcp_config *c, json_t *v, struct aj_error *err)
{
	if (json_is_string(v))
		return mcp_tools_parse(json_string_value(v), &c->tools, err);
	unsigned t = 0;
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item) {
		if (!json_is_string(item))
			return error_set(err, -EINVAL, "tools: item %zu of the array is not a string",
					 i + 1);
		if (add_tool(json_string_value(item), json_string_length(item), &t, err))
			return -EINVAL;
	}
	if (!t)
		return error_set(err, -EINVAL, "tools: names no tool (run_python, run_command)");
	c->tools = t;
	return 0;
}

int mcp_tools_check(const struct mcp_config *c, struct aj_error *err)
{
	/* A command runs in the connection's session, beside run_python's
	 * files: without one there is no sandbox for it. */
	if ((c->tools & TOOL_BIT(TOOL_RUN_COMMAND)) && !c->sessions)
		return error_set(err, -EINVAL,
				 "tools: run_command runs in the connection's session: it needs "
				 "sessions (--sessions, or \"sessions\": true)");
	return 0;
}

int mcp_config_load(struct mcp_config *c, const char *path, struct aj_error *err)
{
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return error_set(err, -EINVAL, "%s:%d: %s", path, je.line, je.text);
	int rc = 0;
	if (!json_is_object(root)) {
		rc = error_set(err, -EINVAL, "%s: the configuration must be one JSON object", path);
		goto out;
	}
	const char *name;
	json_t *v;
	json_object_foreach(root, name, v) {
		const struct key *k = NULL;
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (!strcmp(keys[i].name, name))
				k = &keys[i];
		if (!k) {
			rc = error_set(err, -EINVAL, "%s: unknown key '%s' (known: %s)", path, name,
				       known);
			goto out;
		}
		struct aj_error why = {0};
		if (k->kind == TEXT && json_is_string(v))
			rc = set_text(c, name, json_string_value(v), &why);
		else if (k->kind == WHOLE && json_is_integer(v))
			rc = set_whole(c, name, json_integer_value(v), &why);
		else if (k->kind == SECONDS && json_is_number(v) && isfinite(json_number_value(v)))
			set_seconds(c, name, json_number_value(v));
		else if (k->kind == FLAG && json_is_boolean(v))
			*(strcmp(name, "warm") ? &c->sessions : &c->sandbox.warm) = json_is_true(v);
		else if (k->kind == MODULES && (json_is_string(v) || json_is_array(v)))
			rc = set_modules(c, v, &why);
		else if ((k->kind == PATHS || k->kind == RULES) &&
			 (json_is_string(v) || json_is_array(v)))
			rc = set_strings(c, name, v, &why);
		else if (k->kind == VARIABLES && json_is_object(v))
			rc = set_env(c, v, &why);
		else if (k->kind == TOOLS && (json_is_string(v) || json_is_array(v)))
			rc = set_tools(c, v, &why);
		else if (k->kind == SECRETS && json_is_string(v))
			rc = set_secrets(c, json_string_value(v), &why);
		else
			rc = error_set(&why, -EINVAL, "%s: expected %s", name,
				       k->kind == TEXT ? "a string" :
				       k->kind == WHOLE ? "a whole number" :
				       k->kind == FLAG ? "true or false" :
				       k->kind == MODULES ? "a string (\"numpy,pandas\") or an array "
							    "of strings" :
				       k->kind == PATHS ? "a string (\"HOST[:SANDBOX]\") or an array "
							  "of strings" :
				       k->kind == RULES ? "a string (a rule) or an array of strings" :
				       k->kind == VARIABLES ? "an object of strings ({\"TZ\": \"UTC\"})" :
				       k->kind == TOOLS ? "a string (\"run_python,run_command\") or an "
							  "array of strings" :
				       k->kind == SECRETS ? "a string: the path of a secrets file, "
							    "never the secrets themselves" :
				       "a number of seconds");
		if (rc) {
			error_set(err, rc, "%s: %s", path, why.message);
			goto out;
		}
	}
out:
	json_decref(root);
	return rc;
}
