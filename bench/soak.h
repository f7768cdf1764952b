/* soak: what the soak's files share. See soak.c for the theory of operation. */
#ifndef AJ_SOAK_H
#define AJ_SOAK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentjail.h"
#include "../src/attack/programs.h"

/* ---- the host's side of the hostile programs (soak_programs.c) ---- */

#define SOAK_SENTINELS 16  /* one per slot uid: cfg.slots is this */

/* What the host sets up so that an escape would show, and checks after a
 * phase: a secret only the caller can read, a TCP and a unix listener no run
 * may reach, a sentinel process on every sandbox uid that kill(-1) must not
 * reach, and the names of the marker files a daemon or a stray write would
 * leave on the host. */
struct soak_host {
	char token[40];          /* fresh per soak; in the secret, the env, the markers */
	char secret_dir[128];
	char secret_file[160];
	int tcp_fd;
	int tcp_port;
	int unix_fd;
	char unix_dir[96];
	char unix_path[128];
	pid_t sentinels[SOAK_SENTINELS];
	uint32_t uid_base;
	char cwd[1024];
	char *codes[64];         /* the table's programs, placeholders filled */
};

/* Returns false with why filled when the outcome is not what the contract
 * promises for this program. */
typedef bool (*soak_check_fn)(const struct aj_result *r, const struct aj_config *cfg,
			      const struct soak_host *h, char *why, size_t n);

struct soak_program {
	const char *name;
	bool hostile;
	unsigned weight;         /* runs per 1000 */
	/* A benign program's own code; NULL: the hostile table's program
	 * (src/attack/programs.h). Placeholders filled in either way. */
	const char *code;
	enum hostile_id program;
	soak_check_fn check;
};

extern const struct soak_program soak_programs[];
extern const size_t soak_program_count;

int soak_host_setup(struct soak_host *h, uint32_t uid_base);
/* Starts the sentinels (as root: one on each slot's uid); 0 or -errno. */
int soak_sentinels_start(struct soak_host *h);
/* Kills and reaps them; how many had died before (kill(-1) reached them). */
int soak_sentinels_stop(struct soak_host *h);
/* After a phase: how many pieces of evidence of an escape the host holds
 * (a listener accepted, a marker file written, a sentinel gone), each
 * described on stderr-ready lines in report (NUL-terminated). */
int soak_host_evidence(struct soak_host *h, char *report, size_t n);
void soak_host_teardown(struct soak_host *h);

/* The program for run number i of a phase (a fixed, weighted schedule:
 * the same counts every time, hostile runs spread among benign ones). */
size_t soak_pick(uint64_t i);

/* ---- the leftover census (soak_census.c) ---- */

enum census_scope {
	SCOPE_OURS,    /* only this soak can make it grow: growth fails */
	SCOPE_SHARED,  /* machine-wide: others' work moves it too; shown only */
};

#define CENSUS_MAX 24
#define CENSUS_DETAIL 1024

struct census_item {
	const char *name;
	enum census_scope scope;
	long value;
	char detail[CENSUS_DETAIL];  /* what the leftovers are, when there are any */
};

struct census {
	struct census_item item[CENSUS_MAX];
	size_t count;
	char *mountinfo;
};

/* What the census looks for: the soak's own state directory and uid
 * range, and the pid whose cgroups (run-PID-*) and docker containers
 * (org.agentjail.owner ...:PID:...) are ours. */
struct census_scope_def {
	const char *state_dir;
	uint32_t uid_base;
	uint32_t slots;
	pid_t owner;             /* the process that makes the runs */
	bool docker;             /* ask the engine for containers */
};

void census_take(const struct census_scope_def *s, struct census *c);
void census_free(struct census *c);
/* Prints the table (before, after, growth); returns how many "ours"
 * items grew, naming each. */
int census_compare(const char *title, const struct census *before, const struct census *after);
/* The host's mount table lines that were not there before (docker's own
 * excluded), as text; "" when none. Static buffer. */
const char *census_mount_diff(const char *before, const char *after);
long census_rss_kb(pid_t pid);

/* ---- the MCP server (soak_mcp.c) ---- */

struct soak_mcp_result {
	pid_t pid;               /* the server's */
	long calls;
	long mismatches;
	long rss_warm_kb, rss_end_kb;
	long warm_at;
	bool clean_exit;
	int exit_status;
	double seconds;
	char first_mismatch[512];
};

/* Drives `agentjail mcp --tier process` for calls tools/call run_python
 * calls (4 in flight), sampling its VmRSS after warm calls and at the end;
 * 0, or -1 when the server could not be driven at all. */
int soak_mcp(const char *agentjail, struct soak_host *h, long calls, long warm,
	     struct soak_mcp_result *out);

#endif
