/* The agentjail command: one file per subcommand. */
#ifndef AJ_CLI_H
#define AJ_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "agentjail.h"

/* Exit codes of the command-line contract (docs/design.md rules X1-X5). */
#define EXIT_USAGE 2
#define EXIT_SANDBOX 125
#define EXIT_TIMEOUT 124

int cmd_run(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_attack(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_repl(int argc, char **argv);

/* The options every command that runs code shares (--tier and the limits).
 * options_long() lists them for getopt_long; option_apply() takes one,
 * returning 0, or -1 after printing what is wrong with it. */
extern const struct option limit_options[];
#define LIMIT_OPTIONS_HELP                                                                \
	"  --tier T          process (default), container, microvm, docker or gvisor\n"         \
	"  --timeout SEC     wall-clock limit (default 10; 0.1 to 86400)\n"             \
	"  --cpu SEC         CPU time limit (default 10)\n"                             \
	"  --memory MB       memory limit in MiB (default 256)\n"                       \
	"  --pids N          processes and threads (default 64)\n"                      \
	"  --file-size MB    largest file it may write, MiB (default 16)\n"             \
	"  --disk MB         all writable space (/tmp, /var/tmp, /dev/shm, cwd), MiB\n"  \
	"                    (default 64)\n"                                       \
	"  --output KB       cap on each of stdout and stderr, KiB (default 1024)\n"    \
	"  --python PATH     interpreter (default /usr/bin/python3)\n"                 \
	"  --image NAME|DIR  container, microvm and gvisor tiers: the image root\n"     \
	"                    (default 'default'; agentjail image build makes it)\n"  \
	"  --docker-image I  docker tier: the engine image (default agentjail/NAME,\n"  \
	"                    which agentjail image build --docker imports)\n"        \
	"  --docker-socket P docker tier: the engine's socket (default $DOCKER_HOST\n"  \
	"                    if unix://, else /var/run/docker.sock)\n"
int option_apply(int opt, const char *arg, struct aj_config *cfg);
/* limit_options followed by a command's own (NULL-terminated), into out[n]. */
void options_with(const struct option *own, struct option *out, size_t n);
/* Appends more to the NULL-terminated table out[n]. */
void options_add(const struct option *more, struct option *out, size_t n);

/* The session limits (cfg.session), for the commands that serve sessions;
 * option_apply takes them too. */
extern const struct option session_options[];
#define SESSION_OPTIONS_HELP                                                              \
	"  --session-idle SEC      close a session after this long without a call\n"       \
	"                          (default 300; 1 to 864000)\n"                          \
	"  --idle close|pause      what idle does to a session: close it (default), or\n"   \
	"                          pause it (its sandbox freed, its state kept; its next\n" \
	"                          call resumes it)\n"                                      \
	"  --pause-keep SEC        a paused session's sandbox is frozen (its CPU freed,\n"  \
	"                          its memory kept) this long first, where the tier can\n" \
	"                          (container), and a resume in that time thaws it\n"     \
	"                          (default 0: ended at once; up to 86400)\n"              \
	"  --session-lifetime SEC  close a session this long after it opened\n"             \
	"                          (default 3600; 1 to 864000)\n"                         \
	"  --max-sessions N        sessions open at once (default 16)\n"                     \
	"  --transfer-mb N         largest file uploaded or downloaded, MiB (default 16;\n"  \
	"                          1 to 256)\n"
/* Warm mode (cfg.warm, cfg.preload) and host paths (cfg.ro_binds), for the
 * commands that run one tier
 * (run, mcp, serve, worker); option_apply takes them too. */
extern const struct option one_tier_options[];
#define ONE_TIER_OPTIONS_HELP                                                                 \
	"  --warm            process and container tiers: fork each run from an\n"     \
	"                    interpreter started ahead (warm mode)\n"                  \
	"  --preload LIST    modules warm mode imports once, comma-separated\n"        \
	"                    (numpy,pandas); implies --warm\n" \
	"  --ro-bind HOST[:SANDBOX]  show a host file or directory read-only at\n"  \
	"                    SANDBOX (default: the same path); repeatable, up to 16.\n" \
	"                    process, container, gvisor and docker tiers\n"
/* The deployer's egress rules and caps (cfg.allow_hosts, allow_cidrs,
 * egress) and the code's environment variables (cfg.env), for the commands
 * that run code: run, repl, mcp, serve, worker; option_apply takes them too. */
extern const struct option egress_options[];
#define EGRESS_OPTIONS_HELP                                                                   \
	"  --env NAME=VALUE  an environment variable for the code, beside the\n"       \
	"                    sandbox's own; repeatable, up to 64. LD_*, the proxy\n"   \
	"                    variables, PATH, HOME and the PYTHON* that change what\n"  \
	"                    runs are refused, with the reason\n"                     \
	"  --exec-env-allow NAME|PREFIX*  the only names a command's own env may\n"   \
	"                    set (repeatable, up to 64; none: any the rules allow)\n" \
	"  --allow-host PATTERN[:PORTS]  let the code reach this host through\n"   \
	"                    agentjail's proxy: pypi.org or *.pythonhosted.org;\n"   \
	"                    PORTS 443 or 80,443 (default 80,443). Repeatable, up to\n" \
	"                    32. Without a rule there is no network at all\n"      \
	"  --allow-cidr CIDR[:PORTS]  the same for addresses (10.1.0.0/16:5432): the\n" \
	"                    only way to loopback, private or link-local addresses\n" \
	"  --egress-out-mb N     bytes the code may send, MiB (default 64)\n"      \
	"  --egress-in-mb N      bytes it may receive, MiB (default 1024)\n"        \
	"  --egress-connections N  connections it may open (default 256)\n"         \
	"  --egress-kbps N   each direction's rate, kilobits/s (default 0:\n" \
	"                    no cap)\n"                                             \
	"  --trust-ca FILE   PEM CA certificates HTTPS in the sandbox trusts beside\n" \
	"                    the image's bundle (a private index, a TLS-inspecting\n" \
	"                    proxy); every tier\n"                                  \
	"  --secrets FILE    credentials the code can use but never see: a JSON\n"   \
	"                    array of secrets (docs/secrets.md), each sent by the\n"  \
	"                    proxy only to its own hosts. Read from FILE, never the\n" \
	"                    command line; FILE must be a regular file only its\n"   \
	"                    owner can read (chmod 600)\n"                          \
	"  --egress-ca FILE  PEM CA certificates the proxy trusts, beside the host's\n" \
	"                    store, for the upstreams it sends secrets to\n"
/* "agentjail: COMMAND: " + what aj_config_validate said, naming the option. */
void cli_config_error(const char *command, const struct aj_error *err);
/* The directory agentjail keeps a user's state in, made (each missing
 * component 0700): $XDG_STATE_HOME/agentjail, or ~/.local/state/agentjail;
 * with system and root, /var/lib/agentjail. 0, or -1 when no HOME says
 * where. */
int cli_state_dir(bool system, char *out, size_t cap);

/* The argument parsing of run, repl and mcp, apart from what the command
 * then does (fuzz/fuzz_cli_options.c drives them): the config filled and
 * validated, then -1 to go on, or the exit status to return with (the help
 * printed, or what is wrong said on stderr, or with --json as one object on
 * stdout: cli_usage_begin). run's program is the FILE or
 * "-"; mcp's cfg is mcp_config_init'ed by the caller (it reads --config). */
int run_arguments(int argc, char **argv, struct aj_config *cfg, bool *json, const char **program);
/* What `agentjail repl` takes beside the config: where images go, a
 * checkpoint to open the session from, and the checkpoint key's file. */
struct repl_files {
	const char *images_dir;
	const char *restore;
	const char *key;
};
int repl_arguments(int argc, char **argv, struct aj_config *cfg, bool *json,
		   struct repl_files *files);
struct mcp_config;
int mcp_arguments(int argc, char **argv, struct mcp_config *cfg);

/* How run and repl read their arguments alike (parse_command). */
struct command_parse {
	const char *name, *usage;
	const struct option *own;   /* the command's own options (--help is added) */
	const struct option *more;  /* one more family (session_options, ...) */
	void (*own_opt)(int opt, const char *arg, void *ctx);
	/* After the options: the operands (argv from optind) and the config's
	 * check; -1 to go on, else the exit status. */
	int (*finish)(int argc, char **argv, struct aj_config *cfg, void *ctx);
	void *ctx;
};
/* The limit options into cfg (aj_config_init'ed first), the command's own
 * through own_opt, --help, and a usage error said as one (as JSON under
 * --json: cli_usage_begin).
 * Returns -1 to go on, or the exit status to return with. */
int parse_command(int argc, char **argv, const struct command_parse *cp, struct aj_config *cfg);

/* The commands that make a table of tiers (attack, bench): which tiers
 * were asked for (every --tier is a column; none: all of them). */
struct tier_choice {
	bool chosen[AJ_TIER_COUNT];
	bool any;
};
/* Parses such a command's arguments: the limit options and --tier into cfg
 * and tiers, --help, its own options through own_opt (which returns 1 for
 * help, -1 for a bad value after saying why, else 0). Returns -1 to go on, or the
 * exit status to return with. */
int parse_matrix_command(int argc, char **argv, const char *name, const char *usage,
			 const struct option *own, struct aj_config *cfg, struct tier_choice *tiers,
			 int (*own_opt)(int opt, const char *arg, void *ctx), void *ctx);

/* An aj_event_fn that passes a run's output through as it comes: stdout
 * chunks to fd 1, stderr chunks to fd 2 (run, repl). */
void cli_pass_output(void *arg, const struct aj_event *ev);
/* How a run's outcome is printed (run, exec): passed through, one JSON
 * object at the end (--json), or a JSON line per event as it happens
 * (--json-stream). */
enum run_output { RUN_PLAIN, RUN_JSON, RUN_JSON_STREAM };
/* --json-stream's aj_event_fn: one JSON line per event. */
void cli_print_event(void *arg, const struct aj_event *ev);
/* The result as --json prints it (the last line under --json-stream);
 * -1 when it could not be encoded. */
int cli_print_result(const struct aj_result *res, enum aj_tier tier, enum run_output out);
/* agentjail's exit status for a result (docs/design.md's contract): its
 * exit code, 124 timeout, 125 sandbox error, 128+N signal N. */
int cli_exit_code_for(const struct aj_result *r);

/* "agentjail: " + message on stderr (but see cli_usage_begin). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "NAME VERSION" on stdout, for --version: AGENTJAIL_VERSION (agentjail.h)
 * is the one place the version is written. Returns 0. */
int cli_version(const char *name);

/* A command given --json says its usage errors as one JSON object on stdout,
 * {"status":"usage_error","message":...}, and nothing on stderr: a script
 * that asked for JSON never has to parse a second format. cli_asks_json
 * finds --json among argv as getopt_long will read it (not as another
 * option's value). Between cli_usage_begin(true) and cli_usage_end,
 * cli_error keeps its first message instead of printing it;
 * cli_usage_end(rc) prints that object when rc is EXIT_USAGE, and returns
 * rc. */
enum cli_json { CLI_JSON_NO, CLI_JSON_ONE, CLI_JSON_STREAM };
/* --json-stream asks for JSON too (CLI_JSON_STREAM): its usage error is the
 * same object marked "event": "result", the line such a reader ends on. */
enum cli_json cli_asks_json(int argc, char **argv, const struct option *opts,
			    const char *optstring);
void cli_usage_begin(enum cli_json json);
int cli_usage_end(int rc);
/* What getopt_long's '?' or ':' (OPTSTRING's leading ':', opterr 0) was
 * about, said with cli_error, then "try 'agentjail COMMAND --help'". */
void cli_bad_option(const char *command, int c, int argc, char **argv,
		    const struct option *opts);
/* "try 'agentjail COMMAND --help'" on stderr, unless errors go out as JSON. */
void cli_try_help(const char *command);

#endif
