#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../cli/cli.h"
#include "options.h"

enum { OPT_UID_BASE = 7000, OPT_STATE_DIR };

int parse_count(const char *name, const char *arg, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v < lo || v > hi) {
		cli_error("--%s: expected %ld to %ld, got '%s'", name, lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}

int parse_count_u(const char *name, const char *arg, long lo, long hi, unsigned *out)
{
	long v;
	if (parse_count(name, arg, lo, hi, &v))
		return -1;
	*out = (unsigned)v;
	return 0;
}

const struct option service_options[] = {
	{"uid-base", required_argument, NULL, OPT_UID_BASE},
	{"state-dir", required_argument, NULL, OPT_STATE_DIR},
	{NULL, 0, NULL, 0},
};

int service_option_apply(int opt, const char *arg, struct aj_config *cfg)
{
	switch (opt) {
	case OPT_UID_BASE: {
		/* Beside other agentjail users on the machine: runs take uids
		 * from this base on, slot locks in --state-dir. */
		long v;
		if (parse_count("uid-base", arg, 1000, 4000000000L, &v))
			return -1;
		cfg->uid_base = (uint32_t)v;
		return 1;
	}
	case OPT_STATE_DIR:
		cfg->state_dir = arg;
		return 1;
	}
	return 0;
}

/* Room for every option serve and worker take (the shared egress,
 * session, service and tier options and their own): options_add drops
 * what does not fit, so this is well above their count. */
#define SERVE_OPTIONS_MAX 80

int service_parse(int argc, char **argv, const char *name, const char *usage,
		  const struct option *own, struct aj_config *cfg,
		  int (*own_opt)(int opt, const char *arg, void *ctx), void *ctx)
{
	static const struct option help[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	struct option opts[SERVE_OPTIONS_MAX];
	options_with(own, opts, SERVE_OPTIONS_MAX);
	options_add(help, opts, SERVE_OPTIONS_MAX);
	options_add(session_options, opts, SERVE_OPTIONS_MAX);
	options_add(service_options, opts, SERVE_OPTIONS_MAX);
	options_add(one_tier_options, opts, SERVE_OPTIONS_MAX);
	options_add(egress_options, opts, SERVE_OPTIONS_MAX);
	int o, applied;
	optind = 1;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if ((applied = service_option_apply(o, optarg, cfg)) < 0)
			return EXIT_USAGE;
		if (applied)
			continue;
		if (o == 'h') {
			fputs(usage, stdout);
			return 0;
		}
		if (o == '?') {
			fprintf(stderr, "try 'agentjail %s --help'\n", name);
			return EXIT_USAGE;
		}
		bool mine = false;
		for (size_t i = 0; own[i].name; i++)
			mine |= own[i].val == o;
		if (mine ? own_opt(o, optarg, ctx) : option_apply(o, optarg, cfg))
			return EXIT_USAGE;
	}
	if (optind != argc) {
		cli_error("%s: unexpected argument '%s'", name, argv[optind]);
		return EXIT_USAGE;
	}
	struct aj_error err;
	if (aj_config_validate(cfg, &err)) {
		cli_config_error(name, &err);
		return EXIT_USAGE;
	}
	return -1;
}

void service_block_signals(sigset_t *stop)
{
	sigemptyset(stop);
	sigaddset(stop, SIGTERM);
	sigaddset(stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, stop, NULL);
	/* A client that hangs up mid-answer must not end the server. */
	signal(SIGPIPE, SIG_IGN);
}
