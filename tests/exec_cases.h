/* Commands in a session (aj_session_exec), the cases every tier with
 * sessions runs (session_cases.h puts EXEC_TABLE in SESSION_TABLE). The
 * test images hold dash (/bin/sh) and python3, so the commands use the
 * shell's builtins and python3 -c. Nothing here names a tier. */
#ifndef AJ_TEST_EXEC_CASES_H
#define AJ_TEST_EXEC_CASES_H

#include "hostile.h"

static int exec_sh(struct aj_session *s, const char *command, double timeout,
		   struct aj_result *r)
{
	struct aj_exec x = {.command = command, .timeout_sec = timeout};
	return aj_session_exec(s, &x, NULL, NULL, r);
}

/* A command, taken by the session (rc 0), with the status wanted. */
static void exec_expect(struct aj_session *s, const char *command, enum aj_status want,
			struct aj_result *r)
{
	int rc = exec_sh(s, command, 0, r);
	if (rc)
		fail_msg("aj_session_exec(%s): %d: %s", command, rc, r->message ? r->message : "-");
	if (r->status != want)
		fail_msg("exec %s: %s, want %s: %s / %s / %s", command, aj_status_name(r->status),
			 aj_status_name(want), r->message ? r->message : "-", r->stdout_buf,
			 r->stderr_buf);
}

/* The live processes the sandbox's pid namespace shows, as a command
 * counts them (its own python3 included; zombies not), once it is at most
 * want: killed processes end, and are reaped, as events of their own (30 s
 * only catches one that never ends). want < 0: counted once. */
static long exec_process_count_until(struct aj_session *s, long want)
{
	char command[600];
	snprintf(command, sizeof command,
		 "python3 -c \"import os, time\n"
		 "def live():\n"
		 "    n = 0\n"
		 "    for p in os.listdir('/proc'):\n"
		 "        try:\n"
		 "            n += p.isdigit() and open('/proc/%%s/stat' %% p).read().rsplit(')', 1)[1].split()[0] != 'Z'\n"
		 "        except OSError:\n"
		 "            pass\n"
		 "    return n\n"
		 "for i in range(3000):\n"
		 "    n = live()\n"
		 "    if %ld < 0 or n <= %ld: break\n"
		 "    time.sleep(0.01)\n"
		 "print(n)\"",
		 want, want);
	struct aj_result r;
	exec_expect(s, command, AJ_STATUS_OK, &r);
	long n = strtol(r.stdout_buf, NULL, 10);
	aj_result_free(&r);
	return n;
}

static long exec_process_count(struct aj_session *s)
{
	return exec_process_count_until(s, -1);
}

/* Exit codes, both streams, a signal, a program not found, argv. */
static void exec_exit_and_output(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	exec_expect(s, "echo out; echo err >&2; exit 3", AJ_STATUS_ERROR, &r);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.stdout_buf, "out\n");
	assert_string_equal(r.stderr_buf, "err\n");
	aj_result_free(&r);
	exec_expect(s, "kill -TERM $$", AJ_STATUS_KILLED, &r);
	assert_false(r.has_exit_code);
	assert_int_equal(r.signal, 15);
	aj_result_free(&r);
	static const char *const argv[] = {"python3", "-c", "import sys; print(sys.argv[1:])",
					   "a b", "$HOME", NULL};
	static const char *const missing[] = {"no-such-program", NULL};
	struct aj_exec x = {.argv = argv};
	assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "['a b', '$HOME']\n"); /* no shell between */
	aj_result_free(&r);
	x.argv = missing;
	assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), 0);
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 127);
	assert_true(contains(r.stderr_buf, "no-such-program"));
	aj_result_free(&r);
	close_session(s);
}

/* A command and a cell share the workspace, and a command leaves the
 * interpreter's state as it was. */
static void exec_shares_the_session(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	cell_expect(s, "kept = 7\nimport os\nos.mkdir('sub')\nopen('sub/in.txt', 'w').write('from-cell\\n')\n",
		    AJ_STATUS_OK, NULL);
	struct aj_exec x = {.command = "pwd; read line < in.txt; echo \"$line\"; "
				       "echo from-command > out.txt",
			    .cwd = "sub"};
	assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, AJ_SESSION_WORKSPACE "/sub\nfrom-cell\n");
	aj_result_free(&r);
	cell_expect(s, "print(kept, open('sub/out.txt').read().strip(), os.getcwd())",
		    AJ_STATUS_OK, "7 from-command " AJ_SESSION_WORKSPACE);
	close_session(s);
}

/* A directory outside the workspace, or through a symlink, is refused;
 * so is an environment variable the deployer's rules refuse. */
static void exec_refuses_what_it_must(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	static const char *const outside[] = {"..", "/etc", "sub/../..", AJ_SESSION_WORKSPACE "/.."};
	for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
		struct aj_exec x = {.command = "pwd", .cwd = outside[i]};
		assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), -EACCES);
		assert_status(&r, AJ_STATUS_SANDBOX_ERROR);
		assert_true(contains(r.message, "cwd"));
		assert_int_equal(r.stdout_len, 0);
		aj_result_free(&r);
	}
	cell_expect(s, "import os\nos.symlink('/', 'root')\nos.mkdir('d')\n", AJ_STATUS_OK, NULL);
	struct aj_exec link = {.command = "pwd", .cwd = "root"};
	assert_int_equal(aj_session_exec(s, &link, NULL, NULL, &r), 0);
	assert_status(&r, AJ_STATUS_SANDBOX_ERROR);
	assert_true(contains(r.message, "symlink"));
	assert_int_equal(r.stdout_len, 0);
	aj_result_free(&r);
	static const char *const env_ok[] = {"GREETING=hello there", NULL};
	static const char *const env_bad[] = {"LD_PRELOAD=/tmp/work/x.so", NULL};
	static const char *const env_proxy[] = {"https_proxy=http://10.0.0.1:1", NULL};
	struct aj_exec e = {.command = "echo \"$GREETING\"", .env = env_ok, .env_count = 1,
			    .cwd = "d"};
	assert_int_equal(aj_session_exec(s, &e, NULL, NULL, &r), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "hello there\n");
	aj_result_free(&r);
	/* A long name arrives whole; a value that is not UTF-8 is refused,
	 * never dropped. */
	char long_var[320];
	memset(long_var, 'N', 300);
	snprintf(long_var + 300, sizeof long_var - 300, "=whole");
	const char *const env_long[] = {long_var, NULL};
	struct aj_exec l = {.argv = (const char *const[]){"python3", "-c",
		"import os; print([v for k, v in os.environ.items() if len(k) == 300])", NULL},
			    .env = env_long, .env_count = 1};
	assert_int_equal(aj_session_exec(s, &l, NULL, NULL, &r), 0);
	assert_string_equal(r.stdout_buf, "['whole']\n");
	aj_result_free(&r);
	const char *const env_binary[] = {"BIN=\xff", NULL};
	l.env = env_binary;
	assert_int_equal(aj_session_exec(s, &l, NULL, NULL, &r), -EINVAL);
	assert_true(contains(r.message, "BIN"));
	aj_result_free(&r);
	e.env = env_bad;
	assert_int_equal(aj_session_exec(s, &e, NULL, NULL, &r), -EINVAL);
	assert_true(contains(r.message, "LD_PRELOAD"));
	aj_result_free(&r);
	e.env = env_proxy;
	assert_int_equal(aj_session_exec(s, &e, NULL, NULL, &r), -EINVAL);
	assert_true(contains(r.message, "https_proxy"));
	aj_result_free(&r);
	struct aj_exec both = {.command = "true", .argv = (const char *const[]){"true", NULL}};
	assert_int_equal(aj_session_exec(s, &both, NULL, NULL, &r), -EINVAL);
	aj_result_free(&r);
	struct aj_exec late = {.command = "true", .timeout_sec = f->cfg.limits.wall_sec + 1};
	assert_int_equal(aj_session_exec(s, &late, NULL, NULL, &r), -EINVAL);
	assert_true(contains(r.message, "timeout"));
	aj_result_free(&r);
	close_session(s);
}

/* stdin: 1 MiB in, counted by the command; none is /dev/null. */
static void exec_stdin(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	size_t n = 1u << 20;
	char *data = malloc(n);
	assert_non_null(data);
	memset(data, 'a', n);
	struct aj_exec x = {
		.command = "python3 -c \"import sys; d = sys.stdin.buffer.read(); "
			   "print(len(d), set(d) == {97})\"",
		.stdin_data = data,
		.stdin_len = n};
	assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "1048576 True\n");
	aj_result_free(&r);
	free(data);
	exec_expect(s, "python3 -c \"import sys; print(len(sys.stdin.read()))\"", AJ_STATUS_OK,
		    &r);
	assert_string_equal(r.stdout_buf, "0\n");
	aj_result_free(&r);
	close_session(s);
}

/* Its deadline kills the command's whole process group, and nothing of
 * it is left; the interpreter keeps its state. What a command leaves
 * running when it ends is killed too. */
static void exec_timeout_kills_the_group(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	cell_expect(s, "kept = 'still here'", AJ_STATUS_OK, NULL);
	long before = exec_process_count(s);
	int rc = exec_sh(s,
			 "python3 -c \"import os, time; os.fork(); os.fork(); time.sleep(100)\" & "
			 "python3 -c \"import time; time.sleep(100)\"",
			 1, &r);
	assert_int_equal(rc, 0);
	assert_status(&r, AJ_STATUS_TIMEOUT);
	assert_true(contains(r.message, "1 s"));
	aj_result_free(&r);
	assert_int_equal(exec_process_count_until(s, before), before);
	exec_expect(s, "python3 -c \"import os, time; os.fork() or time.sleep(100)\" & exit 0",
		    AJ_STATUS_OK, &r);
	aj_result_free(&r);
	assert_int_equal(exec_process_count_until(s, before), before);
	cell_expect(s, "print(kept)", AJ_STATUS_OK, "still here");
	close_session(s);
}

/* Every command starts with the signals at their defaults and none
 * blocked, whatever a cell did to the interpreter's, and with the call's
 * CPU budget: the first command and the later ones alike (repl.py starts
 * the later ones another way, by vfork, and sets the budget from outside). */
static void exec_signals_and_cpu_budget(void **state)
{
	struct fixture *f = *state;
	struct aj_config cfg = f->cfg;
	cfg.limits.cpu_sec = 1;
	cfg.limits.wall_sec = 30;
	struct aj_session *s = open_session(&cfg);
	struct aj_result r;
	for (int i = 0; i < 3; i++) {
		/* The signals a command is promised at their defaults (repl.py's
		 * CHILD_DEFAULT_SIGNALS; Python keeps an ignored SIGINT ignored),
		 * and none blocked. Asked of Python, not /proc/self/status:
		 * gVisor's has no SigIgn line. */
		static const char *const check[] = {
			"python3", "-c",
			"import signal as s\n"
			"names = ('SIGXCPU', 'SIGQUIT', 'SIGTERM', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU',\n"
			"         'SIGWINCH')\n"
			"bad = [n for n in names if s.getsignal(getattr(s, n)) != s.SIG_DFL]\n"
			"bad += ['SIGINT'] * (s.getsignal(s.SIGINT) != s.default_int_handler)\n"
			"print('ignored', bad, 'blocked', sorted(s.pthread_sigmask(s.SIG_BLOCK, [])))\n",
			NULL};
		const struct aj_exec probe = {.argv = check};
		assert_int_equal(aj_session_exec(s, &probe, NULL, NULL, &r), 0);
		if (r.status != AJ_STATUS_OK || strcmp(r.stdout_buf, "ignored [] blocked []\n"))
			fail_msg("command %d: %s: %s / %s", i, aj_status_name(r.status), r.stdout_buf,
				 r.stderr_buf);
		aj_result_free(&r);
		static const char *const loop[] = {"python3", "-c", "while True: pass", NULL};
		const struct aj_exec x = {.argv = loop};
		assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), 0);
		if (r.status != AJ_STATUS_TIMEOUT || r.signal != SIGXCPU)
			fail_msg("a CPU loop: %s, signal %d: %s", aj_status_name(r.status), r.signal,
				 r.message ? r.message : "-");
		aj_result_free(&r);
		if (i == 1)
			/* A cell that ignores and blocks signals: the commands
			 * after it are started as the first one was. */
			cell_expect(s, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
				       "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])\n"
				       "print('set')",
				    AJ_STATUS_OK, "set");
	}
	close_session(s);
}

/* The deployer's allow-list of the names a command's env may set: a name
 * or a prefix; anything else refused naming it, before anything runs. */
static void exec_env_allow_list_holds(void **state)
{
	struct fixture *f = *state;
	struct aj_config cfg = f->cfg;
	static const char *const allow[] = {"GREETING", "APP_*"};
	cfg.exec_env_allow = allow;
	cfg.exec_env_allow_count = 2;
	struct aj_session *s = open_session(&cfg);
	static const char *const ok[] = {"GREETING=hi", "APP_MODE=x", "APP_=y"};
	struct aj_exec x = {.command = "echo \"$GREETING $APP_MODE $APP_\"", .env = ok,
			    .env_count = 3};
	struct aj_result r;
	assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "hi x y\n");
	aj_result_free(&r);
	static const char *const bad[] = {"GREETING=hi", "GREETINGS=no"};
	x.env = bad;
	x.env_count = 2;
	assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), -EPERM);
	if (!contains(r.message, "GREETINGS is not among the names the deployer lets a command set"))
		fail_msg("the refusal does not name it: %s", r.message);
	aj_result_free(&r);
	uint32_t pid;
	struct aj_error err = {0};
	assert_int_equal(aj_session_spawn(s, &x, false, &pid, &err), -EPERM);
	assert_true(contains(err.message, "GREETINGS"));
	close_session(s);
	/* Its entries are checked with the config. */
	static const char *const wrong[] = {"*"};
	cfg.exec_env_allow = wrong;
	cfg.exec_env_allow_count = 1;
	assert_int_equal(aj_config_validate(&cfg, &err), -EINVAL);
	assert_true(contains(err.message, "exec_env_allow: '*' is not a variable name"));
}

/* A shell line as a language: one-shot in a fresh sandbox whose program
 * is the shell (bash or sh), and in a session as its command; the shell's
 * exit code, output and signals' defaults (`yes | head` ends). */
static void shell_language_runs(void **state)
{
	struct fixture *f = *state;
	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	if (aj_open(&f->cfg, &sb, &err))
		fail_msg("aj_open: %s", err.message);
	harness_track(sb);
	static const char line[] = "echo \"$0 $(pwd)\"; yes | head -2; echo err >&2; exit 4";
	const struct {
		enum aj_language lang;
		const char *shell;
	} cases[] = {{AJ_LANG_BASH, "/bin/bash"}, {AJ_LANG_SH, "/bin/sh"}};
	struct aj_result r;
	char want[128];
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(aj_run_lang(sb, cases[i].lang, line, strlen(line), NULL, NULL, &r), 0);
		snprintf(want, sizeof want, "%s %s\ny\ny\n", cases[i].shell, AJ_SESSION_WORKSPACE);
		if (r.status != AJ_STATUS_ERROR || r.exit_code != 4 || strcmp(r.stdout_buf, want) ||
		    strcmp(r.stderr_buf, "err\n"))
			fail_msg("%s: %s %d: %s / %s", cases[i].shell, aj_status_name(r.status),
				 r.exit_code, r.stdout_buf, r.stderr_buf);
		aj_result_free(&r);
	}
	struct aj_session *s = open_session(&f->cfg);
	cell_expect(s, "open('made.txt', 'w').write('by a cell')", AJ_STATUS_OK, "");
	assert_int_equal(aj_session_run_lang(s, AJ_LANG_SH, "cat made.txt; exit 5", 20, NULL, NULL,
					     &r),
			 0);
	assert_int_equal(r.exit_code, 5);
	assert_string_equal(r.stdout_buf, "by a cell");
	aj_result_free(&r);
	close_session(s);
}

/* Output past the cap stops the call, as a cell's does. */
static void exec_output_cap(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.output_kb = 64;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	exec_expect(s, "python3 -c \"import sys; sys.stdout.write('x' * (1 << 20))\"",
		    AJ_STATUS_OUTPUT_LIMIT, &r);
	assert_true(r.stdout_truncated);
	assert_true(r.stdout_len <= 64 * 1024);
	aj_result_free(&r);
	exec_expect(s, "echo after", AJ_STATUS_OK, &r);
	assert_true(contains(r.stdout_buf, "after"));
	aj_result_free(&r);
	close_session(s);
}

/* ---- background commands ---- */

/* A stream that keeps what it was given, and a thread that fires a
 * cancel once the stream has seen a word (the wait's events arrive while
 * the command still runs). */
struct proc_seen {
	pthread_mutex_t m;
	char text[4096];
	size_t len;
};

static void proc_seen_fn(void *arg, const struct aj_event *ev)
{
	struct proc_seen *s = arg;
	pthread_mutex_lock(&s->m);
	size_t n = ev->len < sizeof s->text - 1 - s->len ? ev->len : sizeof s->text - 1 - s->len;
	memcpy(s->text + s->len, ev->data, n);
	s->len += n;
	s->text[s->len] = '\0';
	pthread_mutex_unlock(&s->m);
}

struct proc_cancel_when {
	struct aj_cancel *c;
	struct proc_seen *seen;
	const char *word;
};

static void *proc_cancel_when_seen(void *arg)
{
	struct proc_cancel_when *w = arg;
	/* 60 s only catches a wait that never streams. */
	for (int i = 0; i < 6000; i++) {
		pthread_mutex_lock(&w->seen->m);
		bool got = strstr(w->seen->text, w->word) != NULL;
		pthread_mutex_unlock(&w->seen->m);
		if (got)
			break;
		usleep(10000);
	}
	aj_cancel_fire(w->c);
	return NULL;
}


static uint32_t spawn_sh(struct aj_session *s, const char *command, bool stdin_open)
{
	struct aj_exec x = {.command = command};
	struct aj_error err = {0};
	uint32_t pid = 0;
	if (aj_session_spawn(s, &x, stdin_open, &pid, &err))
		fail_msg("aj_session_spawn(%s): %s", command, err.message);
	return pid;
}

static void proc_wait_expect(struct aj_session *s, uint32_t pid, enum aj_status want,
			     struct aj_result *r)
{
	int rc = aj_session_proc_wait(s, pid, NULL, NULL, r);
	if (rc || r->status != want)
		fail_msg("wait %u: rc %d, %s, want %s: %s / %s", pid, rc, aj_status_name(r->status),
			 aj_status_name(want), r->message ? r->message : "-", r->stdout_buf);
}

/* Started at once, a cell runs while it does, waited on twice (the second
 * wait, as a second client's re-attach, gets the same whole output and
 * end); listed while running and after. */
static void background_wait_and_reattach(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	uint32_t pid = spawn_sh(s, "echo started; read go; echo \"got $go\"; echo err >&2; exit 6",
				true);
	struct aj_proc_info *procs = NULL;
	size_t n = 0;
	struct aj_error err = {0};
	assert_int_equal(aj_session_procs(s, &procs, &n, &err), 0);
	bool listed = false;
	for (size_t i = 0; i < n; i++)
		listed |= procs[i].pid == pid && procs[i].running && contains(procs[i].command, "read go");
	aj_proc_list_free(procs, n);
	assert_true(listed);
	cell_expect(s, "print('a cell meanwhile')", AJ_STATUS_OK, "a cell meanwhile");
	/* A call's result names what runs on in the background. */
	struct aj_result c;
	cell(s, &c, "print('and it says so')");
	assert_int_equal(c.background_count, 1);
	assert_int_equal(c.background_pids[0], pid);
	char *json = aj_result_to_json(&c, f->tier);
	char want[64];
	snprintf(want, sizeof want, "\"background\":[%u]", pid);
	assert_true(json && contains(json, want));
	free(json);
	aj_result_free(&c);
	assert_int_equal(aj_session_proc_input(s, pid, "yes\n", 4, true, &err), 0);
	for (int i = 0; i < 2; i++) {
		proc_wait_expect(s, pid, AJ_STATUS_ERROR, &r);
		assert_int_equal(r.exit_code, 6);
		assert_string_equal(r.stdout_buf, "started\ngot yes\n");
		assert_string_equal(r.stderr_buf, "err\n");
		aj_result_free(&r);
	}
	exec_expect(s, "true", AJ_STATUS_OK, &c);
	assert_int_equal(c.background_count, 0); /* it ended: none listed */
	assert_null(c.background_pids);
	aj_result_free(&c);
	assert_int_equal(aj_session_proc_input(s, pid, "x", 1, false, &err), -EPIPE);
	assert_int_equal(aj_session_proc_signal(s, 999999, SIGTERM, &err), -ESRCH);
	assert_int_equal(aj_session_proc_wait(s, 999999, NULL, NULL, &r), -ESRCH);
	aj_result_free(&r);
	close_session(s);
}

/* Reads from a caller's own offsets, while it runs and after: what a
 * resumed event stream does (aj_session_proc_read). */
static void background_read_from_offsets(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_proc_output o;
	struct aj_error err = {0};
	uint32_t pid = spawn_sh(s, "echo one; read go; echo two >&2", true);
	/* Its first line comes before its end (a deadline of 60 s only
	 * catches a read that never brings it). */
	int i;
	for (i = 0; i < 300; i++) {
		assert_int_equal(aj_session_proc_read(s, pid, 0, 0, 200, &o, &err), 0);
		bool got = o.out_len == 4;
		if (got) {
			assert_memory_equal(o.out, "one\n", 4);
			assert_false(o.ended);
		}
		aj_proc_output_free(&o);
		if (got)
			break;
	}
	assert_true(i < 300);
	/* From where the caller is: nothing new yet, and not the end. */
	assert_int_equal(aj_session_proc_read(s, pid, 4, 0, 0, &o, &err), 0);
	assert_true(o.out_len == 0 && o.err_len == 0 && !o.ended);
	aj_proc_output_free(&o);
	assert_int_equal(aj_session_proc_input(s, pid, "x\n", 2, true, &err), 0);
	for (i = 0; i < 300; i++) {
		assert_int_equal(aj_session_proc_read(s, pid, 4, 0, 200, &o, &err), 0);
		bool ended = o.ended;
		if (ended)
			assert_true(o.out_len == 0 && o.err_len == 4 && !memcmp(o.err, "two\n", 4));
		aj_proc_output_free(&o);
		if (ended)
			break;
	}
	assert_true(i < 300);
	/* Any place up to the end, again, after it ended. */
	assert_int_equal(aj_session_proc_read(s, pid, 1, 2, 0, &o, &err), 0);
	assert_true(o.out_len == 3 && !memcmp(o.out, "ne\n", 3) && o.err_len == 2 && o.ended);
	aj_proc_output_free(&o);
	/* A place it never printed, an unknown pid, a wait too long. */
	assert_int_equal(aj_session_proc_read(s, pid, 5, 0, 0, &o, &err), -EINVAL);
	assert_true(contains(err.message, "past the 4 bytes of stdout"));
	assert_int_equal(aj_session_proc_read(s, 999999, 0, 0, 0, &o, &err), -ESRCH);
	assert_int_equal(aj_session_proc_read(s, pid, 0, 0, 201, &o, &err), -EINVAL);
	close_session(s);
}

/* A signal ends its whole group; its output streams while it runs. */
static void background_kill_and_stream(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	long before = exec_process_count(s);
	uint32_t pid = spawn_sh(s,
				"python3 -c \"import os, time; os.fork(); time.sleep(100)\" & "
				"python3 -u -c \"import time\nwhile True: print('tick'); time.sleep(0.05)\"",
				false);
	/* Its output comes while it runs: a wait's first events, seen by
	 * the stream before the command ends. */
	struct proc_seen seen = {.m = PTHREAD_MUTEX_INITIALIZER};
	const struct aj_stream st = {proc_seen_fn, &seen, 0};
	struct aj_cancel *c = NULL;
	assert_int_equal(aj_cancel_new(&c), 0);
	pthread_t t;
	struct proc_cancel_when wc = {c, &seen, "tick"};
	assert_int_equal(pthread_create(&t, NULL, proc_cancel_when_seen, &wc), 0);
	assert_int_equal(aj_session_proc_wait(s, pid, c, &st, &r), -ECANCELED);
	pthread_join(t, NULL);
	aj_cancel_free(c);
	aj_result_free(&r);
	struct aj_error err = {0};
	assert_int_equal(aj_session_proc_signal(s, pid, SIGTERM, &err), 0);
	proc_wait_expect(s, pid, AJ_STATUS_KILLED, &r);
	assert_int_equal(r.signal, SIGTERM);
	assert_true(contains(r.stdout_buf, "tick\n"));
	aj_result_free(&r);
	assert_int_equal(exec_process_count_until(s, before), before);
	close_session(s);
}

/* Background commands (and what they started) die with the session that
 * ran them: nothing of them is left on the host once it is closed. */
static void background_dies_with_the_session(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	spawn_sh(s, "sleep 300 & sleep 300", false);
	spawn_sh(s, "python3 -c 'import os, time; os.setsid(); time.sleep(300)'", false);
	struct aj_result r;
	cell(s, &r, "print(1)");
	assert_int_equal(r.background_count, 2);
	aj_result_free(&r);
	close_session(s);
	int left = -1;
	/* An event, waited for: 30 s only catches what stays. */
	for (int i = 0; i < 300 && (left = sandbox_processes(f)); i++)
		sleep_ms(100);
	assert_int_equal(left, 0);
}

/* Its own deadline, and the pids limit against a shell that starts
 * background jobs for ever: the session stays usable. */
static void background_deadline_and_pids(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r;
	long before = exec_process_count(s);
	struct aj_exec x = {.command = "python3 -c 'import time; time.sleep(30)'", .timeout_sec = 1};
	struct aj_error err = {0};
	uint32_t pid = 0;
	if (aj_session_spawn(s, &x, false, &pid, &err))
		fail_msg("spawn of a sleep: %s", err.message);
	proc_wait_expect(s, pid, AJ_STATUS_TIMEOUT, &r);
	assert_true(contains(r.message, "1 s"));
	aj_result_free(&r);
	/* The shell meets the pids limit (it cannot fork: it ends) or its
	 * deadline; either way its group ends whole. */
	x.command = "while true; do python3 -c 'import time; time.sleep(30)' & done";
	x.timeout_sec = 5;
	if (aj_session_spawn(s, &x, false, &pid, &err))
		fail_msg("spawn of the fork loop: %s", err.message);
	int rc = aj_session_proc_wait(s, pid, NULL, NULL, &r);
	if (rc)
		fail_msg("wait on the fork loop: %d: %s", rc, r.message ? r.message : "-");
	if (r.status != AJ_STATUS_ERROR && r.status != AJ_STATUS_TIMEOUT)
		fail_msg("fork loop: %s: %s", aj_status_name(r.status), r.message ? r.message : "");
	aj_result_free(&r);
	assert_int_equal(exec_process_count_until(s, before), before);
	exec_expect(s, "echo still", AJ_STATUS_OK, &r);
	assert_string_equal(r.stdout_buf, "still\n");
	aj_result_free(&r);
	close_session(s);
}

/* A command starts with every signal at its default, as nsjail's do: none
 * ignored, not even one ignored above the sandbox's start, glibc's own 32
 * included (its sigaction cannot reset that one; an ignored disposition
 * outlives exec). The jail tiers' init is this process's child, so the
 * case ignores 32 here while the session opens; the other tiers start
 * theirs afresh, and must show the same. gVisor's /proc/self/status has no
 * SigIgn line: the case skips where the probe finds none. */
static void exec_signals_start_at_default(void **state)
{
	struct fixture *f = *state;
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} ign = {.handler = SIG_IGN}, was;
	assert_int_equal(syscall(SYS_rt_sigaction, 32, &ign, &was, sizeof ign.mask), 0);
	struct aj_session *s = open_session(&f->cfg);
	assert_int_equal(syscall(SYS_rt_sigaction, 32, &was, NULL, sizeof was.mask), 0);
	struct aj_result r;
	/* The shell's own line (builtins only: the test image has no grep). */
	exec_expect(s,
		    "n=none; while IFS= read -r l; do case \"$l\" in SigIgn:*) n=\"$l\";; esac; "
		    "done < /proc/self/status; echo \"$n\"",
		    AJ_STATUS_OK, &r);
	bool none = !strcmp(r.stdout_buf, "none\n");
	if (!none)
		assert_string_equal(r.stdout_buf, "SigIgn:\t0000000000000000\n");
	aj_result_free(&r);
	close_session(s);
	if (none)
		skip();
}

/* A command the kernel's OOM killer ends reads memory, not killed, in the
 * foreground and in the background alike (rule 7 of src/core/status.h):
 * two commands of 60% of the session's memory each, one held in the
 * background, meet the memory cgroup's limit together (each alone is under
 * its data limit). A SIGKILL the caller sends still reads killed. The
 * process and gvisor tiers bound each process's address space instead
 * (RLIMIT_AS: a MemoryError), with no cgroup (process) or one at twice the
 * limit that only backstops the sentry (gvisor, src/gvisor/sandbox.c):
 * the two fit there, and nothing is the OOM killer's. */
static void exec_oom_kill_reads_memory(void **state)
{
	struct fixture *f = *state;
	if (f->tier == AJ_TIER_PROCESS || f->tier == AJ_TIER_GVISOR)
		skip();
	struct aj_session *s = open_session(&f->cfg);
	struct aj_result r, b;
	char command[300];
	const unsigned mb = f->cfg.limits.memory_mb * 6 / 10;
	snprintf(command, sizeof command,
		 "python3 -c \"import time; b = b'x' * (%u << 20); open('held', 'w').close(); "
		 "time.sleep(120)\"",
		 mb);
	uint32_t pid = spawn_sh(s, command, false);
	exec_expect(s, "for i in $(seq 3000); do [ -e held ] && exit 0; sleep 0.01; done; exit 1",
		    AJ_STATUS_OK, &r);
	aj_result_free(&r);
	snprintf(command, sizeof command, "python3 -c \"b = b'x' * (%u << 20); print('done')\"",
		 mb);
	if (exec_sh(s, command, 0, &r))
		fail_msg("exec of the second 60%%: %s", r.message ? r.message : "-");
	if (r.status == AJ_STATUS_MEMORY) {
		/* The foreground command was the one killed; the held one is
		 * the caller's to end, and reads killed. */
		assert_true(contains(r.message, "OOM killer"));
		struct aj_error err = {0};
		assert_int_equal(aj_session_proc_signal(s, pid, SIGKILL, &err), 0);
		proc_wait_expect(s, pid, AJ_STATUS_KILLED, &b);
	} else {
		if (r.status != AJ_STATUS_OK)
			fail_msg("the second 60%%: %s: %s", aj_status_name(r.status),
				 r.message ? r.message : "-");
		proc_wait_expect(s, pid, AJ_STATUS_MEMORY, &b);
		assert_true(contains(b.message, "OOM killer"));
	}
	aj_result_free(&r);
	aj_result_free(&b);
	exec_expect(s, "echo still", AJ_STATUS_OK, &r);
	aj_result_free(&r);
	close_session(s);
}

#define EXEC_TABLE                                                                          \
	SESSION_TEST(exec_exit_and_output), SESSION_TEST(exec_shares_the_session),           \
	SESSION_TEST(exec_refuses_what_it_must), SESSION_TEST(exec_stdin),                   \
	SESSION_TEST(exec_timeout_kills_the_group), SESSION_TEST(exec_output_cap),            \
	SESSION_TEST(exec_signals_and_cpu_budget), SESSION_TEST(shell_language_runs),        \
	SESSION_TEST(exec_env_allow_list_holds), SESSION_TEST(exec_oom_kill_reads_memory),  \
	SESSION_TEST(exec_signals_start_at_default),                                        \
	SESSION_TEST(background_wait_and_reattach), SESSION_TEST(background_kill_and_stream), \
	SESSION_TEST(background_deadline_and_pids), SESSION_TEST(background_read_from_offsets), \
	SESSION_TEST(background_dies_with_the_session)

#endif
