#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/internal.h"
#include "../mcp/secrets_file.h"
#include "cli.h"

enum {
	OPT_TIER = 1000,
	OPT_TIMEOUT,
	OPT_CPU,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_FILE_SIZE,
	OPT_DISK,
	OPT_OUTPUT,
	OPT_PYTHON,
	OPT_IMAGE,
	OPT_DOCKER_IMAGE,
	OPT_DOCKER_SOCKET,
	OPT_SESSION_IDLE,
	OPT_IDLE,
	OPT_PAUSE_KEEP,
	OPT_SESSION_LIFETIME,
	OPT_MAX_SESSIONS,
	OPT_TRANSFER_MB,
	OPT_WARM,
	OPT_PRELOAD,
	OPT_RO_BIND,
	/* The egress family, OPT_ENV to OPT_EGRESS_CA, stays last and in one
	 * run: option_apply hands that range to egress_option_apply. */
	OPT_ENV,
	OPT_EXEC_ENV_ALLOW,
	OPT_ALLOW_HOST,
	OPT_ALLOW_CIDR,
	OPT_EGRESS_OUT_MB,
	OPT_EGRESS_IN_MB,
	OPT_EGRESS_CONNECTIONS,
	OPT_EGRESS_KBPS,
	OPT_TRUST_CA,
	OPT_SECRETS,
	OPT_EGRESS_CA,
};

const struct option limit_options[] = {
	{"tier", required_argument, NULL, OPT_TIER},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"cpu", required_argument, NULL, OPT_CPU},
	{"memory", required_argument, NULL, OPT_MEMORY},
	{"pids", required_argument, NULL, OPT_PIDS},
	{"file-size", required_argument, NULL, OPT_FILE_SIZE},
	{"disk", required_argument, NULL, OPT_DISK},
	{"output", required_argument, NULL, OPT_OUTPUT},
	{"python", required_argument, NULL, OPT_PYTHON},
	{"image", required_argument, NULL, OPT_IMAGE},
	{"docker-image", required_argument, NULL, OPT_DOCKER_IMAGE},
	{"docker-socket", required_argument, NULL, OPT_DOCKER_SOCKET},
	{NULL, 0, NULL, 0},
};

/* Only the commands that serve sessions take these: a one-shot run has no
 * session for them to bound. */
const struct option session_options[] = {
	{"session-idle", required_argument, NULL, OPT_SESSION_IDLE},
	{"idle", required_argument, NULL, OPT_IDLE},
	{"pause-keep", required_argument, NULL, OPT_PAUSE_KEEP},
	{"session-lifetime", required_argument, NULL, OPT_SESSION_LIFETIME},
	{"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
	{"transfer-mb", required_argument, NULL, OPT_TRANSFER_MB},
	{NULL, 0, NULL, 0},
};

/* Only the commands that run one tier take these: attack and bench make a
 * column of every tier, warm mode is two tiers' and host paths four tiers'
 * (aj_config_validate refuses them for the others). */
const struct option one_tier_options[] = {
	{"warm", no_argument, NULL, OPT_WARM},
	{"preload", required_argument, NULL, OPT_PRELOAD},
	{"ro-bind", required_argument, NULL, OPT_RO_BIND},
	{NULL, 0, NULL, 0},
};

/* The deployer's egress rules and caps (docs/cli.md, "Egress"): every
 * command that runs code for someone else takes them, never the code. */
const struct option egress_options[] = {
	{"env", required_argument, NULL, OPT_ENV},
	{"exec-env-allow", required_argument, NULL, OPT_EXEC_ENV_ALLOW},
	{"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
	{"allow-cidr", required_argument, NULL, OPT_ALLOW_CIDR},
	{"egress-out-mb", required_argument, NULL, OPT_EGRESS_OUT_MB},
	{"egress-in-mb", required_argument, NULL, OPT_EGRESS_IN_MB},
	{"egress-connections", required_argument, NULL, OPT_EGRESS_CONNECTIONS},
	{"egress-kbps", required_argument, NULL, OPT_EGRESS_KBPS},
	/* The CAs HTTPS through those rules trusts beside the image's. */
	{"trust-ca", required_argument, NULL, OPT_TRUST_CA},
	/* Credentials the proxy adds for the code (docs/secrets.md), from a
	 * file: a value on the command line would show in ps and in the
	 * shell's history. */
	{"secrets", required_argument, NULL, OPT_SECRETS},
	/* The CAs the proxy trusts for the upstreams it sends secrets to. */
	{"egress-ca", required_argument, NULL, OPT_EGRESS_CA},
	{NULL, 0, NULL, 0},
};

void options_with(const struct option *own, struct option *out, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; limit_options[i].name && k + 1 < n; i++)
		out[k++] = limit_options[i];
	for (size_t i = 0; own[i].name && k + 1 < n; i++)
		out[k++] = own[i];
	out[k] = (struct option){0};
}

void options_add(const struct option *more, struct option *out, size_t n)
{
	size_t k = 0;
	while (out[k].name)
		k++;
	for (size_t i = 0; more[i].name; i++) {
		/* A table too small is this program's bug: an option dropped
		 * here would be refused as unknown while --help lists it. */
		if (k + 1 >= n) {
			fprintf(stderr, "agentjail: internal error: the option table holds %zu\n", n);
			abort();
		}
		out[k++] = more[i];
	}
	out[k] = (struct option){0};
}

/* --help, which every command takes as -h too. */
static const struct option help[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};

#define MATRIX_OPTSTRING ":h"

static int parse_matrix(int argc, char **argv, const char *name, const char *usage,
			const struct option *opts, struct aj_config *cfg,
			struct tier_choice *tiers,
			int (*own_opt)(int opt, const char *arg, void *ctx), void *ctx)
{
	int c;
	while ((c = getopt_long(argc, argv, MATRIX_OPTSTRING, opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			cli_bad_option(name, c, argc, argv, opts);
			return EXIT_USAGE;
		}
		bool is_limit = false;
		for (size_t i = 0; limit_options[i].name; i++)
			is_limit |= limit_options[i].val == c;
		if (!is_limit) {
			int r = c == 'h' ? 1 : own_opt(c, optarg, ctx);
			if (r == 1) {
				fputs(usage, stdout);
				return 0;
			}
			if (r < 0)
				return EXIT_USAGE;
			continue;
		}
		if (option_apply(c, optarg, cfg))
			return EXIT_USAGE;
		/* --tier may be given several times: each one is a column. */
		if (c == opts[0].val)
			tiers->chosen[cfg->tier] = tiers->any = true;
	}
	if (optind != argc) {
		cli_error("%s: unexpected argument '%s'", name, argv[optind]);
		return EXIT_USAGE;
	}
	struct aj_error err;
	if (aj_config_validate(cfg, &err)) {
		cli_error("%s: %s", name, err.message);
		return EXIT_USAGE;
	}
	return -1;
}

int parse_matrix_command(int argc, char **argv, const char *name, const char *usage,
			 const struct option *own, struct aj_config *cfg, struct tier_choice *tiers,
			 int (*own_opt)(int opt, const char *arg, void *ctx), void *ctx)
{
	struct option opts[32];
	options_with(own, opts, 32);
	options_add(help, opts, 32);
	cli_usage_begin(cli_asks_json(argc, argv, opts, MATRIX_OPTSTRING));
	return cli_usage_end(
		parse_matrix(argc, argv, name, usage, opts, cfg, tiers, own_opt, ctx));
}

#define COMMAND_OPTSTRING ":h"

static int parse_command_options(int argc, char **argv, const struct command_parse *cp,
				 const struct option *opts, struct aj_config *cfg)
{
	int c;
	while ((c = getopt_long(argc, argv, COMMAND_OPTSTRING, opts, NULL)) != -1) {
		bool own = false;
		for (size_t i = 0; cp->own[i].name; i++)
			own |= cp->own[i].val == c;
		if (own) {
			cp->own_opt(c, optarg, cp->ctx);
		} else if (c == 'h') {
			fputs(cp->usage, stdout);
			return 0;
		} else if (c == '?' || c == ':') {
			cli_bad_option(cp->name, c, argc, argv, opts);
			return EXIT_USAGE;
		} else if (option_apply(c, optarg, cfg) < 0) {
			cli_try_help(cp->name);
			return EXIT_USAGE;
		}
	}
	return cp->finish(argc, argv, cfg, cp->ctx);
}

int parse_command(int argc, char **argv, const struct command_parse *cp, struct aj_config *cfg)
{
	struct option opts[48];
	aj_config_init(cfg);
	options_with(cp->own, opts, 48);
	options_add(help, opts, 48);
	options_add(cp->more, opts, 48);
	options_add(egress_options, opts, 48);
	cli_usage_begin(cli_asks_json(argc, argv, opts, COMMAND_OPTSTRING));
	return cli_usage_end(parse_command_options(argc, argv, cp, opts, cfg));
}

/* --json's usage errors (cli.h): the first message, kept for the object. */
static struct {
	bool on, stream;
	char message[1024];
} usage_json;

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (usage_json.on) {
		/* The first says what went wrong; later ones follow from it. */
		if (!usage_json.message[0])
			vsnprintf(usage_json.message, sizeof usage_json.message, fmt, ap);
		va_end(ap);
		return;
	}
	fputs("agentjail: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_version(const char *name)
{
	printf("%s %s\n", name, AGENTJAIL_VERSION);
	return 0;
}

enum cli_json cli_asks_json(int argc, char **argv, const struct option *opts,
			    const char *optstring)
{
	int json_val = 0, stream_val = 0;
	for (size_t i = 0; opts[i].name; i++) {
		if (!strcmp(opts[i].name, "json"))
			json_val = opts[i].val;
		else if (!strcmp(opts[i].name, "json-stream"))
			stream_val = opts[i].val;
	}
	/* A pass of getopt's own, silent: --json may stand after the option
	 * that is wrong, and "--python --json" is a value, not the flag. On a
	 * copy of argv: getopt moves the operands it passes, and a second
	 * pass over moved ones would read "FILE --timeout" as --timeout FILE. */
	char **copy = malloc(((size_t)argc + 1) * sizeof *copy);
	if (!copy)
		return CLI_JSON_NO;
	memcpy(copy, argv, ((size_t)argc + 1) * sizeof *copy);
	bool json = false, stream = false;
	int c, saved = opterr;
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, copy, optstring, opts, NULL)) != -1) {
		json |= json_val && c == json_val;
		stream |= stream_val && c == stream_val;
	}
	opterr = saved;
	optind = 0;
	free(copy);
	/* Both given is itself the usage error, said as --json says it. */
	return json ? CLI_JSON_ONE : stream ? CLI_JSON_STREAM : CLI_JSON_NO;
}

void cli_usage_begin(enum cli_json json)
{
	usage_json.on = json != CLI_JSON_NO;
	usage_json.stream = json == CLI_JSON_STREAM;
	usage_json.message[0] = '\0';
}

int cli_usage_end(int rc)
{
	bool json = usage_json.on;
	usage_json.on = false;
	if (!json || rc != EXIT_USAGE)
		return rc;
	/* What the user typed may be any bytes; JSON takes UTF-8 only. */
	const char *m = usage_json.message[0] ? usage_json.message : "usage error";
	size_t n;
	char *text = utf8_repair(m, strlen(m), &n);
	json_t *o = json_object();
	if (o && text) {
		if (usage_json.stream)
			json_object_set_new(o, "event", json_string("result"));
		json_object_set_new(o, "status", json_string("usage_error"));
		json_object_set_new(o, "message", json_stringn_nocheck(text, n));
	}
	char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
	puts(s ? s : "{\"status\":\"usage_error\",\"message\":\"out of memory\"}");
	fflush(stdout);
	free(s);
	free(text);
	json_decref(o);
	return rc;
}

void cli_try_help(const char *command)
{
	if (!usage_json.on)
		fprintf(stderr, "try 'agentjail %s --help'\n", command);
}

void cli_bad_option(const char *command, int c, int argc, char **argv,
		    const struct option *opts)
{
	const char *arg = optind >= 1 && optind <= argc ? argv[optind - 1] : "";
	bool is_long = !strncmp(arg, "--", 2);
	/* In getopt's own words, as the commands that let it speak say them. */
	if (c == ':') {
		cli_error("%s: option '%s' requires an argument", command, arg);
	} else if (is_long && optopt) {
		/* A known option that takes no value, given one (--json=1). */
		cli_error("%s: option '%.*s' doesn't allow an argument", command,
			  (int)strcspn(arg, "="), arg);
	} else if (is_long) {
		size_t len = strcspn(arg + 2, "="), matches = 0;
		char list[512] = "";
		for (size_t i = 0; opts[i].name; i++)
			if (!strncmp(opts[i].name, arg + 2, len)) {
				size_t k = strlen(list);
				snprintf(list + k, sizeof list - k, "%s--%s", matches ? ", " : "",
					 opts[i].name);
				matches++;
			}
		if (matches > 1 && len)
			cli_error("%s: option '%s' is ambiguous: %s", command, arg, list);
		else
			cli_error("%s: unrecognized option '%s'", command, arg);
	} else {
		cli_error("%s: invalid option -- '%c'", command, optopt);
	}
	cli_try_help(command);
}

/* aj_config_validate names a limit by its option, except where the option
 * carries its unit: the user reads the name they typed. */
void cli_config_error(const char *command, const struct aj_error *err)
{
	static const struct {
		const char *limit, *option;
	} renamed[] = {{"transfer: ", "transfer-mb: "}, {"ro_bind: ", "ro-bind: "},
				   {"trust_ca: ", "trust-ca: "}, {"exec_env_allow: ", "exec-env-allow: "},
				   {"egress_ca: ", "egress-ca: "},
				   /* As src/core/config.c words it at 572a45c, with no
				    * space after the colon. */
				   {"egress_ca:", "egress-ca: "}};
	for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++) {
		size_t n = strlen(renamed[i].limit);
		if (!strncmp(err->message, renamed[i].limit, n)) {
			cli_error("%s: %s%s", command, renamed[i].option, err->message + n);
			return;
		}
	}
	cli_error("%s: %s", command, err->message);
}

static int parse_seconds(const char *name, const char *arg, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end) {
		cli_error("--%s: expected seconds, got '%s'", name, arg);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_uint(const char *name, const char *arg, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > UINT32_MAX) {
		cli_error("--%s: expected a whole number, got '%s'", name, arg);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* --ro-bind, once per path: added to what cfg holds (an MCP config file's
 * list, say), in a list of this process's; aj_config_validate checks them. */
static int add_ro_bind(const char *arg, struct aj_config *cfg)
{
	static const char *list[AJ_MAX_RO_BINDS];
	if (cfg->ro_bind_count >= AJ_MAX_RO_BINDS) {
		cli_error("--ro-bind: more than %d paths", AJ_MAX_RO_BINDS);
		return -1;
	}
	if (cfg->ro_binds != list)
		for (uint32_t i = 0; i < cfg->ro_bind_count; i++)
			list[i] = cfg->ro_binds[i];
	list[cfg->ro_bind_count++] = arg;
	cfg->ro_binds = list;
	return 0;
}

/* --allow-host and --allow-cidr, once per rule: added to what cfg holds (an
 * MCP config file's list, say), as add_ro_bind does; the count is checked
 * here because the list has no room past it, the syntax by
 * aj_config_validate, which every front end calls. */
static int add_rule(const char *name, const char *arg, const char *list[], uint32_t max,
		    const char *const **rules, uint32_t *count)
{
	if (*count >= max) {
		cli_error("--%s: more than %u %s", name, max,
			  strcmp(name, "env") ? "rules" : "variables");
		return -1;
	}
	if (*rules != list)
		for (uint32_t i = 0; i < *count; i++)
			list[i] = (*rules)[i];
	list[(*count)++] = arg;
	*rules = list;
	return 0;
}

/* --idle close|pause: what a session's idle timeout does. */
static int parse_idle(const char *arg, bool *pause)
{
	if (strcmp(arg, "close") && strcmp(arg, "pause")) {
		cli_error("--idle: expected close or pause, got '%s'", arg);
		return -1;
	}
	*pause = !strcmp(arg, "pause");
	return 0;
}

/* --secrets FILE: the file's text, read and checked now, so that a
 * mistake is named with the file (secrets_file.c); cfg->secrets points at
 * this process's copy, which lives as long as the process (cfg with it). */
static int apply_secrets(const char *path, struct aj_config *cfg)
{
	static char *held;
	/* One file a command: a second --secrets would silently drop the
	 * first's secrets, and the code would run without them. */
	if (held && cfg->secrets == held) {
		cli_error("--secrets: given twice; put every secret in one file");
		return -1;
	}
	char *text;
	struct aj_error err;
	if (secrets_file_read(path, &text, &err)) {
		cli_error("--secrets: %s", err.message);
		return -1;
	}
	secrets_text_free(held);
	held = text;
	cfg->secrets = held;
	return 0;
}

/* The egress family's options (egress_options): the code's environment,
 * the rules, the caps, the CAs and the secrets. */
static int egress_option_apply(int opt, const char *arg, struct aj_config *cfg)
{
	switch (opt) {
	/* --env NAME=VALUE, once per variable, added as a rule is (an MCP
	 * config file's too); which names may be set is aj_config_validate's. */
	case OPT_ENV: {
		static const char *vars[AJ_MAX_ENV];
		return add_rule("env", arg, vars, AJ_MAX_ENV, &cfg->env, &cfg->env_count);
	}
	/* --exec-env-allow NAME or PREFIX*, once per name: what a command's
	 * own env may set (aj_config_validate checks each). */
	case OPT_EXEC_ENV_ALLOW: {
		static const char *names[AJ_MAX_ENV];
		return add_rule("exec-env-allow", arg, names, AJ_MAX_ENV, &cfg->exec_env_allow,
				&cfg->exec_env_allow_count);
	}
	case OPT_ALLOW_HOST: {
		static const char *hosts[AJ_MAX_EGRESS_RULES];
		return add_rule("allow-host", arg, hosts, AJ_MAX_EGRESS_RULES, &cfg->allow_hosts,
				&cfg->allow_host_count);
	}
	case OPT_ALLOW_CIDR: {
		static const char *cidrs[AJ_MAX_EGRESS_RULES];
		return add_rule("allow-cidr", arg, cidrs, AJ_MAX_EGRESS_RULES, &cfg->allow_cidrs,
				&cfg->allow_cidr_count);
	}
	case OPT_EGRESS_OUT_MB:
		return parse_uint("egress-out-mb", arg, &cfg->egress.out_mb);
	case OPT_EGRESS_IN_MB:
		return parse_uint("egress-in-mb", arg, &cfg->egress.in_mb);
	case OPT_EGRESS_CONNECTIONS:
		return parse_uint("egress-connections", arg, &cfg->egress.connections);
	case OPT_EGRESS_KBPS:
		return parse_uint("egress-kbps", arg, &cfg->egress.kbps);
	/* The file's checks are aj_config_validate's (src/core/trust_ca.c). */
	case OPT_TRUST_CA:
		cfg->trust_ca = arg;
		return 0;
	case OPT_SECRETS:
		return apply_secrets(arg, cfg);
	/* Checked as trust_ca is, by aj_config_validate. */
	case OPT_EGRESS_CA:
		cfg->egress_ca = arg;
		return 0;
	}
	cli_error("unknown option");
	return -1;
}

int option_apply(int opt, const char *arg, struct aj_config *cfg)
{
	struct aj_limits *l = &cfg->limits;
	struct aj_session_limits *sl = &cfg->session;

	switch (opt) {
	case OPT_TIER:
		if (aj_tier_parse(arg, &cfg->tier) < 0) {
			cli_error("--tier: unknown tier '%s' (process, container, microvm, docker, gvisor)",
				  arg);
			return -1;
		}
		return 0;
	case OPT_TIMEOUT:
		return parse_seconds("timeout", arg, &l->wall_sec);
	case OPT_CPU:
		return parse_uint("cpu", arg, &l->cpu_sec);
	case OPT_MEMORY:
		return parse_uint("memory", arg, &l->memory_mb);
	case OPT_PIDS:
		return parse_uint("pids", arg, &l->pids);
	case OPT_FILE_SIZE:
		return parse_uint("file-size", arg, &l->file_size_mb);
	case OPT_DISK:
		return parse_uint("disk", arg, &l->disk_mb);
	case OPT_OUTPUT:
		return parse_uint("output", arg, &l->output_kb);
	case OPT_PYTHON:
		cfg->python = arg;
		return 0;
	case OPT_IMAGE:
		cfg->image = arg;
		return 0;
	case OPT_DOCKER_IMAGE:
		cfg->docker_image = arg;
		return 0;
	case OPT_DOCKER_SOCKET:
		cfg->docker_socket = arg;
		return 0;
	/* Only parsed here; aj_config_validate holds the ranges. */
	case OPT_SESSION_IDLE:
		return parse_seconds("session-idle", arg, &sl->idle_sec);
	case OPT_IDLE:
		return parse_idle(arg, &sl->idle_pause);
	case OPT_PAUSE_KEEP:
		return parse_seconds("pause-keep", arg, &sl->pause_keep_sec);
	case OPT_SESSION_LIFETIME:
		return parse_seconds("session-lifetime", arg, &sl->lifetime_sec);
	case OPT_MAX_SESSIONS:
		return parse_uint("max-sessions", arg, &sl->max_sessions);
	case OPT_TRANSFER_MB:
		return parse_uint("transfer-mb", arg, &sl->transfer_mb);
	case OPT_WARM:
		cfg->warm = true;
		return 0;
	/* A list of modules to preload means nothing without a zygote to
	 * import them: asking for one asks for warm mode. The names are
	 * aj_config_validate's to check. */
	case OPT_PRELOAD:
		cfg->preload = arg;
		cfg->warm = true;
		return 0;
	case OPT_RO_BIND:
		return add_ro_bind(arg, cfg);
	}
	if (opt >= OPT_ENV && opt <= OPT_EGRESS_CA)
		return egress_option_apply(opt, arg, cfg);
	cli_error("unknown option");
	return -1;
}

int cli_state_dir(bool system, char *out, size_t cap)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	if (system && geteuid() == 0)
		snprintf(out, cap, "/var/lib/agentjail");
	else if (state && state[0] == '/')
		snprintf(out, cap, "%s/agentjail", state);
	else if (home && home[0] == '/')
		snprintf(out, cap, "%s/.local/state/agentjail", home);
	else
		return -1;
	/* Each component made 0700 where missing: it will hold keys. */
	for (char *p = out + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			(void)mkdir(out, 0700);
			*p = '/';
		}
	(void)mkdir(out, 0700);
	return 0;
}
