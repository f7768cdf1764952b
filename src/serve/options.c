#include <stdlib.h>

#include "../cli/cli.h"
#include "options.h"

enum { OPT_UID_BASE = 7000, OPT_STATE_DIR };

const struct option service_options[] = {
	{"uid-base", required_argument, NULL, OPT_UID_BASE},
	{"state-dir", required_argument, NULL, OPT_STATE_DIR},
	{NULL, 0, NULL, 0},
};

int service_option_apply(int opt, const char *arg, struct aj_config *cfg)
{
	char *end;
	switch (opt) {
	case OPT_UID_BASE: {
		/* Beside other agentjail users on the machine: runs take uids
		 * from this base on, slot locks in --state-dir. */
		unsigned long v = strtoul(arg, &end, 10);
		if (*end || end == arg || arg[0] == '-' || v < 1000 || v > 4000000000UL) {
			cli_error("--uid-base: expected 1000 to 4000000000, got '%s'", arg);
			return -1;
		}
		cfg->uid_base = (uint32_t)v;
		return 1;
	}
	case OPT_STATE_DIR:
		cfg->state_dir = arg;
		return 1;
	}
	return 0;
}
