/* agentjail mcp: the MCP stdio server, with the tier and limits fixed here
 * by the deployer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/tool_files.h"
#include "../mcp/server.h"
#include "cli.h"

static const char usage[] =
	"usage: agentjail mcp [--config FILE] [--sessions] [options]\n"
	"\n"
	"Serves the Model Context Protocol on stdin/stdout (one JSON-RPC message a line,\n"
	"protocol versions 2025-11-25 and 2026-07-28) with one tool, run_python. The\n"
	"tier and limits are fixed here, by the deployer: the agent sends only code.\n"
	"Logs go to stderr. The server exits when stdin closes.\n"
	"\n"
	"With --sessions the connection keeps one sandbox session across calls\n"
	"(variables, imports and workspace files persist; figures come back as\n"
	"images), opened at the first call and closed when stdin closes, and the\n"
	"tools upload_file, download_file and list_files join run_python.\n"
	"\n"
	"--tools run_python,run_command (with --sessions) adds run_command: a shell\n"
	"command (/bin/sh -c) in the same session's sandbox, its workspace the\n"
	"working directory, under the same limits. Off unless named: a shell widens\n"
	"what a model does at once, though not what the sandbox lets it do.\n"
	"\n"
	"options (they override FILE's values):\n"
	"  --config FILE     JSON: {\"tier\": \"container\", \"timeout\": 10, \"memory\": 256, ...}\n"
	"                    (keys: tier, image, python, timeout, cpu, memory, pids,\n"
	"                    file_size, disk, output, concurrency, vm_pool, docker_image,\n"
	"                    docker_socket, sessions, session_idle, session_lifetime,\n"
	"                    max_sessions, transfer_mb, warm, preload, ro_bind,\n"
	"                    allow_hosts, allow_cidrs, egress_out_mb, egress_in_mb,\n"
	"                    egress_connections, egress_kbps, trust_ca, env, tools,\n"
	"                    egress_ca, secrets; unknown keys are errors).\n"
	"                    preload: \"numpy,pandas\" or [\"numpy\", \"pandas\"]\n"
	"                    ro_bind: \"HOST[:SANDBOX]\" or a list of them (the\n"
	"                    --ro-bind flags add to it)\n"
	"                    allow_hosts, allow_cidrs: a rule or a list of them\n"
	"                    (the --allow-host and --allow-cidr flags add to it)\n"
	"                    secrets: the path of a secrets file, as --secrets\n"
	"                    takes (never the secrets themselves; --secrets\n"
	"                    replaces it)\n"
	"                    vm_pool: microVMs kept restored, or gVisor sandboxes\n"
	"                    started, ahead of the calls\n"
	"  --concurrency N   runs at once; more calls wait their turn (default 4;\n"
	"                    a session runs its calls one at a time)\n"
	"  --sessions        one session per connection, and the file tools\n"
	"  --tools LIST      the tools that run something: run_python (the default),\n"
	"                    run_command (needs --sessions), comma-separated\n"
	SESSION_OPTIONS_HELP LIMIT_OPTIONS_HELP ONE_TIER_OPTIONS_HELP EGRESS_OPTIONS_HELP
	"  -h, --help        this help\n";

enum { OPT_CONFIG = 3000, OPT_CONCURRENCY, OPT_SESSIONS, OPT_TOOLS, OPT_HELP };

/* Fail at start, not at every call: a session is opened and closed once,
 * so a tier without sessions, or one that cannot start them here, shows
 * before the first client connects. */
static int probe_sessions(const struct mcp_config *cfg)
{
	struct aj_error err = {0};
	struct aj_session *s;
	if (aj_session_open(&cfg->sandbox, &s, &err)) {
		cli_error("mcp: --sessions: the %s tier cannot open a session here: %s",
			  aj_tier_name(cfg->sandbox.tier), err.message);
		return -1;
	}
	aj_session_close(s);
	return 0;
}

int mcp_arguments(int argc, char **argv, struct mcp_config *cfg)
{
	static const struct option own[] = {
		{"config", required_argument, NULL, OPT_CONFIG},
		{"concurrency", required_argument, NULL, OPT_CONCURRENCY},
		{"sessions", no_argument, NULL, OPT_SESSIONS},
		{"tools", required_argument, NULL, OPT_TOOLS},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0}};
	struct option opts[48];
	options_with(own, opts, 48);
	options_add(session_options, opts, 48);
	options_add(one_tier_options, opts, 48);
	options_add(egress_options, opts, 48);

	struct aj_error err = {0};
	int c;

	/* The file first, wherever --config stands; then the flags over it. */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1)
		if (c == OPT_CONFIG && mcp_config_load(cfg, optarg, &err)) {
			cli_error("mcp: %s", err.message);
			return EXIT_USAGE;
		}
	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == OPT_CONFIG)
			continue;
		if (c == OPT_HELP || c == 'h') {
			fputs(usage, stdout);
			return 0;
		}
		if (c == OPT_SESSIONS) {
			cfg->sessions = true;
			continue;
		}
		if (c == OPT_TOOLS) {
			if (mcp_tools_parse(optarg, &cfg->tools, &err)) {
				cli_error("mcp: --%s", err.message);
				return EXIT_USAGE;
			}
			continue;
		}
		if (c == OPT_CONCURRENCY) {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 1 || v > MCP_MAX_CONCURRENCY) {
				cli_error("--concurrency: expected 1 to %d, got '%s'",
					  MCP_MAX_CONCURRENCY, optarg);
				return EXIT_USAGE;
			}
			cfg->concurrency = (unsigned)v;
			continue;
		}
		if (c == '?' || option_apply(c, optarg, &cfg->sandbox) < 0) {
			fputs("try 'agentjail mcp --help'\n", stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_error("mcp: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (aj_config_validate(&cfg->sandbox, &err)) {
		cli_config_error("mcp", &err);
		return EXIT_USAGE;
	}
	if (mcp_tools_check(cfg, &err)) {
		cli_error("mcp: --%s", err.message);
		return EXIT_USAGE;
	}
	return -1;
}

int cmd_mcp(int argc, char **argv)
{
	struct mcp_config cfg;
	mcp_config_init(&cfg);
	struct aj_error err = {0};
	int rc = mcp_arguments(argc, argv, &cfg);
	if (rc >= 0)
		goto out;
	/* Open the sandbox before serving: a deployer's mistake (no image, no
	 * cgroups) shows at start, not as every call failing. */
	struct aj_sandbox *sb;
	if (aj_open(&cfg.sandbox, &sb, &err)) {
		/* Blame the tier only when it cannot run here at all; else the
		 * open's own words say what is missing (an image without a
		 * preloaded module, say). */
		struct aj_error why = {0};
		if (aj_check(cfg.sandbox.tier, &cfg.sandbox, &why))
			cli_error("mcp: the %s tier cannot run here: %s",
				  aj_tier_name(cfg.sandbox.tier), err.message);
		else
			cli_error("mcp: cannot open the sandbox: %s", err.message);
		rc = EXIT_SANDBOX;
		goto out;
	}
	if (cfg.sessions && probe_sessions(&cfg)) {
		aj_close(sb);
		rc = EXIT_SANDBOX;
		goto out;
	}
	bool py = cfg.tools & TOOL_BIT(TOOL_RUN_PYTHON), sh = cfg.tools & TOOL_BIT(TOOL_RUN_COMMAND);
	fprintf(stderr, "agentjail mcp: serving %s%s%s%s%s on the %s tier\n",
		cfg.sessions ? "a session per connection (" : "", py ? "run_python" : "",
		py && sh ? ", " : "", sh ? "run_command" : "",
		cfg.sessions ? " and the file tools)" : "", aj_tier_name(cfg.sandbox.tier));
	rc = mcp_serve(&cfg, sb, stdin, stdout);
	aj_close(sb);
out:
	mcp_config_free(&cfg);
	return rc;
}
