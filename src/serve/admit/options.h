/* The options agentjail serve and agentjail worker share beyond the run
 * limits: where runs take their uids and keep their slot locks, so a
 * service can run beside other agentjail users on the machine. */
#ifndef AJ_SERVE_OPTIONS_H
#define AJ_SERVE_OPTIONS_H

#include <getopt.h>
#include <signal.h>

#include "agentjail.h"

#define SERVICE_OPTIONS_HELP                                                              \
	"  --uid-base N         first uid runs get when started as root (default\n"       \
	"                       2000000000), and --state-dir DIR for their slot locks\n"

extern const struct option service_options[];
/* 1 if opt is one of service_options (applied to cfg), 0 if it is not,
 * -1 after saying what is wrong with its value. */
int service_option_apply(int opt, const char *arg, struct aj_config *cfg);

/* serve's and worker's command line, read alike: the command's own options
 * (own, each given to own_opt: 0, or -1 after saying what is wrong), the
 * run limits and the session, service and one-tier options (into cfg),
 * --help (usage), no operand, and a config aj_config_validate takes.
 * Returns -1 to go on, else the exit code. */
int service_parse(int argc, char **argv, const char *name, const char *usage,
		  const struct option *own, struct aj_config *cfg,
		  int (*own_opt)(int opt, const char *arg, void *ctx), void *ctx);

/* serve's and worker's signals, set before any thread starts (so that
 * every thread inherits the mask): SIGTERM and SIGINT blocked, in *stop,
 * for the main thread's sigwait; SIGPIPE ignored. */
void service_block_signals(sigset_t *stop);

/* --NAME's whole number from lo to hi into *out: 0, or -1 after saying
 * what is wrong with it. */
int parse_count(const char *name, const char *arg, long lo, long hi, long *out);
/* The same, into an unsigned. */
int parse_count_u(const char *name, const char *arg, long lo, long hi, unsigned *out);

#endif
