/* agentjail keys: make, list and remove the keys agentjail serve takes,
 * and rotate their webhook secrets. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "http/keys.h"

int cmd_keys(int argc, char **argv);

static const char usage[] =
	"usage: agentjail keys add --file FILE NAME [--concurrency N] [--runs-per-minute N]\n"
	"                          [--sessions N] [--metrics] [--admin] [--e2b]\n"
	"       agentjail keys list --file FILE\n"
	"       agentjail keys remove --file FILE NAME\n"
	"       agentjail keys webhook-secret --file FILE NAME\n"
	"\n"
	"add makes a key, prints it once on stdout, and keeps only its SHA-256 in\n"
	"FILE (made 0600 if missing). Its limits: runs at once (default 4), runs\n"
	"started in any minute (default 600), sessions open (default 4).\n"
	"--metrics lets the key read GET /metrics (every key's counts: the\n"
	"operator's); other keys get 403 there.\n"
	"--admin lets the key list every key's open sessions (GET\n"
	"/v1/sessions?all=true, each with its key's name) and close one (DELETE\n"
	"/v1/sessions/ID): the operator's; other keys get 403 there, and nothing\n"
	"else of another key's is an admin key's to use.\n"
	"--e2b makes the key in the E2B SDKs' shape (e2b_ and 64 hex digits, the\n"
	"same 256 random bits), for code and configs written for E2B; it works on\n"
	"every route as any key does.\n"
	"It also makes the key's webhook secret, which signs its runs' completion\n"
	"webhooks, shown once on stderr and kept in FILE.\n"
	"webhook-secret makes NAME a new webhook secret (the old one stops\n"
	"signing once serve restarts) and prints it once on stdout.\n"
	"agentjail serve reads FILE at start (--keys FILE).\n";

enum { OPT_FILE = 5000, OPT_CONC, OPT_RPM, OPT_SESSIONS, OPT_METRICS, OPT_ADMIN, OPT_E2B,
       OPT_HELP };

static int limit(const char *name, const char *arg, uint32_t *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v < 1 || v > KEY_MAX_LIMIT) {
		cli_error("keys: --%s: expected 1 to %d, got '%s'", name, KEY_MAX_LIMIT, arg);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* A new webhook secret for name, saved, then printed: 0, or 1 said. */
static int rotate_webhook_secret(struct keyring *kr, const char *file, const char *name)
{
	struct key *k = NULL;
	for (size_t i = 0; i < kr->count && !k; i++)
		if (!strcmp(kr->keys[i].name, name))
			k = &kr->keys[i];
	if (!k) {
		cli_error("keys: %s holds no key named '%s'", file, name);
		return 1;
	}
	struct aj_error err = {0};
	if (key_webhook_secret_generate(k)) {
		cli_error("keys: cannot read random bytes");
		return 1;
	}
	if (keys_save(kr, file, &err)) {
		cli_error("keys: %s", err.message);
		return 1;
	}
	printf("%s\n", k->webhook_secret);
	fprintf(stderr, "agentjail: keys: a new webhook secret for '%s' (above); serve signs "
			"with it once restarted\n",
		name);
	return 0;
}

/* keys remove NAME: 0, or 1 said. */
static int remove_key(struct keyring *kr, const char *file, const char *name)
{
	struct aj_error err = {0};
	int rc = 0;
	size_t i = 0;
	while (i < kr->count && strcmp(kr->keys[i].name, name))
		i++;
	if (i == kr->count) {
		cli_error("keys: %s holds no key named '%s'", file, name);
		rc = 1;
	} else {
		memmove(&kr->keys[i], &kr->keys[i + 1], (kr->count - i - 1) * sizeof *kr->keys);
		kr->count--;
		if (keys_save(kr, file, &err)) {
			cli_error("keys: %s", err.message);
			rc = 1;
		} else {
			fprintf(stderr, "agentjail: keys: removed '%s' (a running server "
					"keeps it until restarted)\n",
				name);
		}
	}
	return rc;
}

/* keys list: a line a key, its limits and powers, never its hash. */
static void list_keys(const struct keyring *kr)
{
	/* The powers beside the limits: which keys see every key's counts
	 * or sessions is what an operator checks the file for. WEBHOOK
	 * stays last, where scripts read it. */
	printf("%-24s %11s %15s %8s %7s %5s %7s\n", "NAME", "CONCURRENCY", "RUNS/MINUTE",
	       "SESSIONS", "METRICS", "ADMIN", "WEBHOOK");
	for (size_t i = 0; i < kr->count; i++) {
		const struct key *k = &kr->keys[i];
		printf("%-24s %11u %15u %8u %7s %5s %7s\n", k->name, k->concurrency,
		       k->runs_per_minute, k->sessions, k->metrics ? "yes" : "no",
		       k->admin ? "yes" : "no", k->webhook_secret[0] ? "secret" : "none");
	}
}

/* keys add NAME with nk's limits: 0, or an exit code said. */
static int add_key(struct keyring *kr, const char *file, const char *name, struct key nk,
		   bool e2b_shape)
{
	struct aj_error err = {0};
	int rc = 0;
	if (key_name_check(name, &err)) {
		cli_error("keys: %s", err.message);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < kr->count; i++)
		if (!strcmp(kr->keys[i].name, name)) {
			cli_error("keys: %s already holds a key named '%s' (remove it first)",
				  file, name);
			return 1;
		}
	struct key *grown = realloc(kr->keys, (kr->count + 1) * sizeof *kr->keys);
	if (!grown) {
		return 1;
	}
	kr->keys = grown;
	char token[KEY_TOKEN_MAX + 1];
	snprintf(nk.name, sizeof nk.name, "%s", name);
	if (key_generate(&nk, e2b_shape, token) || key_webhook_secret_generate(&nk)) {
		cli_error("keys: cannot read random bytes");
		return 1;
	}
	kr->keys[kr->count++] = nk;
	if (keys_save(kr, file, &err)) {
		cli_error("keys: %s", err.message);
		return 1;
	}
	/* The token itself is shown this once and kept nowhere. It alone
	 * goes to stdout, as before webhooks, for the scripts that read
	 * it there; the webhook secret, which only a receiver needs, is
	 * shown beside it on stderr (and printed again, new, by
	 * webhook-secret). */
	printf("%s\n", token);
	fprintf(stderr, "agentjail: keys: added '%s' to %s; the key above is not kept: "
			"save it now\n"
			"agentjail: keys: its webhook secret (for the receivers of its runs' "
			"webhooks): %s\n",
		name, file, nk.webhook_secret);
	return rc;
}

int cmd_keys(int argc, char **argv)
{
	static const struct option opts[] = {
		{"file", required_argument, NULL, OPT_FILE},
		{"concurrency", required_argument, NULL, OPT_CONC},
		{"runs-per-minute", required_argument, NULL, OPT_RPM},
		{"sessions", required_argument, NULL, OPT_SESSIONS},
		{"metrics", no_argument, NULL, OPT_METRICS},
		{"admin", no_argument, NULL, OPT_ADMIN},
		{"e2b", no_argument, NULL, OPT_E2B},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0}};
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	const char *action = argv[1];
	if (strcmp(action, "add") && strcmp(action, "list") && strcmp(action, "remove") &&
	    strcmp(action, "webhook-secret")) {
		cli_error("keys: unknown action '%s' (add, list, remove, webhook-secret)", action);
		return EXIT_USAGE;
	}
	const char *file = NULL;
	bool e2b_shape = false;
	struct key nk = {.concurrency = KEY_DEFAULT_CONCURRENCY,
			 .runs_per_minute = KEY_DEFAULT_RUNS_PER_MINUTE,
			 .sessions = KEY_DEFAULT_SESSIONS};
	int o;
	optind = 2;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case OPT_FILE:
			file = optarg;
			break;
		case OPT_CONC:
			if (limit("concurrency", optarg, &nk.concurrency))
				return EXIT_USAGE;
			break;
		case OPT_RPM:
			if (limit("runs-per-minute", optarg, &nk.runs_per_minute))
				return EXIT_USAGE;
			break;
		case OPT_SESSIONS:
			if (limit("sessions", optarg, &nk.sessions))
				return EXIT_USAGE;
			break;
		case OPT_METRICS:
			nk.metrics = true; /* may read /metrics (keys.h) */
			break;
		case OPT_ADMIN:
			nk.admin = true; /* may list and close every key's sessions (keys.h) */
			break;
		case OPT_E2B:
			e2b_shape = true;
			break;
		case 'h':
		case OPT_HELP:
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (!file) {
		cli_error("keys: --file FILE is required");
		return EXIT_USAGE;
	}
	bool needs_name = strcmp(action, "list") != 0;
	if (needs_name ? optind + 1 != argc : optind != argc) {
		cli_error("keys %s: %s", action, needs_name ? "give one NAME" : "takes no NAME");
		return EXIT_USAGE;
	}
	const char *name = needs_name ? argv[optind] : NULL;
	struct aj_error err = {0};
	struct keyring kr = {0};
	bool exists = access(file, F_OK) == 0;
	if (exists && keys_load(&kr, file, &err)) {
		cli_error("keys: %s", err.message);
		return 1;
	}
	if (!exists && strcmp(action, "add")) {
		cli_error("keys: %s: no such file", file);
		return 1;
	}
	int rc = 0;
	if (!strcmp(action, "list")) {
		list_keys(&kr);
	} else if (!strcmp(action, "webhook-secret")) {
		rc = rotate_webhook_secret(&kr, file, name);
	} else if (!strcmp(action, "remove")) {
		rc = remove_key(&kr, file, name);
	} else {
		rc = add_key(&kr, file, name, nk, e2b_shape);
	}
	keys_free(&kr);
	return rc;
}
