/* The hostile-program table: every hostile program agentjail runs against
 * its own tiers, written once, as data. The tier tests (tests/hostile.h),
 * the soak (bench/soak_programs.c), `agentjail attack` (src/cli/attack.c)
 * and the binding's tests (through `agentjail attack --list --json`) all
 * take their programs from here; each keeps its own judging of the
 * outcome, since what a test asserts is finer than what attack can see
 * from the host.
 *
 * Each entry is a Python program with placeholders for what the host set
 * up for it (its needs), and a line saying what counts as held. Every
 * program is bounded even where a tier failed to hold it: loops have
 * counts or deadlines, sleeps are short, signals go to the program's own
 * processes or one sentinel of the host's, mounts aim at a directory of
 * the host's own. They run only inside a tier, never bare. */
#ifndef AJ_ATTACK_PROGRAMS_H
#define AJ_ATTACK_PROGRAMS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* What the host sets up before the program runs, and checks after. */
enum hostile_need {
	/* {SECRET}: a 0600 file holding {TOKEN} in a directory of the
	 * caller's, and the token in the caller's environment, as an API key
	 * would be: neither may come out. */
	HOSTILE_NEEDS_SECRET = 1 << 0,
	/* {PORT}: a TCP listener on 127.0.0.1 that must accept nothing. */
	HOSTILE_NEEDS_LISTENER = 1 << 1,
	/* {HOSTIP} {HOSTPORT}: a listener on the host's own address (or the
	 * loopback one again, where the host has none). */
	HOSTILE_NEEDS_HOST_LISTENER = 1 << 2,
	/* {SOCK}: a world-connectable unix socket that must accept nothing. */
	HOSTILE_NEEDS_UNIX = 1 << 3,
	/* A host process on the very uid the run gets, which must survive;
	 * {SENTINEL} is its pid. */
	HOSTILE_NEEDS_SENTINEL = 1 << 4,
	/* A host process with {TOKEN} in its command line, which must not be
	 * seen. */
	HOSTILE_NEEDS_CMDLINE = 1 << 5,
	/* {TOKEN} as a key in a session keyring of the caller's. */
	HOSTILE_NEEDS_KEYRING = 1 << 6,
	/* {MNT}: an empty directory of the host's; the host's mount table
	 * must not change. */
	HOSTILE_NEEDS_MOUNTS = 1 << 7,
	/* It tries to leave marker files named MARKER{TOKEN} (the entry's
	 * marker) in the host's writable places: none may appear there. */
	HOSTILE_NEEDS_MARKERS = 1 << 8,
	/* Nothing of its own may outlive the run: the host waits a moment
	 * after it before looking (a daemon acts 1.5 s after its parent). */
	HOSTILE_NEEDS_WAIT = 1 << 9,
	/* Egress rules (docs/egress.md): {PORT} is an HTTP server on
	 * 127.0.0.1 (egress_server.h) that the run's rules allow
	 * (allow-cidr 127.0.0.1/32:{PORT}), which must see the request the
	 * program makes through the proxy and nothing else; {HOSTPORT} a UDP
	 * socket on 127.0.0.1 that must receive nothing. */
	HOSTILE_NEEDS_EGRESS = 1 << 10,
};

enum hostile_id {
	HOSTILE_CPU_LOOP,
	HOSTILE_MEMORY_512MB,
	HOSTILE_FORK_BOMB,
	HOSTILE_FORK_FLAT,
	HOSTILE_DISK_FILL,
	HOSTILE_DISK_FILL_EVERYWHERE,
	HOSTILE_READ_SECRETS,
	HOSTILE_NETWORK,
	HOSTILE_NETWORK_HOST,
	HOSTILE_SLEEP_FOREVER,
	HOSTILE_OUTPUT_FLOOD,
	HOSTILE_THREAD_BOMB,
	HOSTILE_BIG_FILE,
	HOSTILE_BIG_FILE_EVERYWHERE,
	HOSTILE_MANY_FILES,
	HOSTILE_FILL_TMP_AND_SHM,
	HOSTILE_DAEMON,
	HOSTILE_KILL_ALL,
	HOSTILE_KILL_SENTINEL,
	HOSTILE_LIST_PROC,
	HOSTILE_HOST_CMDLINE,
	HOSTILE_WRITE_EVERYWHERE,
	HOSTILE_HOST_UNIX_SOCKET,
	HOSTILE_KEYRINGS,
	HOSTILE_KEYRING_READ,
	HOSTILE_DEVICES,
	HOSTILE_DEVICES_BRIEF,
	HOSTILE_DENIED_SYSCALLS,
	HOSTILE_MOUNT_UNSHARE,
	HOSTILE_EGRESS_BYPASS,
	HOSTILE_COUNT
};

struct hostile_program {
	const char *id;         /* a stable name: "fork-bomb" */
	/* Python; placeholders (filled as the contents of '...' literals):
	 * {TOKEN} {SECRET} {SOCK} {CWD} {MNT} {HOSTIP}, and the numbers
	 * {PORT} {HOSTPORT} {SENTINEL}. */
	const char *code;
	unsigned needs;         /* HOSTILE_NEEDS_* */
	const char *marker;     /* with HOSTILE_NEEDS_MARKERS: the files' prefix */
	const char *held;       /* what counts as held, in a line */
};

extern const struct hostile_program hostile_programs[HOSTILE_COUNT];

/* The host's places a marker could land in, besides the caller's working
 * directory; NULL-terminated. */
extern const char *const hostile_marker_dirs[];

/* What fills the placeholders: strings (NULL: empty) and numbers. */
struct hostile_values {
	const char *token, *secret, *sock, *cwd, *mnt, *host_ip;
	int port, host_port;
	pid_t sentinel;
};

/* The languages a hostile program is written in: the table's Python,
 * and languages.c's shell lines and JavaScript. */
enum hostile_lang { HOSTILE_PYTHON, HOSTILE_SHELL, HOSTILE_JS, HOSTILE_LANG_COUNT };

/* The code with its placeholders filled, each value escaped for the
 * language's '...' literal (malloc'd; NULL: out of memory). */
char *hostile_fill_lang(const char *code, const struct hostile_values *v, enum hostile_lang lang);

/* s written to m as the contents of the language's '...' literal. */
void hostile_put_literal(FILE *m, const char *s, enum hostile_lang lang);

/* The program with its placeholders filled (malloc'd; NULL: out of
 * memory). Strings are escaped for a Python '...' literal, so a cwd with
 * a quote in its name cannot break the program (and turn an attack into a
 * SyntaxError that would prove nothing). */
char *hostile_fill(const char *code, const struct hostile_values *v);

/* The names of a needs mask's bits, for --list ("secret", "listener"...):
 * the i-th bit's name, or NULL past the last. */
const char *hostile_need_name(unsigned bit_index);

#endif
