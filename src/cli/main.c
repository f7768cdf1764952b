/* agentjail: run code an AI agent wrote, in a sandbox. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: agentjail COMMAND [options]     (agentjail COMMAND --help for its options)\n"
	"       agentjail --version\n"
	"\n"
	"Runs untrusted Python in a sandbox and reports what it printed and how it\n"
	"ended. The deployer chooses the tier and the limits; the code cannot widen\n"
	"them.\n"
	"\n"
	"commands:\n"
	"  run FILE|-     run one program\n"
	"  exec -- CMD..  run one command (or --shell LINE) in a fresh sandbox\n"
	"  repl           a session: state, files and charts that last across cells\n"
	"  check          which tiers work on this machine, and why the others don't\n"
	"  image          build, list and remove the image roots the container, microvm,\n"
	"                 gvisor and (imported) docker tiers run\n"
	"  mcp            serve run_python to an AI agent over MCP (stdio)\n"
	"  attack         the hostile-program matrix: which tier held what\n"
	"  bench          what each tier costs in latency, beside bare python and peers\n"
	"  serve          serve run_python to many agents over HTTP: a JSON API, MCP\n"
	"                 (/mcp) and metrics, with keys; --queue puts runs on Redis\n"
	"  keys           add, list and remove the keys serve accepts\n"
	"  worker         take runs from serve's Redis queue and run them here\n"
	"(serve, keys and worker are in agentjail-serve, built and installed beside\n"
	"agentjail, which runs it for them.)\n"
	"\n"
	"options:\n"
	"  -h, --help     this help\n"
	"  --version      print agentjail's version\n"
	"\n"
	"examples:\n"
	"  agentjail run hello.py\n"
	"  echo 'print(6*7)' | agentjail run --json -\n"
	"  agentjail run job.py --timeout 2 --memory 128 --tier process\n"
	"  agentjail image build && agentjail run --tier container job.py\n"
	"  agentjail repl --tier container --images charts/\n";

/* serve and keys live in agentjail-serve, beside this binary: it links
 * an HTTP server and libcrypto that a one-shot run should not load. */
static int exec_service(char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		cli_error("cannot find this program's own path: %s", strerror(errno));
		return 1;
	}
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	*slash = '\0';
	snprintf(path, sizeof path, "%s/agentjail-serve", self);
	execv(path, argv);
	cli_error("%s: %s (it is built beside agentjail: make)", path, strerror(errno));
	return 1;
}

/* The commands, in one table: tests/tree/test_help_docs.py reads it to ask
 * each one (and each of its subcommands) for --help. fn NULL: a command of
 * agentjail-serve. */
static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{"run", cmd_run},       {"exec", cmd_exec},     {"repl", cmd_repl},   {"check", cmd_check},
	{"image", cmd_image},   {"mcp", cmd_mcp},       {"attack", cmd_attack}, {"bench", cmd_bench},
	{"serve", NULL},        {"keys", NULL},         {"worker", NULL},
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].fn ? commands[i].fn(argc - 1, argv + 1) : exec_service(argv);
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version"))
		return cli_version("agentjail");
	/* No command's parser ran: --json anywhere asked for JSON. */
	bool json = false;
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		json |= !strcmp(argv[i], "--json");
	cli_usage_begin(json);
	cli_error("unknown command '%s' (agentjail --help lists them)", cmd);
	if (!json)
		fputs(usage, stderr);
	return cli_usage_end(EXIT_USAGE);
}
