#include <errno.h>
#include <stdlib.h>

#include "../cli/cli.h"
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
