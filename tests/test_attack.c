/* agentjail attack's verdicts, on fabricated evidence: what the host saw
 * after a run decides, never what the program said. Any sign of an escape
 * reads ESCAPED whatever the status; a clean run reads held; a limit that
 * did not stop the program is an escape from that limit; a tier that is not
 * there is n/a; a sandbox that failed is an error, not a pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include <stdio.h>
#include <stdlib.h>

#include <errno.h>
#include <unistd.h>

#include "src/attack/isolation.h"
#include "src/attack/languages.h"
#include "src/attack/programs.h"
#include "src/attack/verdict.h"

static char why[64];

static enum attack_verdict judge(const struct attack_expect *x, const struct attack_evidence *e)
{
	return attack_judge(x, e, why, sizeof why);
}

static void clean_run_is_held(void **state)
{
	(void)state;
	struct attack_expect x = {0};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.token_seen = 0;
	e.procs_left = 0;
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
	assert_string_equal(why, "token not seen");
	attack_evidence_init(&e);
	e.listener_accepted = 0;
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
	assert_string_equal(why, "nothing accepted");
}

/* Egress: held only with the proxied request arrived and nothing else;
 * without the allowed request, the bypasses after it prove nothing. */
static void egress_is_judged_from_the_origin(void **state)
{
	(void)state;
	struct attack_expect x = {.must_finish = true};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.status = AJ_STATUS_OK;
	e.egress_allowed_arrived = 1;
	e.listener_accepted = 0;
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
	assert_string_equal(why, "only proxied arrived");
	e.listener_accepted = 1;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	e.listener_accepted = 0;
	e.egress_allowed_arrived = 0;
	assert_int_equal(judge(&x, &e), VERDICT_ERROR);
}

static void shown_token_is_escaped(void **state)
{
	(void)state;
	struct attack_expect x = {0};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.token_seen = 1;
	/* Even a run that "failed" cleanly: the token came out. */
	e.status = AJ_STATUS_ERROR;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	assert_string_equal(why, "secret token came out");
}

static void written_marker_is_escaped(void **state)
{
	(void)state;
	struct attack_expect x = {0};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.marker_written = 1;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	assert_string_equal(why, "wrote on the host");
}

static void dead_sentinel_is_escaped(void **state)
{
	(void)state;
	struct attack_expect x = {0};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.sentinel_alive = 0;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	attack_evidence_init(&e);
	e.sentinel_alive = 1;
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
	assert_string_equal(why, "sentinel alive");
}

static void other_escapes(void **state)
{
	(void)state;
	struct attack_expect x = {.max_procs = 66, .max_disk_mb = 64, .max_output = 1024};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.listener_accepted = 1;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	attack_evidence_init(&e);
	e.procs_left = 2;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	assert_string_equal(why, "2 process(es) outlived it");
	attack_evidence_init(&e);
	e.mounts_changed = 1;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	attack_evidence_init(&e);
	e.max_procs = 67;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	e.max_procs = 66;
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
	e.disk_drop_mb = 500;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	e.disk_drop_mb = 10;
	e.output_bytes = 1025;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
}

static void limit_that_did_not_stop_it(void **state)
{
	(void)state;
	struct attack_expect x = {.stopped_by = 1u << AJ_STATUS_TIMEOUT};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.status = AJ_STATUS_OK; /* the CPU loop ran to its own end */
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	assert_string_equal(why, "not stopped: ok");
	e.status = AJ_STATUS_TIMEOUT;
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
	assert_string_equal(why, "timeout");
}

/* An attack that must run to its end and did not (a crash, a timeout, its
 * output cut) proved nothing: error, never held. */
static void unfinished_is_not_held(void **state)
{
	(void)state;
	struct attack_expect x = {.must_finish = true};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.marker_written = 0;
	enum aj_status bad[] = {AJ_STATUS_ERROR, AJ_STATUS_TIMEOUT, AJ_STATUS_OUTPUT_LIMIT,
				AJ_STATUS_KILLED, AJ_STATUS_MEMORY};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		e.status = bad[i];
		assert_int_equal(judge(&x, &e), VERDICT_ERROR);
		assert_true(strncmp(why, "did not finish", 14) == 0);
	}
	e.status = AJ_STATUS_OK;
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
	assert_string_equal(why, "no marker on host");
	/* But an escape is an escape, finished or not. */
	e.status = AJ_STATUS_TIMEOUT;
	e.marker_written = 1;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
}

/* A check that was not made (-1) is not evidence either way. */
static void unmade_checks_are_not_evidence(void **state)
{
	(void)state;
	struct attack_expect x = {.max_procs = 66};
	struct attack_evidence e;
	attack_evidence_init(&e);
	assert_int_equal(e.token_seen, -1);
	assert_int_equal(e.max_procs, -1);
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
	assert_string_equal(why, "ok");
}

static void unavailable_and_failed(void **state)
{
	(void)state;
	struct attack_expect x = {0};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.ran = false;
	assert_int_equal(judge(&x, &e), VERDICT_NA);
	attack_evidence_init(&e);
	e.status = AJ_STATUS_SANDBOX_ERROR;
	assert_int_equal(judge(&x, &e), VERDICT_ERROR);
	/* ... unless it escaped before failing. */
	e.marker_written = 1;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	assert_string_equal(attack_verdict_name(VERDICT_ESCAPED), "ESCAPED");
}

/* Exit 127 (the image lacks node or a tool): n/a, not an escape nor a
 * pass; yet any sign of an escape still reads ESCAPED. */
static void missing_tool_is_na(void **state)
{
	(void)state;
	struct attack_expect x = {.stopped_by = 1u << AJ_STATUS_TIMEOUT};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.status = AJ_STATUS_ERROR;
	e.missing = 1;
	assert_int_equal(judge(&x, &e), VERDICT_NA);
	assert_string_equal(why, "not in the image");
	e.listener_accepted = 1;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	e.listener_accepted = -1;
	e.missing = 0;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED); /* an error is no timeout */
}

/* A program that ended with an error or a signal held against the memory
 * limit only if the host's figure of its peak stayed within the limit. */
static void memory_peak_decides_for_other_runtimes(void **state)
{
	(void)state;
	struct attack_expect x = {.stopped_by = (1u << AJ_STATUS_MEMORY) | (1u << AJ_STATUS_ERROR) |
						(1u << AJ_STATUS_KILLED),
				  .max_memory_kb = 262144};
	struct attack_evidence e;
	attack_evidence_init(&e);
	e.status = AJ_STATUS_ERROR;
	e.memory_kb = 262144;
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
	e.memory_kb = 600000;
	assert_int_equal(judge(&x, &e), VERDICT_ESCAPED);
	assert_string_equal(why, "held 585 MiB");
	/* Ended by the memory limit as the tier saw it: held, whatever the
	 * RSS figure says (file pages charged elsewhere count in it). */
	e.status = AJ_STATUS_MEMORY;
	assert_int_equal(judge(&x, &e), VERDICT_HELD);
}

/* ---- the hostile-program table every user runs (programs.h) ---- */

/* Each program has a unique name, code and a line on what holding means;
 * every placeholder it uses is one the host fills, and its fixture is
 * among the needs the entry declares (a user that sets up only what the
 * needs say must leave no placeholder of the program unset). */
static const struct {
	const char *key;
	unsigned need; /* 0: always filled */
} placeholders[] = {{"{TOKEN}", 0},
		    {"{CWD}", 0},
		    {"{SECRET}", HOSTILE_NEEDS_SECRET},
		    /* A listener, or the egress origin and its UDP socket. */
		    {"{PORT}", HOSTILE_NEEDS_LISTENER | HOSTILE_NEEDS_EGRESS},
		    {"{HOSTIP}", HOSTILE_NEEDS_HOST_LISTENER},
		    {"{HOSTPORT}", HOSTILE_NEEDS_HOST_LISTENER | HOSTILE_NEEDS_EGRESS},
		    {"{SOCK}", HOSTILE_NEEDS_UNIX},
		    {"{SENTINEL}", HOSTILE_NEEDS_SENTINEL},
		    {"{MNT}", HOSTILE_NEEDS_MOUNTS}};

/* Every placeholder code uses is declared by p's needs, and a marker
 * program writes its marker with the token. */
static void check_fixtures(const struct hostile_program *p, const char *code, const char *lang)
{
	const size_t nk = sizeof placeholders / sizeof placeholders[0];
	for (const char *c = code; (c = strchr(c, '{')); c++) {
		size_t k = 0;
		for (; k < nk; k++)
			if (!strncmp(c, placeholders[k].key, strlen(placeholders[k].key)))
				break;
		/* Not a placeholder at all: a dict, a set, a block. */
		if (k == nk) {
			assert_false(c[1] >= 'A' && c[1] <= 'Z');
			continue;
		}
		if (placeholders[k].need && !(p->needs & placeholders[k].need))
			fail_msg("%s (%s) uses %s but does not declare its fixture", p->id, lang,
				 placeholders[k].key);
	}
	/* A marker program names its marker, with the token, so that the
	 * host knows what to look for and whose it is. */
	if (p->needs & HOSTILE_NEEDS_MARKERS) {
		char want[64];
		assert_non_null(p->marker);
		snprintf(want, sizeof want, "%s{TOKEN}", p->marker);
		if (!strstr(code, want))
			fail_msg("%s (%s) does not write %s", p->id, lang, want);
	} else {
		assert_null(p->marker);
	}
}

/* Each program has a unique name, code and a line on what holding means;
 * every placeholder it uses, in every language it is written in, is one
 * the host fills, and its fixture is among the needs the entry declares
 * (a user that sets up only what the needs say must leave no placeholder
 * of the program unset). */
static void table_entries_declare_their_fixtures(void **state)
{
	(void)state;
	for (size_t i = 0; i < HOSTILE_COUNT; i++) {
		const struct hostile_program *p = &hostile_programs[i];
		assert_non_null(p->id);
		assert_non_null(p->code);
		assert_non_null(p->held);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(p->id, hostile_programs[j].id);
		for (int l = 0; l < HOSTILE_LANG_COUNT; l++) {
			const char *code = hostile_code((enum hostile_id)i, (enum hostile_lang)l, NULL);
			if (code)
				check_fixtures(p, code, hostile_lang_name((enum hostile_lang)l));
		}
	}
}

/* The core attacks are there in every language (issue 36's list); the
 * Python code is the table's. */
static void core_attacks_in_every_language(void **state)
{
	(void)state;
	static const enum hostile_id core[] = {
		HOSTILE_CPU_LOOP,        HOSTILE_MEMORY_512MB,         HOSTILE_FORK_FLAT,
		HOSTILE_DISK_FILL_EVERYWHERE, HOSTILE_READ_SECRETS,    HOSTILE_NETWORK_HOST,
		HOSTILE_SLEEP_FOREVER,   HOSTILE_OUTPUT_FLOOD};
	for (size_t i = 0; i < sizeof core / sizeof core[0]; i++)
		for (int l = 0; l < HOSTILE_LANG_COUNT; l++)
			if (!hostile_code(core[i], (enum hostile_lang)l, NULL))
				fail_msg("%s has no %s program", hostile_programs[core[i]].id,
					 hostile_lang_name((enum hostile_lang)l));
	assert_ptr_equal(hostile_code(HOSTILE_KEYRINGS, HOSTILE_PYTHON, NULL),
			 hostile_programs[HOSTILE_KEYRINGS].code);
	assert_null(hostile_code(HOSTILE_KEYRINGS, HOSTILE_SHELL, NULL));
	const char *tools = NULL;
	assert_non_null(hostile_code(HOSTILE_NETWORK_HOST, HOSTILE_SHELL, &tools));
	assert_string_equal(tools, "curl");
	enum hostile_lang lang = HOSTILE_PYTHON;
	assert_int_equal(hostile_lang_parse("sh", &lang), 0);
	assert_int_equal(lang, HOSTILE_SHELL);
	assert_int_equal(hostile_lang_parse("javascript", &lang), 0);
	assert_int_equal(lang, HOSTILE_JS);
	assert_int_equal(hostile_lang_parse("perl", &lang), -1);
	assert_int_equal(lang, HOSTILE_JS);
}

/* In a shell line a value lands inside '...': a quote in it ends the
 * literal, escapes itself and starts it again; the launcher carries the
 * line and the tools inside Python literals. */
static void shell_fill_and_launcher_escape(void **state)
{
	(void)state;
	struct hostile_values v = {.token = "t0k", .cwd = "/a'b\\c", .port = 42};
	char *code = hostile_fill_lang("cd '{CWD}' && echo '{TOKEN}' {PORT}", &v, HOSTILE_SHELL);
	assert_non_null(code);
	assert_string_equal(code, "cd '/a'\\''b\\c' && echo 't0k' 42");
	char *program = hostile_shell_program(code, "head tr");
	assert_non_null(program);
	assert_non_null(strstr(program, "['/bin/sh'] + 'head tr'.split()"));
	assert_non_null(strstr(program, "exit(127)"));
	assert_non_null(strstr(program, "['sh', '-c', 'cd \\'/a\\'\\\\\\'\\'b\\\\c\\' && echo \\'t0k\\' 42'])"));
	free(program);
	free(code);
}

/* Filled values land inside Python '...' literals: a quote or backslash in
 * a path cannot end the literal early and turn the program into a
 * SyntaxError that would prove nothing. */
static void fill_escapes_and_fills_every_placeholder(void **state)
{
	(void)state;
	struct hostile_values v = {.token = "t0k", .secret = "/a'b\\c", .port = 42};
	char *code = hostile_fill("x = ['{SECRET}', {PORT}, '{TOKEN}', '{SOCK}']", &v);
	assert_non_null(code);
	assert_string_equal(code, "x = ['/a\\'b\\\\c', 42, 't0k', '']");
	free(code);
	v = (struct hostile_values){.token = "T", .secret = "S", .sock = "K", .cwd = "C",
				    .mnt = "M", .host_ip = "H", .port = 1, .host_port = 2,
				    .sentinel = 3};
	for (size_t i = 0; i < HOSTILE_COUNT; i++) {
		assert_non_null(code = hostile_fill(hostile_programs[i].code, &v));
		for (const char *c = code; (c = strchr(c, '{')); c++)
			if (c[1] >= 'A' && c[1] <= 'Z')
				fail_msg("%s: %.20s left unfilled", hostile_programs[i].id, c);
		free(code);
	}
}

/* ---- beside other sandboxes (isolation.h) ---- */

static int first_range_busy(uint32_t lo, uint32_t hi)
{
	return lo <= 1000 && 1000 < hi;
}

/* Each invocation takes a uid range no other holds: a second attack gets
 * the next range, a range comes free when its holder ends, one where
 * processes run is passed over, and with every range taken the error says
 * so. */
static void uid_range_is_taken_per_invocation(void **state)
{
	(void)state;
	char dir[] = "/tmp/aj-test-attack-XXXXXX", what[256], path[64];
	assert_non_null(mkdtemp(dir));
	uint32_t a, b, c, d;
	int fa, fb, fc, fd;
	assert_int_equal(attack_range_take(dir, 1000, 8, 3, NULL, &a, &fa, what, sizeof what), 0);
	assert_int_equal(attack_range_take(dir, 1000, 8, 3, NULL, &b, &fb, what, sizeof what), 0);
	assert_int_equal(attack_range_take(dir, 1000, 8, 3, NULL, &c, &fc, what, sizeof what), 0);
	assert_int_equal(a, 1000);
	assert_int_equal(b, 1008);
	assert_int_equal(c, 1016);
	assert_int_equal(attack_range_take(dir, 1000, 8, 3, NULL, &d, &fd, what, sizeof what), -EBUSY);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(what, "all 3 uid ranges"));
	close(fb); /* the second attack ends: its range is free again */
	assert_int_equal(attack_range_take(dir, 1000, 8, 3, NULL, &d, &fd, what, sizeof what), 0);
	assert_int_equal(d, 1008);
	close(fd);
	close(fa);
	/* A range where processes run already (another program's sandboxes
	 * on the same uids) is passed over, though no attack holds it. */
	assert_int_equal(attack_range_take(dir, 1000, 8, 3, first_range_busy, &d, &fd, what,
					   sizeof what), 0);
	assert_int_equal(d, 1008);
	assert_int_equal(attack_range_take(dir, 1000, 8, 3, NULL, &a, &fa, what, sizeof what), 0);
	assert_int_equal(a, 1000);
	close(fa);
	close(fc);
	close(fd);
	for (unsigned base = 1000; base <= 1016; base += 8) {
		snprintf(path, sizeof path, "%s/range-%u", dir, base);
		unlink(path);
	}
	rmdir(dir);
	/* The block itself is no default's: the tiers' 64 slots from
	 * 2000000000, bench's 2060000000, the suites' 2100000000 and up. */
	assert_true(ATTACK_UID_FIRST >= 2000000000u + 64u);
	assert_true(ATTACK_UID_FIRST > 2060000000u + 64u);
	assert_true(ATTACK_UID_FIRST + ATTACK_SLOTS * ATTACK_RANGES <= 2100000000u);
}

/* Only the mounts under the attack's own directories count: a neighbour's
 * overlay, a prefix that is not a parent, and the rest of the table do not;
 * mountinfo's escapes are read back. */
static void only_its_own_mounts_are_compared(void **state)
{
	(void)state;
	const char *table =
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		"90 22 0:50 / /run/agentjail-attack-abc/mnt rw - tmpfs none rw\n"
		"91 22 0:51 / /run/agentjail-attack-abcd rw - tmpfs none rw\n"
		"92 22 0:52 / /var/lib/docker/overlay2/x/merged rw - overlay overlay rw\n"
		"93 22 0:53 / /run/agentjail-attack-abc rw - tmpfs none rw\n"
		"94 22 0:54 / /images/test/with\\040space rw - tmpfs none rw\n"
		"95 22 0:55 / /images/testing rw - tmpfs none rw";
	const char *dirs[] = {"/run/agentjail-attack-abc", "", "/images/test/"};
	char *mine = attack_mounts_within(table, dirs, 3);
	assert_non_null(mine);
	assert_string_equal(mine, "90 22 0:50 / /run/agentjail-attack-abc/mnt rw - tmpfs none rw\n"
				  "93 22 0:53 / /run/agentjail-attack-abc rw - tmpfs none rw\n"
				  "94 22 0:54 / /images/test/with\\040space rw - tmpfs none rw\n");
	free(mine);
	/* A neighbour's mount coming and going leaves the comparison equal. */
	const char *dirs2[] = {"/run/agentjail-attack-abc"};
	char *before = attack_mounts_within(table, dirs2, 1);
	char *after = attack_mounts_within("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
					   "90 22 0:50 / /run/agentjail-attack-abc/mnt rw - tmpfs none rw\n"
					   "93 22 0:53 / /run/agentjail-attack-abc rw - tmpfs none rw\n",
					   dirs2, 1);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(clean_run_is_held),
		cmocka_unit_test(egress_is_judged_from_the_origin),
		cmocka_unit_test(shown_token_is_escaped),
		cmocka_unit_test(written_marker_is_escaped),
		cmocka_unit_test(dead_sentinel_is_escaped),
		cmocka_unit_test(other_escapes),
		cmocka_unit_test(limit_that_did_not_stop_it),
		cmocka_unit_test(unfinished_is_not_held),
		cmocka_unit_test(unmade_checks_are_not_evidence),
		cmocka_unit_test(unavailable_and_failed),
		cmocka_unit_test(table_entries_declare_their_fixtures),
		cmocka_unit_test(fill_escapes_and_fills_every_placeholder),
		cmocka_unit_test(core_attacks_in_every_language),
		cmocka_unit_test(shell_fill_and_launcher_escape),
		cmocka_unit_test(missing_tool_is_na),
		cmocka_unit_test(memory_peak_decides_for_other_runtimes),
		cmocka_unit_test(uid_range_is_taken_per_invocation),
		cmocka_unit_test(only_its_own_mounts_are_compared),
	};
	return cmocka_run_group_tests_name("attack verdicts", tests, NULL, NULL);
}
