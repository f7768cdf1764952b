/* agentjail check: which tiers work on this machine, and exactly why the
 * others do not. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: agentjail check [--python PATH]\n"
	"\n"
	"Tries every tier on this machine and prints, for each, 'available' or the\n"
	"precise reason it is not. Exits 0 when at least one tier is available.\n";

int cmd_check(int argc, char **argv)
{
	struct aj_config cfg;
	aj_config_init(&cfg);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--python") && i + 1 < argc) {
			cfg.python = argv[++i];
			continue;
		}
		cli_error("check: unexpected argument '%s'", argv[i]);
		return EXIT_USAGE;
	}
	int available = 0;
	for (int t = 0; t < AJ_TIER_COUNT; t++) {
		struct aj_error err = {0};
		int rc = aj_check((enum aj_tier)t, &cfg, &err);
		if (rc == 0) {
			available++;
			/* A tier may say how it runs here (microvm: which accelerator). */
			if (err.message[0])
				printf("%-10s available (%s)\n", aj_tier_name((enum aj_tier)t),
				       err.message);
			else
				printf("%-10s available\n", aj_tier_name((enum aj_tier)t));
		} else {
			printf("%-10s unavailable: %s\n", aj_tier_name((enum aj_tier)t), err.message);
		}
	}
	return available ? 0 : 1;
}
