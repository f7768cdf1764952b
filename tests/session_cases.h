/* The session cases every tier runs (include after hostile.h, then put
 * SESSION_TABLE and HOSTILE_SESSION_TABLE in the tier's test list):
 * state across calls, files in and out, charts, what ends a call or a
 * session, and isolation between sessions. Nothing here names a tier; a
 * tier sets fixture.session_cycles to how many open/run/close cycles its
 * leak check may take. */
#ifndef AJ_TEST_SESSION_CASES_H
#define AJ_TEST_SESSION_CASES_H

#include "hostile.h"

/* Sessions a case opened and has not closed: a failed case's are closed by
 * its teardown, so one failure does not fail the cases after it. */
static struct aj_session *open_sessions[8];

static struct aj_session *open_session(const struct aj_config *cfg)
{
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	if (aj_session_open(cfg, &s, &err))
		fail_msg("aj_session_open: %s", err.message);
	for (size_t i = 0; i < sizeof open_sessions / sizeof open_sessions[0]; i++)
		if (!open_sessions[i]) {
			open_sessions[i] = s;
			break;
		}
	return s;
}

static void close_session(struct aj_session *s)
{
	for (size_t i = 0; i < sizeof open_sessions / sizeof open_sessions[0]; i++)
		if (open_sessions[i] == s)
			open_sessions[i] = NULL;
	aj_session_close(s);
}

static int session_case_teardown(void **state)
{
	for (size_t i = 0; i < sizeof open_sessions / sizeof open_sessions[0]; i++)
		if (open_sessions[i]) {
			aj_session_close(open_sessions[i]);
			open_sessions[i] = NULL;
		}
	return case_teardown(state);
}

/* A notebook cell (aj_session_run_cell) in Python; asserts rc 0. */
static void notebook_cell(struct aj_session *s, struct aj_result *r, const char *code,
			  bool value, const char *context, bool fresh)
{
	const struct aj_cell c = {.lang = AJ_LANG_PYTHON, .code = code, .len = strlen(code),
				  .value = value, .context = context, .fresh = fresh};
	int rc = aj_session_run_cell(s, &c, NULL, NULL, r);
	if (rc)
		fail_msg("aj_session_run_cell: %d: %s", rc, r->message ? r->message : "-");
}

/* One cell; asserts the session itself took it (rc 0). */
static void cell(struct aj_session *s, struct aj_result *r, const char *code)
{
	int rc = aj_session_run(s, code, strlen(code), r);
	if (rc)
		fail_msg("aj_session_run: %d: %s", rc, r->message ? r->message : "-");
}

static void cell_expect(struct aj_session *s, const char *code, enum aj_status want,
			const char *out_has)
{
	struct aj_result r;
	cell(s, &r, code);
	assert_status(&r, want);
	if (out_has && !contains(r.stdout_buf, out_has))
		fail_msg("stdout lacks %s: %s / %s", out_has, r.stdout_buf, r.stderr_buf);
	aj_result_free(&r);
}


static void session_state_persists(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	cell_expect(s, "x = 41\nimport json\nopen('kept.txt', 'w').write('file-kept')\n",
		    AJ_STATUS_OK, NULL);
	/* A last bare expression is shown, as at any Python prompt. */
	cell(s, &r, "x + 1");
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "42\n");
	assert_null(r.message);
	assert_null(r.value_text);
	aj_result_free(&r);
	/* As a notebook cell the value comes apart, not printed: its repr,
	 * and its HTML where the object has one. */
	notebook_cell(s, &r, "x + 1", true, NULL, false);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "");
	assert_string_equal(r.value_text, "42");
	assert_null(r.value_html);
	aj_result_free(&r);
	static const char html_cell[] = "class H:\n"
					"    def __repr__(self): return 'H()'\n"
					"    def _repr_html_(self): return '<b>h</b>'\n"
					"print('shown')\n"
					"H()";
	notebook_cell(s, &r, html_cell, true, NULL, false);
	assert_string_equal(r.stdout_buf, "shown\n");
	assert_string_equal(r.value_text, "H()");
	assert_string_equal(r.value_html, "<b>h</b>");
	aj_result_free(&r);
	/* No value: None last, or a statement last. */
	notebook_cell(s, &r, "None", true, NULL, false);
	assert_null(r.value_text);
	aj_result_free(&r);
	/* A context is a namespace of its own: x is not there, and what it
	 * sets stays its own; fresh forgets it. */
	notebook_cell(s, &r, "x = 'c'\nx", true, "ctx-1", false);
	assert_string_equal(r.value_text, "'c'");
	aj_result_free(&r);
	notebook_cell(s, &r, "x", true, NULL, false);
	assert_string_equal(r.value_text, "41");
	aj_result_free(&r);
	notebook_cell(s, &r, "x", true, "ctx-1", true);
	assert_status(&r, AJ_STATUS_ERROR);
	assert_true(contains(r.stderr_buf, "NameError"));
	aj_result_free(&r);
	const struct aj_cell bad = {.lang = AJ_LANG_PYTHON, .code = "1", .len = 1,
				    .context = "no/slash"};
	assert_int_equal(aj_session_run_cell(s, &bad, NULL, NULL, &r), -EINVAL);
	assert_true(contains(r.message, "context"));
	aj_result_free(&r);
	cell_expect(s, "print(json.dumps([x]), open('kept.txt').read())", AJ_STATUS_OK,
		    "[41] file-kept");
	/* An exception ends the cell as a program's would, and keeps state. */
	cell(s, &r, "y = 1\n1 / 0\n");
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 1);
	assert_true(contains(r.stderr_buf, "ZeroDivisionError"));
	assert_true(contains(r.stderr_buf, "<cell 10>"));
	assert_false(contains(r.stderr_buf, "repl"));
	aj_result_free(&r);
	cell(s, &r, "import sys\nprint(y)\nsys.exit(7)\n");
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 7);
	assert_string_equal(r.stdout_buf, "1\n");
	aj_result_free(&r);
	cell_expect(s, "print('y is', y)", AJ_STATUS_OK, "y is 1");
	close_session(s);
}

/* Filling memory in a call is a MemoryError in the cell, on every tier
 * (issue 34): the interpreter meets its own limit (RLIMIT_AS, or repl.py's
 * RLIMIT_DATA under the memory cgroup) before the cgroup's OOM killer
 * would end it, so the next call still has what an earlier one set. */
static void session_memory_keeps_state(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	cell_expect(s, "kept = 'before'\n", AJ_STATUS_OK, NULL);
	cell(s, &r,
	     "def fill():\n"
	     "    chunks = []\n"
	     "    while True:\n"
	     "        chunks.append(bytearray(8 << 20))\n"
	     "fill()\n");
	assert_status(&r, AJ_STATUS_MEMORY);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 1);
	assert_true(contains(r.stderr_buf, "MemoryError"));
	aj_result_free(&r);
	cell(s, &r, "print(kept)");
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "before\n");
	assert_null(r.message); /* no "restarted": the same interpreter */
	aj_result_free(&r);
	close_session(s);
}

static void session_crash_restarts_interpreter(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	cell_expect(s, "x = 1\nopen('survives', 'w').write('yes')\n", AJ_STATUS_OK, NULL);
	cell(s, &r, "import os\nprint('bye', flush=True)\nos._exit(3)\n");
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 3);
	assert_true(contains(r.stdout_buf, "bye"));
	assert_true(contains(r.message, "interpreter ended"));
	aj_result_free(&r);
	/* A fresh interpreter, the same workspace, and the agent is told. */
	cell(s, &r, "print('x' in globals(), open('survives').read())");
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "False yes\n");
	assert_true(contains(r.message, "restarted"));
	aj_result_free(&r);
	cell(s, &r, "print('calm')");
	assert_null(r.message);
	aj_result_free(&r);
	close_session(s);
}

/* An interpreter that ends between calls (a thread a cell left ended it)
 * is found out by the next call, which a fresh interpreter then runs: once,
 * for agent code is not idempotent. (The jail tiers once gave that call to
 * the fresh interpreter twice: the request written to the dead one was
 * still in the pipe when it was sent again.) */
static void session_call_runs_once(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	cell_expect(s,
		    "import os, threading, time\n"
		    "def later():\n"
		    "    time.sleep(0.2)\n"
		    "    os._exit(0)\n"
		    "threading.Thread(target=later).start()\n",
		    AJ_STATUS_OK, NULL);
	/* Well after its end, so that the sandbox has reported it before the
	 * next call writes its request. */
	sleep_ms(1000);
	cell(s, &r, "open('runs', 'a').write('x')\nprint('once')\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "once\n");
	assert_true(contains(r.message, "restarted"));
	aj_result_free(&r);
	/* A second run would have come before this call, in the same
	 * interpreter: its output in neither. */
	cell(s, &r, "print(len(open('runs').read()))\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "1\n");
	aj_result_free(&r);
	close_session(s);
}

static void session_call_limits(void **state)
{
	struct fixture *f = *state;
	/* The wall clock must pass while the cell sleeps, not before it has
	 * printed: 8 s is that print's hang-catcher (2 s was passed by
	 * gvisor's session on a busy machine). */
	f->cfg.limits.wall_sec = 8;
	f->cfg.limits.output_kb = 64;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	cell_expect(s, "keep = 5", AJ_STATUS_OK, NULL);
	cell(s, &r, "import time\nprint('started', flush=True)\ntime.sleep(3600)\n");
	assert_status(&r, AJ_STATUS_TIMEOUT);
	assert_true(contains(r.stdout_buf, "started"));
	assert_true(contains(r.message, "wall-clock limit of 8 s"));
	aj_result_free(&r);
	cell(s, &r, "import sys\nfor i in range(100000):\n    sys.stdout.write('z' * 1024)\n");
	assert_status(&r, AJ_STATUS_OUTPUT_LIMIT);
	assert_int_equal(r.stdout_len, 64 * 1024);
	assert_true(contains(r.message, "restarted"));
	aj_result_free(&r);
	/* Per call, not per session: each call has its own CPU budget. The
	 * wall clock is widened so that only the CPU limit can end a call.
	 * Each call below uses a quarter of the budget inside, and they go
	 * on until the CPU the host counted for them together is past the
	 * budget: a count, so a tier whose count takes its own overhead too
	 * (gvisor's sentry, the microvm's emulation) only needs more calls,
	 * and up to 4 times the program's own CPU for one call is allowed. */
	f->cfg.limits.cpu_sec = 2;
	f->cfg.limits.wall_sec = 120;
	close_session(s);
	s = open_session(&f->cfg);
	cell(s, &r, "while True:\n    pass\n");
	assert_status(&r, AJ_STATUS_TIMEOUT);
	assert_true(contains(r.message, "CPU"));
	aj_result_free(&r);
	double used_ms = 0;
	int calls = 0;
	for (; calls < 20 && used_ms <= f->cfg.limits.cpu_sec * 1000.0; calls++) {
		cell(s, &r, "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n"
			    "    pass\nprint('ok')");
		assert_status(&r, AJ_STATUS_OK);
		assert_string_equal(r.stdout_buf, "ok\n");
		used_ms += r.cpu_ms;
		aj_result_free(&r);
	}
	if (used_ms <= f->cfg.limits.cpu_sec * 1000.0)
		fail_msg("%d calls used %.0f ms of CPU together, not past the %g s one call may use",
			 calls, used_ms, f->cfg.limits.cpu_sec);
	close_session(s);
}

/* The interpreter is the session's own: a cell can rewrite it, spam its
 * reply pipe or close its request pipe. The session may lose its state,
 * never its bounds, and other calls' answers stay their own. */
static void session_interpreter_tampering(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.wall_sec = 5;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	cell_expect(s,
		    "import os, threading\n"
		    "def spam():\n"
		    "    while True:\n"
		    "        os.write(4, b'{\"seq\":1,\"exit\":0}\\n' * 64)\n"
		    "threading.Thread(target=spam, daemon=True).start()\n",
		    AJ_STATUS_OK, NULL);
	/* Forged lines never pass for this call's answer. */
	cell(s, &r, "import sys\nprint('real answer')\nsys.exit(3)\n");
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 3);
	assert_true(contains(r.stdout_buf, "real answer"));
	aj_result_free(&r);
	/* No reader of requests left: the interpreter ends, the next call is
	 * fresh and told so. */
	cell(s, &r, "import os\nos.close(3)\n");
	aj_result_free(&r);
	cell(s, &r, "print('spam' in dir())");
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "False\n");
	assert_true(contains(r.message, "restarted"));
	aj_result_free(&r);
	close_session(s);
}

struct cancel_ctx {
	struct aj_session *s;
	struct aj_cancel *cancel;
	struct aj_result res;
};

static void *cancel_worker(void *arg)
{
	struct cancel_ctx *c = arg;
	static const char code[] = "import time\ntime.sleep(20)\n";
	aj_session_run_cancellable(c->s, code, strlen(code), c->cancel, &c->res);
	return NULL;
}

static void session_cancel(void **state)
{
	struct fixture *f = *state;
	struct cancel_ctx c = {.s = open_session(&f->cfg)};
	cancel_after(700, &c.cancel, cancel_worker, &c, &c.res);
	aj_result_free(&c.res);
	cell_expect(c.s, "print('after cancel')", AJ_STATUS_OK, "after cancel");
	close_session(c.s);
}

static void session_files_round_trip(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_error err = {0};
	unsigned char bin[256];
	for (int i = 0; i < 256; i++)
		bin[i] = (unsigned char)i;
	assert_int_equal(aj_session_put(s, "data/in/bytes.bin", bin, sizeof bin, &err), 0);
	assert_int_equal(aj_session_put(s, "/tmp/work/data/note.txt", "a,b\n1,2\n", 8, &err), 0);
	assert_int_equal(aj_session_put(s, "empty", "", 0, &err), 0);
	/* Replacing a file is whole or nothing. */
	assert_int_equal(aj_session_put(s, "empty", "", 0, &err), 0);
	cell_expect(s,
		    "b = open('data/in/bytes.bin', 'rb').read()\n"
		    "print(len(b), b == bytes(range(256)), open('data/note.txt').read().split())\n"
		    "open('data/out.csv', 'w').write('total,3\\n')\n",
		    AJ_STATUS_OK, "256 True ['a,b', '1,2']");
	void *data = NULL;
	size_t len = 0;
	assert_int_equal(aj_session_get(s, "data/out.csv", &data, &len, &err), 0);
	assert_int_equal(len, 8);
	assert_memory_equal(data, "total,3\n", 8);
	free(data);
	assert_int_equal(aj_session_get(s, "data/in/bytes.bin", &data, &len, &err), 0);
	assert_int_equal(len, 256);
	assert_memory_equal(data, bin, 256);
	free(data);
	struct aj_file_info *e = NULL;
	size_t n = 0;
	assert_int_equal(aj_session_list(s, "data", &e, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(e[0].name, "in");
	assert_int_equal(e[0].type, AJ_FILE_DIRECTORY);
	assert_string_equal(e[1].name, "note.txt");
	assert_int_equal(e[1].type, AJ_FILE_REGULAR);
	assert_int_equal(e[1].size, 8);
	assert_string_equal(e[2].name, "out.csv");
	aj_file_list_free(e, n);
	assert_int_equal(aj_session_list(s, "", &e, &n, &err), 0);
	bool saw_outputs = false;
	for (size_t i = 0; i < n; i++)
		saw_outputs |= !strcmp(e[i].name, "outputs") && e[i].type == AJ_FILE_DIRECTORY;
	assert_true(saw_outputs);
	aj_file_list_free(e, n);
	close_session(s);
}

/* Bad input: a clear error, and nothing lost (the session works after). */
static void session_bad_paths(void **state)
{
	struct fixture *f = *state;
	f->cfg.session.transfer_mb = 1;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_error err = {0};
	void *data = NULL;
	size_t len = 0;
	cell_expect(s,
		    "import os\n"
		    "os.symlink('/etc/passwd', 'link')\n"
		    "os.symlink('/etc', 'dirlink')\n"
		    "os.mkfifo('fifo')\n"
		    "open(b'bad-\\xff-name', 'w').write('x')\n"
		    "open('secret', 'w').write('mine')\n",
		    AJ_STATUS_OK, NULL);
	const struct {
		const char *path;
		int code;
		const char *says;
	} bad[] = {
		{"../x", -EACCES, "'..'"},
		{"a/../../x", -EACCES, "'..'"},
		{"/etc/passwd", -EACCES, "outside the workspace"},
		{"/tmp/workshop", -EACCES, "outside the workspace"},
		{"bad-\xff", -EILSEQ, "UTF-8"},
		{"", -EISDIR, "workspace itself"},
		{"link", -ELOOP, "symlink"},
		{"dirlink/passwd", -ELOOP, "symlink"},
		{"fifo", -EINVAL, "not a regular file"},
		{"nothing-here", -ENOENT, "no such file"},
		{"data", -ENOENT, "no such file"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = aj_session_get(s, bad[i].path, &data, &len, &err);
		if (rc != bad[i].code || !contains(err.message, bad[i].says))
			fail_msg("get %s: %d %s", bad[i].path, rc, err.message);
		assert_null(data);
	}
	assert_int_equal(aj_session_put(s, "../escape", "x", 1, &err), -EACCES);
	assert_int_equal(aj_session_put(s, "dirlink/x", "x", 1, &err), -ELOOP);
	/* A symlink is never replaced (the write would land elsewhere). */
	assert_int_equal(aj_session_put(s, "link", "x", 1, &err), -EEXIST);
	/* Over the transfer cap, each way. */
	size_t big = (1u << 20) + 1;
	char *buf = calloc(1, big);
	assert_int_equal(aj_session_put(s, "big", buf, big, &err), -EFBIG);
	assert_true(contains(err.message, "transfer"));
	free(buf);
	cell_expect(s, "open('big-made', 'wb').write(b'x' * (2 << 20))", AJ_STATUS_OK, NULL);
	assert_int_equal(aj_session_get(s, "big-made", &data, &len, &err), -EFBIG);
	struct aj_file_info *e = NULL;
	size_t n = 0;
	assert_int_equal(aj_session_list(s, "../", &e, &n, &err), -EACCES);
	assert_null(e);
	/* A name that is not UTF-8 is listed readably, not dropped. */
	assert_int_equal(aj_session_list(s, ".", &e, &n, &err), 0);
	bool shown = false;
	for (size_t i = 0; i < n; i++)
		shown |= !strcmp(e[i].name, "bad-\xef\xbf\xbd-name");
	assert_true(shown);
	aj_file_list_free(e, n);
	/* Nothing was lost on the way: the session and its files are intact. */
	assert_int_equal(aj_session_get(s, "secret", &data, &len, &err), 0);
	assert_memory_equal(data, "mine", 4);
	free(data);
	cell_expect(s, "print(open('secret').read())", AJ_STATUS_OK, "mine");
	close_session(s);
	/* No session at all. */
	struct aj_result r;
	assert_int_equal(aj_session_run(NULL, "1", 1, &r), -EINVAL);
	assert_status(&r, AJ_STATUS_SANDBOX_ERROR);
	aj_result_free(&r);
	assert_int_equal(aj_session_put(NULL, "x", "x", 1, &err), -EINVAL);
}

static bool is_png(const struct aj_image *im)
{
	return im->len > 8 && !memcmp(im->data, "\x89PNG\r\n\x1a\n", 8) &&
	       !strcmp(im->mime, "image/png");
}

static void session_charts(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.memory_mb = 512;
	/* matplotlib's first import builds its font cache: seconds of CPU,
	 * many more under a microVM's emulation. */
	f->cfg.limits.wall_sec = 120;
	f->cfg.limits.cpu_sec = 100;
	f->cfg.session.images = 2;
	if (f->chart_image)
		f->cfg.image = f->chart_image;
	if (f->chart_docker_image)
		f->cfg.docker_image = f->chart_docker_image;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	cell(s, &r, "import matplotlib\n");
	if (r.status != AJ_STATUS_OK)
		fail_msg("matplotlib is not in this tier's image: %s %s %s", aj_status_name(r.status),
			 r.message ? r.message : "", r.stderr_buf);
	aj_result_free(&r);
	cell(s, &r,
	     "import matplotlib.pyplot as plt\n"
	     "plt.plot([1, 4, 9])\n"
	     "plt.title('squares')\n"
	     "print('drawn')\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_int_equal(r.image_count, 1);
	assert_string_equal(r.images[0].name, "figure-1.png");
	assert_true(is_png(&r.images[0]));
	aj_result_free(&r);
	/* Returned once: the figure was closed. A saved image comes back too. */
	cell(s, &r, "plt.figure(); plt.bar([1, 2], [3, 4]); plt.savefig('outputs/bars.png'); "
		    "plt.close('all')");
	assert_status(&r, AJ_STATUS_OK);
	assert_int_equal(r.image_count, 1);
	assert_string_equal(r.images[0].name, "outputs/bars.png");
	assert_true(is_png(&r.images[0]));
	aj_result_free(&r);
	/* The cap on count: two kept, the rest counted. */
	cell(s, &r, "for i in range(4):\n    plt.figure(); plt.plot([i])\n");
	assert_int_equal(r.image_count, 2);
	assert_int_equal(r.images_dropped, 2);
	char *json = aj_result_to_json(&r, f->tier);
	assert_true(contains(json, "\"images\":[{\"name\":\"figure-"));
	assert_true(contains(json, "\"data\":\"iVBORw0KGgo"));
	assert_true(contains(json, "\"images_dropped\":2"));
	free(json);
	aj_result_free(&r);
	close_session(s);
}

static void session_idle_and_lifetime(void **state)
{
	struct fixture *f = *state;
	f->cfg.session.idle_sec = 1;
	struct aj_session *s = open_session(&f->cfg);
	cell_expect(s,
		    "import subprocess, sys\n"
		    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n",
		    AJ_STATUS_OK, NULL);
	/* The reaper closes it with nobody calling: its processes go (waited
	 * for up to a minute: a deadline that only catches a hang). */
	int left = -1;
	for (int i = 0; i < 600 && left != 0; i++) {
		sleep_ms(100);
		left = sandbox_processes(f);
	}
	assert_int_equal(left, 0);
	struct aj_result r;
	assert_int_equal(aj_session_run(s, "1", 1, &r), -ESHUTDOWN);
	assert_status(&r, AJ_STATUS_SANDBOX_ERROR);
	assert_true(contains(r.message, "idle"));
	aj_result_free(&r);
	struct aj_error err = {0};
	void *data;
	size_t len;
	assert_int_equal(aj_session_get(s, "x", &data, &len, &err), -ESHUTDOWN);
	assert_true(contains(err.message, "closed"));
	assert_true(contains(aj_session_closed_reason(s), "idle"));
	close_session(s);

	f->cfg.session.idle_sec = 60;
	f->cfg.session.lifetime_sec = 2;
	s = open_session(&f->cfg);
	/* Calls until the lifetime has closed it: a minute only catches a
	 * hang. */
	int rc = 0;
	for (int i = 0; i < 600 && rc == 0; i++) {
		rc = aj_session_run(s, "1", 1, &r);
		aj_result_free(&r);
		sleep_ms(100);
	}
	assert_int_equal(rc, -ESHUTDOWN);
	assert_true(contains(aj_session_closed_reason(s), "lifetime"));
	close_session(s);
}

static void session_max_sessions(void **state)
{
	struct fixture *f = *state;
	f->cfg.session.max_sessions = 2;
	struct aj_session *a = open_session(&f->cfg), *b = open_session(&f->cfg), *c = NULL;
	struct aj_error err = {0};
	assert_int_equal(aj_session_open(&f->cfg, &c, &err), -EMFILE);
	assert_null(c);
	assert_true(contains(err.message, "max-sessions"));
	assert_string_not_equal(aj_session_id(a), aj_session_id(b));
	assert_int_equal(strlen(aj_session_id(a)), 32);
	close_session(a);
	c = open_session(&f->cfg);
	close_session(b);
	close_session(c);
}

struct isolated {
	struct aj_config cfg;
	int index;
	char failure[300];
};

/* Each session sets its own secret, file and process, and must see none of
 * the others'. */
static void *isolated_worker(void *arg)
{
	struct isolated *w = arg;
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	struct aj_result r;
	char code[900];
	if (aj_session_open(&w->cfg, &s, &err)) {
		snprintf(w->failure, sizeof w->failure, "open: %.280s", err.message);
		return NULL;
	}
	snprintf(code, sizeof code,
		 "import subprocess, sys\n"
		 "secret = 'secret-%d'\n"
		 "open('/tmp/own-%d', 'w').write(secret)\n"
		 "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)',\n"
		 "                      'mark-%d'])\n",
		 w->index, w->index, w->index);
	aj_session_run(s, code, strlen(code), &r);
	if (r.status != AJ_STATUS_OK)
		snprintf(w->failure, sizeof w->failure, "cell 1: %s %.200s",
			 aj_status_name(r.status), r.stderr_buf);
	aj_result_free(&r);
	for (int round = 0; round < 3 && !w->failure[0]; round++) {
		snprintf(code, sizeof code,
			 "import os\n"
			 "def marks():\n"
			 "    for p in os.listdir('/proc'):\n"
			 "        if p.isdigit():\n"
			 "            args = open('/proc/%%s/cmdline' %% p, 'rb').read().split(b'\\0')\n"
			 "            yield from (a for a in args if a.startswith(b'mark-'))\n"
			 "import time\n"
			 "for _ in range(20):  # its child may still be starting\n"
			 "    seen = sorted(marks())\n"
			 "    if seen:\n"
			 "        break\n"
			 "    time.sleep(0.1)\n"
			 "print(secret, sorted(f for f in os.listdir('/tmp') if f.startswith('own-')),\n"
			 "      seen, p.poll())\n");
		aj_session_run(s, code, strlen(code), &r);
		char want[200];
		snprintf(want, sizeof want, "secret-%d ['own-%d'] [b'mark-%d'] None\n", w->index,
			 w->index, w->index);
		if (r.status != AJ_STATUS_OK || strcmp(r.stdout_buf, want))
			snprintf(w->failure, sizeof w->failure, "round %d: %s: %.120s%.120s", round,
				 aj_status_name(r.status), r.stdout_buf, r.stderr_buf);
		aj_result_free(&r);
	}
	aj_session_close(s);
	return NULL;
}

static void session_isolation_concurrent(void **state)
{
	struct fixture *f = *state;
	enum { N = 4 };
	struct isolated w[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].cfg = f->cfg;
		w[i].index = i;
		assert_int_equal(pthread_create(&th[i], NULL, isolated_worker, &w[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < N; i++)
		if (w[i].failure[0])
			fail_msg("session %d: %s", i, w[i].failure);
}

/* The caller dies with a session open: nothing of the session outlives
 * it (the jail's init sees its life pipe close, the microVM's QEMU and the
 * container's PID 1 their caller's end). */
static void session_caller_death_ends_sandbox(void **state)
{
	struct fixture *f = *state;
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* No cmocka in the child: it only reports on the pipe. */
		struct aj_session *s = NULL;
		struct aj_error err = {0};
		struct aj_result r;
		static const char code[] =
			"import subprocess, sys\n"
			"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
			"print('started')\n";
		if (aj_session_open(&f->cfg, &s, &err) == 0) {
			aj_session_run(s, code, strlen(code), &r);
			(void)!write(ready[1], r.status == AJ_STATUS_OK ? "y" : "n", 1);
		} else {
			(void)!write(ready[1], "n", 1);
		}
		for (;;)
			pause();
	}
	close(ready[1]);
	char c = 0;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	int left = sandbox_processes(f);
	kill(pid, SIGKILL);
	int ws;
	waitpid(pid, &ws, 0);
	assert_int_equal(c, 'y');
	/* The session's processes were there (in a microVM: its QEMU), and
	 * then are not. */
	assert_true(left >= 1);
	for (int i = 0; i < 600 && left; i++) {
		sleep_ms(100);
		left = sandbox_processes(f);
	}
	assert_int_equal(left, 0);
	/* What only the host can remove (an empty cgroup, a stopped
	 * container) goes at the next open of the tier: a cgroup once it is
	 * ten seconds old, a container once its maker is gone. */
	char cg[100];
	snprintf(cg, sizeof cg, "run-%d-", (int)pid);
	for (int i = 0; i < 60; i++) {
		left = count_cgroups_named(cg) + (f->count_leftovers ? f->count_leftovers() : 0);
		if (!left)
			break;
		struct aj_sandbox *sb;
		struct aj_error err = {0};
		if (aj_open(&f->cfg, &sb, &err) == 0)
			aj_close(sb);
		sleep_ms(1000);
	}
	assert_int_equal(left, 0);
}

/* Open, run, close many times: no process, mount, cgroup (the teardown
 * checks those), fd or tier leftover may accumulate. */
static void session_cycles_leave_nothing(void **state)
{
	struct fixture *f = *state;
	int cycles = f->session_cycles ? f->session_cycles : 20;
	int fds = count_open_fds();
	for (int i = 0; i < cycles; i++) {
		struct aj_session *s = open_session(&f->cfg);
		struct aj_result r;
		cell(s, &r, "print(1)");
		if (r.status != AJ_STATUS_OK)
			fail_msg("cycle %d: %s %s", i, aj_status_name(r.status),
				 r.message ? r.message : "");
		aj_result_free(&r);
		close_session(s);
	}
	assert_int_equal(count_open_fds(), fds);
	print_message("    %d session cycles\n", cycles);
}

#include "exec_cases.h"
#include "js_cases.h"
#include "pty_cases.h"
#include "checkpoint_cases.h"

static int session_setup(void **state)
{
	harness_via_session = true;
	return case_setup(state);
}

static int session_teardown(void **state)
{
	harness_via_session = false;
	return case_teardown(state);
}

#define SESSION_TEST(fn) cmocka_unit_test_setup_teardown(fn, case_setup, session_case_teardown)
/* The hostile table again, each program a cell of a fresh session. */
#define HOSTILE_SESSION_TEST(fn)                                                           \
	{"session: " #fn, fn, session_setup, session_teardown, NULL}
#define HOSTILE_SESSION_TABLE HOSTILE_CASES(HOSTILE_SESSION_TEST)

static int restored_setup(void **state)
{
	harness_via_restore = true;
	return session_setup(state);
}

static int restored_teardown(void **state)
{
	harness_via_restore = false;
	return session_teardown(state);
}

#define HOSTILE_RESTORED_TEST(fn)                                                            \
	{"restored session: " #fn, fn, restored_setup, restored_teardown, NULL}
/* The same programs in a restored copy of a paused session, or (every
 * other case, where the config allows two sessions) in a fork of it. */
#define HOSTILE_RESTORED_TABLE HOSTILE_CASES(HOSTILE_RESTORED_TEST)

#define SESSION_TABLE                                                                       \
	SESSION_TEST(session_state_persists), SESSION_TEST(session_crash_restarts_interpreter),  \
	SESSION_TEST(session_memory_keeps_state),                                            \
	SESSION_TEST(session_call_runs_once),                                                \
	SESSION_TEST(session_call_limits), SESSION_TEST(session_cancel),                     \
	SESSION_TEST(session_interpreter_tampering),                                         \
	SESSION_TEST(session_files_round_trip), SESSION_TEST(session_bad_paths),             \
	SESSION_TEST(session_charts), SESSION_TEST(session_idle_and_lifetime),               \
	SESSION_TEST(session_max_sessions), SESSION_TEST(session_isolation_concurrent),      \
	SESSION_TEST(session_caller_death_ends_sandbox),                                     \
	SESSION_TEST(session_cycles_leave_nothing), EXEC_TABLE, JS_TABLE, PTY_TABLE,           \
	CHECKPOINT_TABLE

#endif
