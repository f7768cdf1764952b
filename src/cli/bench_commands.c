/* agentjail bench --commands: what a command and a JavaScript call cost in
 * a session, beside the bare programs from this host, in one run:
 *
 *   exec       /bin/true spawned from the host, and aj_session_exec of
 *              argv ["true"] in a session of each tier chosen (none
 *              chosen: process and container): medians and each tier's
 *              median minus bare's (issue 36's goal: at most 2 ms over).
 *   javascript console.log(1): bare `node -e` from the host, a one-shot
 *              run (aj_run_lang) and a session's call (aj_session_run_lang)
 *              on the first tier chosen: medians and the ratio to bare
 *              node (goal: a session call at most 0.3 x).
 *   first byte a background command that prints at crow_once (`echo x; exec
 *              sleep 30`): from aj_session_spawn's call to the first byte
 *              a read (aj_session_proc_read) hands over, per tier: median
 *              (goal: 5 ms); the command is then killed and waited for.
 *
 * Every row once per round, rounds interleaved after warm-up rounds, so
 * drift lands on each alike. Figures only, never a verdict. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_commands.h"
#include "measure.h"

#define MAX_CROWS 16
#define JS_CODE "console.log(1)"

enum crow_kind { BARE_TRUE, EXEC_TRUE, BARE_NODE, JS_ONE_SHOT, JS_SESSION, FIRST_BYTE };

struct crow {
	char name[64];
	enum crow_kind kind;
	enum aj_tier tier;
	struct aj_session *s;   /* EXEC_TRUE, JS_SESSION, FIRST_BYTE */
	struct aj_sandbox *sb;  /* JS_ONE_SHOT */
	char **argv;            /* BARE_* */
	double *v;
	int n, failed;
};

struct cbench {
	struct crow rows[MAX_CROWS];
	int nr;
	char unavailable[AJ_TIER_COUNT][AJ_ERROR_MAX];
	char *node;             /* bare node, if this host has one */
};

static double exec_true_ms(struct aj_session *s)
{
	static const char *const argv[] = {"true", NULL};
	const struct aj_exec x = {.argv = argv};
	struct aj_result r;
	double t0 = measure_now_ms();
	int rc = aj_session_exec(s, &x, NULL, NULL, &r);
	double t = measure_now_ms() - t0;
	bool ok = !rc && r.status == AJ_STATUS_OK;
	aj_result_free(&r);
	return ok ? t : -1;
}

static double js_ms(struct crow *c)
{
	struct aj_result r;
	double t0 = measure_now_ms();
	int rc = c->s ? aj_session_run_lang(c->s, AJ_LANG_JAVASCRIPT, JS_CODE, strlen(JS_CODE),
					    NULL, NULL, &r)
		      : aj_run_lang(c->sb, AJ_LANG_JAVASCRIPT, JS_CODE, strlen(JS_CODE), NULL,
				    NULL, &r);
	double t = measure_now_ms() - t0;
	bool ok = !rc && r.status == AJ_STATUS_OK && r.stdout_buf && !strcmp(r.stdout_buf, "1\n");
	aj_result_free(&r);
	return ok ? t : -1;
}

/* From spawn's call to the first byte a read hands over; then the command
 * is killed and waited for (outside the figure). */
static double first_byte_ms(struct aj_session *s)
{
	const struct aj_exec x = {.command = "echo x; exec sleep 30"};
	struct aj_error err = {0};
	uint32_t pid = 0;
	double t0 = measure_now_ms(), t = -1;
	if (aj_session_spawn(s, &x, false, &pid, &err))
		return -1;
	for (int i = 0; i < 100 && t < 0; i++) {
		struct aj_proc_output o;
		if (aj_session_proc_read(s, pid, 0, 0, 200, &o, &err))
			break;
		if (o.out_len)
			t = measure_now_ms() - t0;
		bool ended = o.ended;
		aj_proc_output_free(&o);
		if (ended)
			break;
	}
	struct aj_result r;
	aj_session_proc_signal(s, pid, SIGKILL, &err);
	aj_session_proc_wait(s, pid, NULL, NULL, &r);
	aj_result_free(&r);
	return t;
}

static double crow_once(struct crow *c)
{
	switch (c->kind) {
	case BARE_TRUE:
	case BARE_NODE:
		return measure_spawn_ok_ms(c->argv);
	case EXEC_TRUE:
		return exec_true_ms(c->s);
	case JS_ONE_SHOT:
	case JS_SESSION:
		return js_ms(c);
	case FIRST_BYTE:
		return first_byte_ms(c->s);
	}
	return -1;
}

static struct crow *add_crow(struct cbench *b, enum crow_kind kind, enum aj_tier t, const char *name)
{
	if (b->nr >= MAX_CROWS)
		return NULL;
	struct crow *c = &b->rows[b->nr++];
	memset(c, 0, sizeof *c);
	c->kind = kind;
	c->tier = t;
	snprintf(c->name, sizeof c->name, "%s", name);
	return c;
}

static char **argv2(const char *a, const char *b, const char *c)
{
	char **v = calloc(4, sizeof *v);
	if (v) {
		v[0] = strdup(a);
		v[1] = b ? strdup(b) : NULL;
		v[2] = c ? strdup(c) : NULL;
	}
	return v;
}

/* The rows: bare first, then each tier's; JavaScript on the first tier
 * that opens, where this host has node to compare with. */
static void make_rows(struct cbench *b, const struct aj_config *base,
		      const struct tier_choice *choice)
{
	add_crow(b, BARE_TRUE, AJ_TIER_PROCESS, "bare /bin/true")->argv = argv2("/bin/true", NULL, NULL);
	b->node = measure_find_in_path("node");
	if (!b->node)
		b->node = measure_find_in_path("nodejs");
	bool js_done = false;
	for (int t = 0; t < AJ_TIER_COUNT; t++) {
		bool want = choice->any ? choice->chosen[t]
					: t == AJ_TIER_PROCESS || t == AJ_TIER_CONTAINER;
		if (!want)
			continue;
		struct aj_config cfg = *base;
		cfg.tier = (enum aj_tier)t;
		struct aj_session *s = NULL, *fs = NULL;
		struct aj_error err = {0};
		if (aj_session_open(&cfg, &s, &err) || aj_session_open(&cfg, &fs, &err)) {
			snprintf(b->unavailable[t], sizeof b->unavailable[t], "%s", err.message);
			aj_session_close(s);
			continue;
		}
		char name[64];
		snprintf(name, sizeof name, "exec true: %s", aj_tier_name((enum aj_tier)t));
		add_crow(b, EXEC_TRUE, (enum aj_tier)t, name)->s = s;
		snprintf(name, sizeof name, "first byte: %s", aj_tier_name((enum aj_tier)t));
		add_crow(b, FIRST_BYTE, (enum aj_tier)t, name)->s = fs;
		if (js_done || !b->node)
			continue;
		struct aj_sandbox *sb = NULL;
		if (aj_open(&cfg, &sb, &err)) {
			fprintf(stderr, "bench: %s: no one-shot JavaScript: %s\n",
				aj_tier_name((enum aj_tier)t), err.message);
			continue;
		}
		js_done = true;
		add_crow(b, BARE_NODE, (enum aj_tier)t, "bare node -e")->argv =
			argv2(b->node, "-e", JS_CODE);
		snprintf(name, sizeof name, "js one-shot: %s", aj_tier_name((enum aj_tier)t));
		add_crow(b, JS_ONE_SHOT, (enum aj_tier)t, name)->sb = sb;
		snprintf(name, sizeof name, "js session: %s", aj_tier_name((enum aj_tier)t));
		add_crow(b, JS_SESSION, (enum aj_tier)t, name)->s = s;
	}
}

static double median_of(struct crow *c)
{
	measure_sort(c->v, (size_t)c->n);
	return c->n ? measure_percentile(c->v, (size_t)c->n, 50) : -1;
}

static double median_kind(struct cbench *b, enum crow_kind k)
{
	for (int i = 0; i < b->nr; i++)
		if (b->rows[i].kind == k)
			return median_of(&b->rows[i]);
	return -1;
}

static json_t *result_json(struct cbench *b, long rounds)
{
	double bare_true = median_kind(b, BARE_TRUE), bare_node = median_kind(b, BARE_NODE);
	json_t *rows = json_array();
	for (int i = 0; i < b->nr; i++) {
		struct crow *c = &b->rows[i];
		double m = median_of(c);
		json_t *o = json_pack("{s:s, s:i, s:i}", "row", c->name, "samples", c->n, "failed",
				      c->failed);
		if (c->n) {
			json_object_set_new(o, "median_ms", json_real(m));
			json_object_set_new(o, "p95_ms", json_real(measure_percentile(
								c->v, (size_t)c->n, 95)));
		}
		if (c->n && c->kind == EXEC_TRUE && bare_true > 0)
			json_object_set_new(o, "over_bare_ms", json_real(m - bare_true));
		if (c->n && (c->kind == JS_ONE_SHOT || c->kind == JS_SESSION) && bare_node > 0)
			json_object_set_new(o, "ratio_to_bare_node", json_real(m / bare_node));
		json_array_append_new(rows, o);
	}
	json_t *un = json_object();
	for (int t = 0; t < AJ_TIER_COUNT; t++)
		if (b->unavailable[t][0])
			json_object_set_new(un, aj_tier_name((enum aj_tier)t),
					    json_string(b->unavailable[t]));
	return json_pack("{s:{s:I, s:o, s:o}}", "commands", "rounds", (json_int_t)rounds, "rows",
			 rows, "unavailable", un);
}

static void print_crows(json_t *root)
{
	json_t *c = json_object_get(root, "commands");
	printf("commands and JavaScript in a session, %lld interleaved rounds (medians)\n",
	       (long long)json_integer_value(json_object_get(c, "rounds")));
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(c, "rows"), i, r) {
		const char *name = json_string_value(json_object_get(r, "row"));
		json_t *m = json_object_get(r, "median_ms");
		if (!m) {
			printf("  %-26s failed every round\n", name);
			continue;
		}
		printf("  %-26s %8.2f ms  p95 %8.2f ms", name, json_real_value(m),
		       json_real_value(json_object_get(r, "p95_ms")));
		json_t *over = json_object_get(r, "over_bare_ms"),
		       *ratio = json_object_get(r, "ratio_to_bare_node");
		if (over)
			printf("  %+.2f ms over bare", json_real_value(over));
		if (ratio)
			printf("  x%.3f bare node", json_real_value(ratio));
		json_int_t failed = json_integer_value(json_object_get(r, "failed"));
		if (failed)
			printf("  (%lld failed)", (long long)failed);
		printf("\n");
	}
	const char *tier;
	json_t *why;
	json_object_foreach(json_object_get(c, "unavailable"), tier, why)
		printf("  %s: not measured: %s\n", tier, json_string_value(why));
}

int bench_commands(const struct aj_config *cfg, const struct tier_choice *choice, long rounds,
		   bool quick, bool as_json)
{
	struct cbench *b = calloc(1, sizeof *b);
	if (!b) {
		fprintf(stderr, "agentjail: bench: out of memory\n");
		return 1;
	}
	long n = quick && rounds > 5 ? 5 : rounds;
	int warm = quick ? 1 : 3;
	make_rows(b, cfg, choice);
	for (int i = 0; i < b->nr; i++)
		b->rows[i].v = calloc((size_t)n, sizeof(double));
	if (!as_json)
		fprintf(stderr, "bench: %ld rounds of %d rows after %d warm-up...\n", n, b->nr,
			warm);
	for (long round = -warm; round < n; round++)
		for (int i = 0; i < b->nr; i++) {
			struct crow *c = &b->rows[i];
			double t = crow_once(c);
			if (round < 0 || !c->v)
				continue;
			if (t < 0)
				c->failed++;
			else
				c->v[c->n++] = t;
		}
	json_t *root = result_json(b, n);
	if (as_json) {
		char *s = json_dumps(root, JSON_COMPACT);
		puts(s ? s : "{}");
		free(s);
	} else {
		print_crows(root);
	}
	bool failed = b->nr <= 1;
	for (int i = 0; i < b->nr; i++) {
		struct crow *c = &b->rows[i];
		failed |= !c->n;
		free(c->v);
		if (c->argv)
			for (char **a = c->argv; *a; a++)
				free(*a);
		free(c->argv);
		if (c->kind == EXEC_TRUE || c->kind == FIRST_BYTE)
			aj_session_close(c->s);
		aj_close(c->sb);
	}
	free(b->node);
	json_decref(root);
	free(b);
	return failed ? 1 : 0;
}
