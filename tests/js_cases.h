/* JavaScript in a session and in a one-shot run (aj_session_run_lang,
 * aj_run_lang), the cases every tier with sessions runs (session_cases.h
 * puts JS_TABLE in SESSION_TABLE): state across calls, errors with their
 * stack, top-level await, output streamed as it comes, a one-shot run, and
 * the hostile basics in JavaScript: a CPU loop, a child_process fork loop,
 * a host secret, a disk fill, an output flood, a heap fill. Nothing here
 * names a tier. A sandbox whose image has no node is skipped, on the
 * session's own answer that it has none (`make test` builds the test image
 * with nodejs). */
#ifndef AJ_TEST_JS_CASES_H
#define AJ_TEST_JS_CASES_H

#include "hostile.h"

static int js_call(struct aj_session *s, const char *code, const struct aj_stream *stream,
		   struct aj_cancel *cancel, struct aj_result *r)
{
	return aj_session_run_lang(s, AJ_LANG_JAVASCRIPT, code, strlen(code), cancel, stream, r);
}

/* A JavaScript cell taken by the session (rc 0), with the status wanted. */
static void js_expect(struct aj_session *s, const char *code, enum aj_status want,
		      struct aj_result *r)
{
	int rc = js_call(s, code, NULL, NULL, r);
	if (rc)
		fail_msg("aj_session_run_lang(%s): %d: %s", code, rc, r->message ? r->message : "-");
	if (r->status != want)
		fail_msg("js %s: %s, want %s: %s / %s / %s", code, aj_status_name(r->status),
			 aj_status_name(want), r->message ? r->message : "-", r->stdout_buf,
			 r->stderr_buf);
}

/* A session whose sandbox runs node, or the case skipped: the session's
 * first JavaScript call says whether its image has node. */
static struct aj_session *js_session(const struct aj_config *cfg)
{
	struct aj_session *s = open_session(cfg);
	struct aj_result r;
	assert_int_equal(js_call(s, "'node here'", NULL, NULL, &r), 0);
	if (r.status == AJ_STATUS_SANDBOX_ERROR && contains(r.message, "node is not installed")) {
		print_message("skipped: %s (rebuild the test image: make test)\n", r.message);
		aj_result_free(&r);
		close_session(s);
		skip();
	}
	if (r.status != AJ_STATUS_OK || strcmp(r.stdout_buf, "'node here'\n"))
		fail_msg("js: %s: %s / %s / %s", aj_status_name(r.status),
			 r.message ? r.message : "-", r.stdout_buf, r.stderr_buf);
	aj_result_free(&r);
	return s;
}

/* let, const, functions and classes persist; the last value is shown as
 * Node shows it; an error comes back with its stack and exit 1, keeping
 * the state; Python's state is its own beside it. */
static void js_state_across_calls(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = js_session(&f->cfg);
	struct aj_result r;
	js_expect(s, "let x = 1\nconst greeting = 'hi'\nfunction twice(v) { return v * 2 }\n"
		     "class Box { constructor(v) { this.v = v } }",
		  AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, ""); /* undefined is not shown */
	aj_result_free(&r);
	js_expect(s, "x + 1", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "2\n");
	assert_null(r.message);
	aj_result_free(&r);
	js_expect(s, "console.log(greeting, twice(21)); new Box([1, 'a'])", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "hi 42\nBox { v: [ 1, 'a' ] }\n");
	aj_result_free(&r);
	js_expect(s, "function inner() { throw new TypeError('boom') }\ninner()", AJ_STATUS_ERROR,
		  &r);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 1);
	assert_true(contains(r.stderr_buf, "TypeError: boom"));
	assert_true(contains(r.stderr_buf, "at inner (<cell"));
	assert_false(contains(r.stderr_buf, "node:repl"));
	aj_result_free(&r);
	js_expect(s, "x = x + 10; x", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "11\n");
	aj_result_free(&r);
	cell_expect(s, "x = 'python'\nprint(x)", AJ_STATUS_OK, "python");
	js_expect(s, "x", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "11\n");
	aj_result_free(&r);
	close_session(s);
}

/* Top-level await, its declarations kept; a process.exit ends the cell
 * with its code, and the next call is told that the state is gone. */
static void js_await_and_exit(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = js_session(&f->cfg);
	struct aj_result r;
	js_expect(s, "await new Promise(r => setTimeout(r, 10)); console.log('done')\n"
		     "const later = await Promise.resolve(5)",
		  AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "done\n");
	aj_result_free(&r);
	js_expect(s, "later * 2", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "10\n");
	aj_result_free(&r);
	js_expect(s, "await Promise.reject(new RangeError('nope'))", AJ_STATUS_ERROR, &r);
	assert_true(contains(r.stderr_buf, "RangeError: nope"));
	aj_result_free(&r);
	js_expect(s, "console.log('bye'); process.exit(4)", AJ_STATUS_ERROR, &r);
	assert_int_equal(r.exit_code, 4);
	assert_string_equal(r.stdout_buf, "bye\n");
	aj_result_free(&r);
	js_expect(s, "typeof later", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "'undefined'\n");
	assert_true(contains(r.message, "JavaScript interpreter had ended"));
	aj_result_free(&r);
	close_session(s);
}

/* console.log reaches the caller's stream while the cell still runs: the
 * caller cancels it once it has seen the line (a cell that never streamed
 * would run into its wall clock: timeout, not killed). */
static void js_output_streams(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.wall_sec = 20;
	struct aj_session *s = js_session(&f->cfg);
	struct proc_seen seen = {.m = PTHREAD_MUTEX_INITIALIZER};
	const struct aj_stream st = {proc_seen_fn, &seen, 0};
	struct aj_cancel *c = NULL;
	assert_int_equal(aj_cancel_new(&c), 0);
	pthread_t t;
	struct proc_cancel_when wc = {c, &seen, "streamed-js"};
	assert_int_equal(pthread_create(&t, NULL, proc_cancel_when_seen, &wc), 0);
	struct aj_result r;
	assert_int_equal(js_call(s, "console.log('streamed-js'); "
				    "await new Promise(r => setTimeout(r, 60000))",
				 &st, c, &r),
			 0);
	pthread_join(t, NULL);
	aj_cancel_free(c);
	assert_status(&r, AJ_STATUS_KILLED);
	assert_true(contains(r.message, "cancelled"));
	assert_true(contains(r.stdout_buf, "streamed-js\n"));
	aj_result_free(&r);
	close_session(s);
}

/* A sandbox for one-shot runs, closed by the harness after the case. */
static struct aj_sandbox *open_one_shot(const struct aj_config *cfg)
{
	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	if (aj_open(cfg, &sb, &err))
		fail_msg("aj_open: %s", err.message);
	harness_track(sb);
	return sb;
}

/* A one-shot run: node's exit code and output, in a fresh sandbox. */
static void js_one_shot_run(void **state)
{
	struct fixture *f = *state;
	struct aj_session *probe = js_session(&f->cfg);
	close_session(probe);
	struct aj_sandbox *sb = open_one_shot(&f->cfg);
	static const char code[] = "const os = require('os');\n"
				   "console.log([1, 2].map(v => v * 2).join(','), process.cwd());\n"
				   "console.error('to stderr');\n"
				   "process.exitCode = 3;\n";
	struct aj_result r;
	assert_int_equal(aj_run_lang(sb, AJ_LANG_JAVASCRIPT, code, strlen(code), NULL, NULL, &r), 0);
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.stdout_buf, "2,4 " AJ_SESSION_WORKSPACE "\n");
	assert_string_equal(r.stderr_buf, "to stderr\n");
	aj_result_free(&r);
	assert_int_equal(aj_run_lang(sb, (enum aj_language)7, "1", 1, NULL, NULL, &r), -EINVAL);
	assert_status(&r, AJ_STATUS_SANDBOX_ERROR);
	assert_true(contains(r.message, AJ_LANGUAGE_NAMES));
	aj_result_free(&r);
}

/* A CPU loop meets the call's CPU limit (timeout), and the session goes
 * on: Python's state kept, JavaScript's told gone. */
static void js_hostile_cpu_loop(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.cpu_sec = 1;
	f->cfg.limits.wall_sec = 30;
	struct aj_session *s = js_session(&f->cfg);
	struct aj_result r;
	cell_expect(s, "kept = 'py'", AJ_STATUS_OK, NULL);
	js_expect(s, "let n = 0; while (true) { n++ }", AJ_STATUS_TIMEOUT, &r);
	assert_true(contains(r.message, "CPU"));
	aj_result_free(&r);
	cell_expect(s, "print(kept)", AJ_STATUS_OK, "py");
	js_expect(s, "typeof n", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "'undefined'\n");
	aj_result_free(&r);
	close_session(s);
}

/* child_process in a loop: what starts stays under the pids limit. The
 * pids limit is the judge here, not the clock: 300 spawns under gVisor's
 * ptrace platform on a loaded machine passed the fixture's 5 s of CPU
 * (its sentry's own counted), so the case has room enough that only a
 * hang meets its limits. */
static void js_hostile_fork_loop(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.cpu_sec = 60;
	f->cfg.limits.wall_sec = 120;
	struct aj_session *s = js_session(&f->cfg);
	struct aj_result r;
	js_expect(s,
		  "const cp = require('child_process'); const kids = [];\n"
		  "for (let i = 0; i < 300; i++) {\n"
		  "  const c = cp.spawn('/bin/sh', ['-c', 'read x'], {stdio: ['pipe', 'ignore', 'ignore']});\n"
		  "  c.on('error', () => {});\n"
		  "  if (c.pid) kids.push(c);\n"
		  "}\n"
		  "console.log('made', kids.length);\n"
		  "for (const c of kids) c.kill('SIGKILL');",
		  AJ_STATUS_OK, &r);
	assert_made_under_pids(f, &r);
	aj_result_free(&r);
	close_session(s);
}

/* The caller's secret file is not there to read, nor its environment. */
static void js_hostile_read_secret(void **state)
{
	struct fixture *f = *state;
	make_secret(f);
	setenv("AJ_TEST_API_KEY", f->token, 1);
	struct aj_session *s = js_session(&f->cfg);
	char code[800];
	snprintf(code, sizeof code,
		 "const fs = require('fs');\n"
		 "try { console.log(fs.readFileSync('%s', 'utf8')) }\n"
		 "catch (e) { console.log('denied %s', e.code) }\n"
		 "console.log(Object.keys(process.env).join(' '))",
		 f->secret_file, f->secret_file);
	struct aj_result r;
	js_expect(s, code, AJ_STATUS_OK, &r);
	unsetenv("AJ_TEST_API_KEY");
	drop_secret(f);
	assert_true(contains(r.stdout_buf, "denied "));
	assert_false(contains(r.stdout_buf, f->token));
	assert_false(contains(r.stderr_buf, f->token));
	assert_false(contains(r.stdout_buf, "AJ_TEST_API_KEY"));
	aj_result_free(&r);
	close_session(s);
}

/* Filling the disk stops at the writable space's size, with ENOSPC. */
static void js_hostile_disk_fill(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.file_size_mb = 4096; /* the disk limit, not the file limit, stops it */
	struct aj_session *s = js_session(&f->cfg);
	struct aj_result r;
	js_expect(s,
		  "const fs = require('fs'); const fd = fs.openSync('fill', 'w');\n"
		  "const mb = Buffer.alloc(1 << 20, 120); let n = 0;\n"
		  "try { for (let i = 0; i < 100000; i++) { fs.writeSync(fd, mb); n++ } }\n"
		  "catch (e) { console.log('stopped', n, e.code) }",
		  AJ_STATUS_OK, &r);
	unsigned mb = 0;
	char code[32] = "";
	if (sscanf(r.stdout_buf, "stopped %u %31s", &mb, code) != 2)
		fail_msg("%s / %s", r.stdout_buf, r.stderr_buf);
	assert_string_equal(code, "ENOSPC");
	assert_true(mb <= f->cfg.limits.disk_mb);
	aj_result_free(&r);
	close_session(s);
}

/* An output flood meets the output cap (1 GB if nothing stopped it). */
static void js_hostile_output_flood(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.output_kb = 256;
	struct aj_session *s = js_session(&f->cfg);
	struct aj_result r;
	js_expect(s,
		  "const s = 'x'.repeat(65536);\n"
		  "for (let i = 0; i < 16384; i++) process.stdout.write(s)",
		  AJ_STATUS_OUTPUT_LIMIT, &r);
	assert_true(r.stdout_truncated);
	assert_int_equal(r.stdout_len, (size_t)f->cfg.limits.output_kb * 1024);
	aj_result_free(&r);
	close_session(s);
}

/* A heap fill ends node, within the memory limit, and the session goes
 * on (a fresh node the next call). */
static void js_hostile_heap_fill(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = js_session(&f->cfg);
	struct aj_result r;
	assert_int_equal(js_call(s,
				 "const keep = [];\n"
				 "for (let i = 0; i < 100000; i++) keep.push(new Array(1 << 20).fill(i))",
				 NULL, NULL, &r),
			 0);
	if (r.status == AJ_STATUS_OK || r.status == AJ_STATUS_SANDBOX_ERROR)
		fail_msg("heap fill: %s: %s / %s", aj_status_name(r.status),
			 r.message ? r.message : "-", r.stderr_buf);
	aj_result_free(&r);
	js_expect(s, "1 + 1", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "2\n");
	aj_result_free(&r);
	cell_expect(s, "print('python still here')", AJ_STATUS_OK, "python still here");
	close_session(s);
}

/* The words for an image without a TypeScript compiler (ts_strip.js). */
#define TS_MISSING                                                                          \
	"typescript: this sandbox's image has no TypeScript compiler (Debian package "      \
	"node-typescript)"

/* A session whose node strips TypeScript, or NULL when its image has no
 * compiler: then the session's answer must be the refusal that says so
 * (a sandbox_error), and the session goes on. */
static struct aj_session *ts_session(const struct aj_config *cfg)
{
	struct aj_session *s = js_session(cfg);
	struct aj_result r;
	assert_int_equal(aj_session_run_lang(s, AJ_LANG_TYPESCRIPT, "1 as number", 11, NULL, NULL,
					     &r),
			 0);
	if (r.status == AJ_STATUS_SANDBOX_ERROR && contains(r.message, "no TypeScript")) {
		assert_string_equal(r.message, TS_MISSING);
		print_message("no TypeScript compiler in the image: its refusal checked\n");
		aj_result_free(&r);
		js_expect(s, "'still here'", AJ_STATUS_OK, &r); /* the session goes on */
		aj_result_free(&r);
		close_session(s);
		return NULL;
	}
	if (r.status != AJ_STATUS_OK || strcmp(r.stdout_buf, "1\n"))
		fail_msg("ts: %s: %s / %s / %s", aj_status_name(r.status),
			 r.message ? r.message : "-", r.stdout_buf, r.stderr_buf);
	aj_result_free(&r);
	return s;
}

/* Time for the compiler: loading it takes node seconds of CPU where the
 * microVM runs without KVM (9 s for a one-shot run here, under TCG), past
 * the default 10 s; a deadline that only catches a hang. */
static void ts_generous(struct fixture *f)
{
	f->cfg.limits.wall_sec = 120;
	f->cfg.limits.cpu_sec = 120;
}

/* A TypeScript cell with the status wanted. */
static void ts_expect(struct aj_session *s, const char *code, enum aj_status want,
		      struct aj_result *r)
{
	assert_int_equal(aj_session_run_lang(s, AJ_LANG_TYPESCRIPT, code, strlen(code), NULL,
					     NULL, r),
			 0);
	if (r->status != want)
		fail_msg("ts %s: %s, want %s: %s / %s / %s", code, aj_status_name(r->status),
			 aj_status_name(want), r->message ? r->message : "-", r->stdout_buf,
			 r->stderr_buf);
}

/* TypeScript cells: types stripped (an interface, a typed function, a
 * generic, an enum), their declarations kept for later TypeScript and
 * JavaScript cells alike, top-level await; a syntax error names its
 * place (FILE:LINE:COL) and exits 1; a type error is not checked. */
static void ts_session_cells(void **state)
{
	struct fixture *f = *state;
	ts_generous(f);
	struct aj_session *s = ts_session(&f->cfg);
	if (!s)
		return;
	struct aj_result r;
	ts_expect(s, "interface Point { x: number; y: number }\n"
		     "function norm1(p: Point): number { return Math.abs(p.x) + Math.abs(p.y) }\n"
		     "function first<T>(items: T[]): T { return items[0] }\n"
		     "enum Color { Red, Green, Blue }\n"
		     "let x: number = 1\n"
		     "console.log(norm1({ x: -2, y: 3 }), first<string>(['a', 'b']), Color.Blue)",
		  AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "5 a 2\n");
	aj_result_free(&r);
	ts_expect(s, "const y: number = await Promise.resolve(x + 1)\nx + y + Color.Green", AJ_STATUS_OK,
		  &r);
	assert_string_equal(r.stdout_buf, "4\n");
	aj_result_free(&r);
	js_expect(s, "x = x * 10; [x, y, Color[0]]", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "[ 10, 2, 'Red' ]\n");
	aj_result_free(&r);
	ts_expect(s, "const ok: number = 1\nlet bad: = 3", AJ_STATUS_ERROR, &r);
	assert_int_equal(r.exit_code, 1);
	assert_true(contains(r.stderr_buf, ".ts:2:10 - error TS1110: Type expected."));
	aj_result_free(&r);
	ts_expect(s, "const s: string = 5 as any as number; typeof s", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "'number'\n"); /* types are not checked */
	aj_result_free(&r);
	close_session(s);
}

/* A one-shot TypeScript run: node's exit code and output once the types
 * are stripped; a syntax error ends it before it runs, naming the place;
 * an error's stack names the TypeScript's own lines. */
static void ts_one_shot_run(void **state)
{
	struct fixture *f = *state;
	ts_generous(f);
	struct aj_session *probe = ts_session(&f->cfg);
	bool has_ts = probe != NULL;
	if (probe)
		close_session(probe);
	struct aj_sandbox *sb = open_one_shot(&f->cfg);
	static const char code[] = "type Pair<T> = [T, T];\n"
				   "const p: Pair<number> = [3, 4];\n"
				   "console.log(p.map((v: number): number => v * 2).join(','));\n"
				   "process.exitCode = 3 as number;\n";
	struct aj_result r;
	assert_int_equal(aj_run_lang(sb, AJ_LANG_TYPESCRIPT, code, strlen(code), NULL, NULL, &r), 0);
	if (!has_ts) {
		assert_int_equal(r.exit_code, 127);
		assert_string_equal(r.stderr_buf, TS_MISSING "\n");
		aj_result_free(&r);
		return;
	}
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.stdout_buf, "6,8\n");
	aj_result_free(&r);
	static const char bad[] = "console.log('never')\nlet n: = 1\n";
	assert_int_equal(aj_run_lang(sb, AJ_LANG_TYPESCRIPT, bad, strlen(bad), NULL, NULL, &r), 0);
	assert_int_equal(r.exit_code, 1);
	assert_string_equal(r.stdout_buf, "");
	assert_true(contains(r.stderr_buf, ".ts:2:8 - error TS1110: Type expected."));
	aj_result_free(&r);
	static const char thrower[] = "interface A { n: number }\n\n"
				      "function boom(a: A): never { throw new Error('at ' + a.n) }\n"
				      "boom({ n: 1 })\n";
	assert_int_equal(aj_run_lang(sb, AJ_LANG_TYPESCRIPT, thrower, strlen(thrower), NULL, NULL,
				     &r),
			 0);
	assert_int_equal(r.exit_code, 1);
	assert_true(contains(r.stderr_buf, "Error: at 1"));
	assert_true(contains(r.stderr_buf, ".ts:3:")); /* boom's line in the TypeScript */
	aj_result_free(&r);
}

#define JS_TABLE                                                                            \
	SESSION_TEST(js_state_across_calls), SESSION_TEST(js_await_and_exit),                \
	SESSION_TEST(js_output_streams), SESSION_TEST(js_one_shot_run),                      \
	SESSION_TEST(js_hostile_cpu_loop), SESSION_TEST(js_hostile_fork_loop),               \
	SESSION_TEST(js_hostile_read_secret), SESSION_TEST(js_hostile_disk_fill),            \
	SESSION_TEST(js_hostile_output_flood), SESSION_TEST(js_hostile_heap_fill),           \
	SESSION_TEST(ts_session_cells), SESSION_TEST(ts_one_shot_run)

#endif
