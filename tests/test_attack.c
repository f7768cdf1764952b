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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(clean_run_is_held),
		cmocka_unit_test(shown_token_is_escaped),
		cmocka_unit_test(written_marker_is_escaped),
		cmocka_unit_test(dead_sentinel_is_escaped),
		cmocka_unit_test(other_escapes),
		cmocka_unit_test(limit_that_did_not_stop_it),
		cmocka_unit_test(unfinished_is_not_held),
		cmocka_unit_test(unmade_checks_are_not_evidence),
		cmocka_unit_test(unavailable_and_failed),
	};
	return cmocka_run_group_tests_name("attack verdicts", tests, NULL, NULL);
}
