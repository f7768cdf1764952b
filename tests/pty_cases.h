/* A terminal in a session (aj_session_pty), the same cases on every tier
 * (session_cases.h puts PTY_TABLE in SESSION_TABLE): it is a terminal of
 * the size asked, a resize reaches its program, Ctrl-C its foreground job,
 * a full-screen program's bytes and typed bytes round-trip exactly, and its
 * output is a window that never ends it. The docker tier offers none: there
 * each case checks the refusal says why. Hostile programs' use of ptys (a
 * bounded pool) is hostile_devices'. */
#ifndef AJ_TEST_PTY_CASES_H
#define AJ_TEST_PTY_CASES_H

/* A wait on a terminal, in a thread of its own, streaming what it shows
 * into seen while the test types. */
struct pty_watch {
	struct aj_session *s;
	uint32_t pid;
	struct proc_seen seen;
	char tail[64];          /* the last bytes it showed */
	struct aj_result r;
	int rc;
	pthread_t t;
};

static void pty_watch_fn(void *arg, const struct aj_event *ev)
{
	struct pty_watch *w = arg;
	proc_seen_fn(&w->seen, ev);
	pthread_mutex_lock(&w->seen.m);
	size_t keep = sizeof w->tail - 1, old = strlen(w->tail);
	size_t n = ev->len < keep ? ev->len : keep;
	size_t from_old = old + n > keep ? keep - n : old;
	memmove(w->tail, w->tail + old - from_old, from_old);
	memcpy(w->tail + from_old, ev->data + ev->len - n, n);
	w->tail[from_old + n] = '\0';
	pthread_mutex_unlock(&w->seen.m);
}

static void *pty_watch_main(void *arg)
{
	struct pty_watch *w = arg;
	const struct aj_stream st = {pty_watch_fn, w, 0};
	w->rc = aj_session_proc_wait(w->s, w->pid, NULL, &st, &w->r);
	return NULL;
}

/* Starts argv on a cols x rows terminal and a watch on it; false on a
 * tier without terminals, once its refusal is checked. */
static bool pty_start(struct fixture *f, struct aj_session *s, const char *command,
		      uint16_t cols, uint16_t rows, struct pty_watch *w)
{
	struct aj_exec x = {.command = command};
	struct aj_error err = {0};
	memset(w, 0, sizeof *w);
	w->s = s;
	pthread_mutex_init(&w->seen.m, NULL);
	int rc = aj_session_pty(s, &x, cols, rows, &w->pid, &err);
	if (f->no_ptys) {
		assert_int_equal(rc, -EOPNOTSUPP);
		if (!contains(err.message, "offers no terminal") || !contains(err.message, "devpts"))
			fail_msg("the refusal does not say why: %s", err.message);
		return false;
	}
	if (rc)
		fail_msg("aj_session_pty(%s): %d: %s", command, rc, err.message);
	assert_int_equal(pthread_create(&w->t, NULL, pty_watch_main, w), 0);
	return true;
}

/* Waits until the terminal has shown word (60 s only catches a program
 * that never shows it). */
static void pty_wait_for(struct pty_watch *w, const char *word)
{
	for (int i = 0; i < 6000; i++) {
		pthread_mutex_lock(&w->seen.m);
		bool got = strstr(w->seen.text, word) != NULL;
		pthread_mutex_unlock(&w->seen.m);
		if (got)
			return;
		usleep(10000);
	}
	fail_msg("the terminal never showed \"%s\": %s", word, w->seen.text);
}

static void pty_type(struct pty_watch *w, const char *keys)
{
	struct aj_error err = {0};
	if (aj_session_proc_input(w->s, w->pid, keys, strlen(keys), false, &err))
		fail_msg("typing into %u: %s", w->pid, err.message);
}

/* Its end: the wait's result in w->r (the caller frees it). */
static void pty_end(struct pty_watch *w, enum aj_status want)
{
	pthread_join(w->t, NULL);
	if (w->rc || w->r.status != want)
		fail_msg("terminal %u: rc %d, %s, want %s: %s / %s", w->pid, w->rc,
			 aj_status_name(w->r.status), aj_status_name(want),
			 w->r.message ? w->r.message : "-", w->r.stdout_buf);
}

/* A terminal of the size asked, its program's controlling one, TERM set. */
static void pty_is_a_terminal(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct pty_watch w;
	if (pty_start(f, s, "tty; stty size; test -t 0 && test -t 1 && echo both-ttys; "
			    "echo \"term=$TERM\"; python3 -c \"import os; "
			    "print('has-ctty', os.tcgetpgrp(0) == os.getpgrp())\"",
		      100, 30, &w)) {
		pty_end(&w, AJ_STATUS_OK);
		assert_true(contains(w.r.stdout_buf, "/dev/pts/"));
		assert_true(contains(w.r.stdout_buf, "30 100\r\n"));
		assert_true(contains(w.r.stdout_buf, "both-ttys"));
		assert_true(contains(w.r.stdout_buf, "term=xterm-256color"));
		assert_true(contains(w.r.stdout_buf, "has-ctty True"));
		aj_result_free(&w.r);
	}
	/* What is refused, with its reason. */
	struct aj_error err = {0};
	uint32_t pid = 0;
	assert_int_equal(aj_session_pty(s, NULL, 0, 30, &pid, &err), -EINVAL);
	assert_true(contains(err.message, "1 to 4096"));
	assert_int_equal(aj_session_pty_resize(s, 999999, 80, 24, &err), -ESRCH);
	if (!f->no_ptys) {
		uint32_t plain = spawn_sh(s, "sleep 30", false);
		assert_int_equal(aj_session_pty_resize(s, plain, 80, 24, &err), -ENOTTY);
		assert_true(contains(err.message, "no terminal"));
		assert_int_equal(aj_session_proc_signal(s, plain, SIGKILL, &err), 0);
	}
	close_session(s);
}

/* A resize reaches the program (stty size follows it); Ctrl-C typed is
 * SIGINT to the foreground job, which ends it. */
static void pty_resize_and_ctrl_c(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct pty_watch w;
	if (pty_start(f, s, "echo ready; read x; stty size; echo ready2; exec sleep 60", 80, 24,
		      &w)) {
		pty_wait_for(&w, "ready");
		struct aj_error err = {0};
		assert_int_equal(aj_session_pty_resize(s, w.pid, 132, 43, &err), 0);
		pty_type(&w, "go\n");
		pty_wait_for(&w, "43 132");
		pty_wait_for(&w, "ready2");
		if (f->pty_keys_not_signals) /* the signal Ctrl-C would be (docs/commands.md) */
			assert_int_equal(aj_session_proc_signal(s, w.pid, SIGINT, &err), 0);
		else
			pty_type(&w, "\x03");
		pty_end(&w, AJ_STATUS_KILLED);
		assert_int_equal(w.r.signal, SIGINT);
		assert_true(contains(w.r.stdout_buf, "go\r\n")); /* the terminal echoes */
		aj_result_free(&w.r);
	}
	close_session(s);
}

/* A full-screen program's bytes come back exactly (escape sequences,
 * every printable byte, no newline translation once it turns that off),
 * and keys typed in raw mode reach the program exactly. */
static void pty_full_screen_round_trip(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	struct pty_watch w;
	if (pty_start(f, s,
		      "stty raw -echo; printf R; python3 -c \"import sys; "
		      "sys.stdout.buffer.write(b'\\x1b[?1049h\\x1b[2J\\x1b[H' + "
		      "bytes(range(32, 127)) * 40 + b'\\x1b[5;10H\\x1b[7m!\\x1b[0m\\x1b[?1049l')\"; "
		      "head -c 5",
		      80, 24, &w)) {
		char want[64 + 95 * 40];
		size_t n = 0;
		n += (size_t)sprintf(want + n, "R\x1b[?1049h\x1b[2J\x1b[H");
		for (int i = 0; i < 40; i++)
			for (int c = 32; c < 127; c++)
				want[n++] = (char)c;
		n += (size_t)sprintf(want + n, "\x1b[5;10H\x1b[7m!\x1b[0m\x1b[?1049l");
		want[n] = '\0';
		pty_wait_for(&w, "\x1b[?1049l");
		pty_type(&w, "\x01\x7f\x1b[A"); /* Ctrl-A, DEL, Up: 5 bytes as keys */
		pty_end(&w, AJ_STATUS_OK);
		char all[sizeof want + 8];
		snprintf(all, sizeof all, "%s%s", want, "\x01\x7f\x1b[A");
		assert_int_equal(w.r.stdout_len, strlen(all));
		assert_memory_equal(w.r.stdout_buf, all, strlen(all));
		aj_result_free(&w.r);
	}
	close_session(s);
}

/* Output past the output limit does not end a terminal: the stream
 * shows it to the last byte, the result keeps the last of it that fits
 * (truncated), and
 * its program's end is its own. */
static void pty_output_is_a_window(void **state)
{
	struct fixture *f = *state;
	struct aj_config cfg = f->cfg;
	cfg.limits.output_kb = 64;
	struct aj_session *s = open_session(&cfg);
	struct pty_watch w;
	if (pty_start(f, s, "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo the-end", 80, 24,
		      &w)) {
		pty_end(&w, AJ_STATUS_OK);
		assert_int_equal(w.r.exit_code, 0);
		assert_true(w.r.stdout_len <= 64 * 1024);
		assert_true(w.r.stdout_truncated);
		assert_true(contains(w.tail, "the-end\r\n"));
		/* What it keeps is the screen's last: the end. */
		assert_true(contains(w.r.stdout_buf, "the-end\r\n"));
		aj_result_free(&w.r);
	}
	close_session(s);
}

/* Whether pid of s still runs (false once it ended, or is not listed). */
static bool proc_running(struct aj_session *s, uint32_t pid)
{
	struct aj_proc_info *procs = NULL;
	size_t n = 0;
	struct aj_error err = {0};
	if (aj_session_procs(s, &procs, &n, &err))
		fail_msg("procs: %s", err.message);
	bool running = false;
	for (size_t i = 0; i < n; i++)
		running |= procs[i].pid == pid && procs[i].running;
	aj_proc_list_free(procs, n);
	return running;
}

/* A wait that begins only after the burst has passed its window finds
 * the start gone: what it keeps fits, but it is not the whole output, and
 * the result says so (seen once as a flake of the case above on a busy
 * machine, where the wait fell that far behind). */
static void pty_window_passed_before_the_wait(void **state)
{
	struct fixture *f = *state;
	struct aj_config cfg = f->cfg;
	cfg.limits.output_kb = 64;
	struct aj_session *s = open_session(&cfg);
	struct aj_exec x = {.command = "head -c 300000 /dev/zero | tr '\\0' x; echo; echo the-end"};
	struct aj_error err = {0};
	uint32_t pid = 0;
	int rc = aj_session_pty(s, &x, 80, 24, &pid, &err);
	if (f->no_ptys) {
		assert_int_equal(rc, -EOPNOTSUPP);
		close_session(s);
		return;
	}
	if (rc)
		fail_msg("aj_session_pty: %d: %s", rc, err.message);
	/* 60 s only catches a command that never ends. */
	for (int i = 0; i < 6000 && proc_running(s, pid); i++)
		usleep(10000);
	struct aj_result r;
	assert_int_equal(aj_session_proc_wait(s, pid, NULL, NULL, &r), 0);
	assert_int_equal(r.exit_code, 0);
	assert_true(r.stdout_len <= 64 * 1024);
	assert_true(r.stdout_truncated);
	assert_true(contains(r.stdout_buf, "the-end\r\n"));
	aj_result_free(&r);
	close_session(s);
}

#define PTY_TABLE                                                                           \
	SESSION_TEST(pty_is_a_terminal), SESSION_TEST(pty_resize_and_ctrl_c),                \
	SESSION_TEST(pty_full_screen_round_trip), SESSION_TEST(pty_output_is_a_window),   \
	SESSION_TEST(pty_window_passed_before_the_wait)

#endif
