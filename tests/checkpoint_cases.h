/* Checkpoints, restores, forks and pauses of sessions (include after
 * session_cases.h; CHECKPOINT_TABLE goes in SESSION_TABLE): the state a
 * session's cells made comes back exactly, copies are independent, a file
 * that was touched is refused, what cannot be carried is named, and a
 * restored session runs under the config it is given now. Nothing here
 * names a tier. */
#ifndef AJ_TEST_CHECKPOINT_CASES_H
#define AJ_TEST_CHECKPOINT_CASES_H

#include <fcntl.h>
#include <sys/stat.h>

/* A directory of the case's own for checkpoints and keys. */
static char ckpt_dir[64];

static void ckpt_dir_make(void)
{
	snprintf(ckpt_dir, sizeof ckpt_dir, "/tmp/aj-ckpt-XXXXXX");
	if (!mkdtemp(ckpt_dir))
		fail_msg("mkdtemp: %s", strerror(errno));
}

static void ckpt_dir_remove(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ckpt_dir);
	if (system(cmd))
		fail_msg("%s failed", cmd);
}

/* A session this case made otherwise than by open_session (a restore, a
 * fork's copy): closed by the teardown if the case fails. */
static struct aj_session *track(struct aj_session *s)
{
	for (size_t i = 0; s && i < sizeof open_sessions / sizeof open_sessions[0]; i++)
		if (!open_sessions[i]) {
			open_sessions[i] = s;
			break;
		}
	return s;
}

static void ckpt_path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", ckpt_dir, name);
}

static void ckpt_key(struct aj_checkpoint_key *key, const char *name)
{
	char path[128];
	struct aj_error err = {0};
	ckpt_path(path, sizeof path, name);
	if (aj_checkpoint_key_load(path, true, key, &err))
		fail_msg("aj_checkpoint_key_load: %s", err.message);
}

/* The cells whose state every case below checks comes back: data shared
 * between names, a function and a class the cells defined (their globals
 * are the session's: a later change is seen), a closure, a lambda, an
 * import, a context's namespace, and files in the workspace. */
static const char ckpt_setup_cell[] =
	"import math, os\n"
	"x = [1, 2]\n"
	"y = x\n"
	"def f(a):\n"
	"    return a + len(x)\n"
	"class C:\n"
	"    def __init__(self): self.v = 7\n"
	"    def g(self): return f(self.v)\n"
	"c = C()\n"
	"g = lambda q: q * 2\n"
	"def outer():\n"
	"    k = 3\n"
	"    return lambda: k + len(x)\n"
	"inner = outer()\n"
	"os.makedirs('data/deep', exist_ok=True)\n"
	"open('data/deep/a.txt', 'w').write('kept\\n')\n"
	"os.symlink('deep/a.txt', 'data/link')\n"
	"print('set')\n";

static void ckpt_setup(struct aj_session *s)
{
	cell_expect(s, ckpt_setup_cell, AJ_STATUS_OK, "set");
	/* A package whose submodule the cell imported: the namespace holds
	 * the package, the code reads the submodule through it. */
	cell_expect(s, "import xml.dom\nprint('imported')", AJ_STATUS_OK, "imported");
	struct aj_result r;
	notebook_cell(s, &r, "z = 5\ndef h():\n    return z\n", false, "side", false);
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
}

/* What ckpt_setup made is all there, and behaves as it did. */
static void ckpt_check(struct aj_session *s)
{
	cell_expect(s,
		    "print(f(1), y is x, c.g(), C().g(), g(3), inner(), round(math.pi, 2))\n"
		    "x.append(9)\n"
		    "print('after', f(1), inner(), c.g())\n"
		    "print(open('data/deep/a.txt').read().strip(), os.readlink('data/link'))\n",
		    AJ_STATUS_OK, "3 True 9 9 6 5 3.14\nafter 4 6 10\nkept deep/a.txt");
	struct aj_result r;
	notebook_cell(s, &r, "z = 6\nprint(h())", false, "side", false);
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "6"));
	aj_result_free(&r);
	/* The context's names stay its own. */
	cell_expect(s, "print('z' in globals(), 'h' in globals())", AJ_STATUS_OK, "False False");
	cell_expect(s, "print(xml.dom.Node.ELEMENT_NODE)", AJ_STATUS_OK, "1");
}

/* A checkpoint at path (in a new ckpt_dir, under a new key) of a session
 * whose one cell was code, printing want; the session is closed. */
static void ckpt_made_of(const struct aj_config *cfg, const char *code, const char *want,
			 struct aj_checkpoint_key *key, char *path, size_t n)
{
	ckpt_dir_make();
	ckpt_key(key, "key");
	ckpt_path(path, n, "c");
	struct aj_session *s = open_session(cfg);
	cell_expect(s, code, AJ_STATUS_OK, want);
	struct aj_error err = {0};
	if (aj_session_checkpoint(s, key, path, NULL, &err))
		fail_msg("aj_session_checkpoint: %s", err.message);
	close_session(s);
}

static void checkpoint_restore_keeps_state(void **state)
{
	struct fixture *f = *state;
	ckpt_dir_make();
	struct aj_checkpoint_key key;
	ckpt_key(&key, "key");
	char path[128];
	ckpt_path(path, sizeof path, "one.ckpt");
	struct aj_session *s = open_session(&f->cfg);
	ckpt_setup(s);
	struct aj_checkpoint_info info;
	struct aj_error err = {0};
	unsigned long direct = session_state_direct_moves();
	if (aj_session_checkpoint(s, &key, path, &info, &err))
		fail_msg("aj_session_checkpoint: %s", err.message);
	assert_int_equal(info.files, 1);
	assert_int_equal(info.left_out, 0);
	assert_string_equal(info.note, "");
	assert_true(info.bytes > 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* The session goes on as it was, and its workspace has no trace. */
	cell_expect(s, "print(sorted(os.listdir('.')), f(0))", AJ_STATUS_OK, "['data'");
	cell_expect(s, "print(os.path.exists('.agentjail-state'))", AJ_STATUS_OK, "False");
	close_session(s);
	/* The library's state is not needed: only the file and the key. */
	struct aj_session *r = NULL;
	if (aj_session_restore(&f->cfg, &key, path, &r, &info, &err))
		fail_msg("aj_session_restore: %s", err.message);
	track(r);
	assert_int_equal(info.files, 1);
	ckpt_check(r);
	/* Where the host sees the sandbox's workspace (the process and
	 * container tiers: tier_ops.session_workspace), the state crossed
	 * through it both ways, never encoded into the session's lines. */
	bool view = f->cfg.tier == AJ_TIER_PROCESS || f->cfg.tier == AJ_TIER_CONTAINER;
	assert_int_equal(session_state_direct_moves() - direct, view ? 2 : 0);
	close_session(r);
	ckpt_dir_remove();
}

/* A restored copy is a new session: a second restore of the same file
 * starts again from the checkpoint, whatever the first did since. */
static void checkpoint_restores_twice_alike(void **state)
{
	struct fixture *f = *state;
	struct aj_checkpoint_key key;
	char path[128];
	ckpt_made_of(&f->cfg, "n = [0]\nopen('f', 'w').write('0')\nprint('ok')", "ok", &key, path,
		     sizeof path);
	struct aj_error err = {0};
	for (int i = 0; i < 2; i++) {
		struct aj_session *r = NULL;
		if (aj_session_restore(&f->cfg, &key, path, &r, NULL, &err))
			fail_msg("aj_session_restore: %s", err.message);
		track(r);
		cell_expect(r, "n.append(1)\nopen('f', 'a').write('1')\nprint(n, open('f').read())",
			    AJ_STATUS_OK, "[0, 1] 01");
		close_session(r);
	}
	ckpt_dir_remove();
}

/* Whatever was done to the file, or whichever key made it, a checkpoint
 * that is not this key's own writing is refused before any of it is
 * used: -EBADMSG, and no session. */
static void checkpoint_tampered_refused(void **state)
{
	struct fixture *f = *state;
	struct aj_checkpoint_key key, other;
	char path[128], bad[128];
	ckpt_made_of(&f->cfg, "secret = 'v' * 1000\nprint('ok')", "ok", &key, path, sizeof path);
	ckpt_key(&other, "other");
	ckpt_path(bad, sizeof bad, "bad");
	struct aj_error err = {0};
	char *data = NULL;
	size_t len = 0;
	{
		FILE *in = fopen(path, "rb");
		assert_non_null(in);
		struct stat st;
		assert_int_equal(fstat(fileno(in), &st), 0);
		len = (size_t)st.st_size;
		data = malloc(len);
		assert_int_equal(fread(data, 1, len, in), len);
		fclose(in);
	}
	struct {
		const char *what;
		size_t at;    /* a byte flipped there, or */
		size_t keep;  /* the file cut to this many bytes */
	} cuts[] = {{"a byte of the state", len / 2, len}, {"a byte of the header", 14, len},
		    {"a byte of the tag", len - 1, len},   {"the tag cut off", (size_t)-1, len - 32},
		    {"cut short", (size_t)-1, len / 2},    {"empty", (size_t)-1, 0}};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		FILE *out = fopen(bad, "wb");
		assert_non_null(out);
		if (cuts[i].at != (size_t)-1)
			data[cuts[i].at] ^= 0x20;
		assert_int_equal(fwrite(data, 1, cuts[i].keep, out), cuts[i].keep);
		if (cuts[i].at != (size_t)-1)
			data[cuts[i].at] ^= 0x20;
		fclose(out);
		struct aj_session *r = NULL;
		int rc = aj_session_restore(&f->cfg, &key, bad, &r, NULL, &err);
		if (rc != -EBADMSG)
			fail_msg("%s: restore gave %d (%s), not -EBADMSG", cuts[i].what, rc,
				 rc ? err.message : "a session");
		assert_null(r);
		assert_true(contains(err.message, "refused"));
	}
	free(data);
	/* Another key's file is no file of this key's. */
	struct aj_session *r = NULL;
	assert_int_equal(aj_session_restore(&f->cfg, &other, path, &r, NULL, &err), -EBADMSG);
	assert_null(r);
	/* Missing: said as such. */
	ckpt_path(bad, sizeof bad, "missing");
	assert_int_equal(aj_session_restore(&f->cfg, &key, bad, &r, NULL, &err), -ENOENT);
	assert_true(contains(err.message, "missing"));
	/* The untouched file still restores. */
	if (aj_session_restore(&f->cfg, &key, path, &r, NULL, &err))
		fail_msg("aj_session_restore: %s", err.message);
	track(r);
	cell_expect(r, "print(len(secret))", AJ_STATUS_OK, "1000");
	close_session(r);
	ckpt_dir_remove();
}

/* A key the host does not hold alone is refused; a made one is 0600. */
static void checkpoint_key_rules(void **state)
{
	(void)state;
	ckpt_dir_make();
	char path[128];
	struct aj_checkpoint_key key, again;
	struct aj_error err = {0};
	ckpt_path(path, sizeof path, "k");
	assert_int_equal(aj_checkpoint_key_load(path, false, &key, &err), -ENOENT);
	assert_int_equal(aj_checkpoint_key_load(path, true, &key, &err), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, AJ_CHECKPOINT_KEY_BYTES);
	assert_int_equal(aj_checkpoint_key_load(path, true, &again, &err), 0);
	assert_memory_equal(key.bytes, again.bytes, sizeof key.bytes);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(aj_checkpoint_key_load(path, false, &key, &err), -EPERM);
	assert_true(contains(err.message, "0600"));
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(truncate(path, 16), 0);
	assert_int_equal(aj_checkpoint_key_load(path, false, &key, &err), -EINVAL);
	ckpt_dir_remove();
}

/* n copies, each from the state at the fork, each its own: a change in
 * one is in no other, nor in the original; every copy counts as a session
 * and nothing is left once all are closed. */
static void fork_copies_are_independent(void **state)
{
	struct fixture *f = *state;
	int fds = count_open_fds();
	struct aj_session *s = open_session(&f->cfg);
	ckpt_setup(s);
	struct aj_session *copies[3] = {0};
	struct aj_checkpoint_info info;
	struct aj_error err = {0};
	if (aj_session_fork(s, 3, copies, &info, &err))
		fail_msg("aj_session_fork: %s", err.message);
	assert_int_equal(info.files, 1);
	for (int i = 0; i < 3; i++)
		track(copies[i]);
	for (int i = 0; i < 3; i++) {
		assert_non_null(copies[i]);
		assert_string_not_equal(aj_session_id(copies[i]), aj_session_id(s));
		char code[160];
		snprintf(code, sizeof code,
			 "x.append(%d)\nopen('data/deep/a.txt', 'a').write('%d')\nprint('copy', x)", i,
			 i);
		char want[32];
		snprintf(want, sizeof want, "copy [1, 2, %d]", i);
		cell_expect(copies[i], code, AJ_STATUS_OK, want);
	}
	for (int i = 0; i < 3; i++) {
		char want[48];
		snprintf(want, sizeof want, "[1, 2, %d] kept\n%d", i, i);
		cell_expect(copies[i], "print(x, open('data/deep/a.txt').read())", AJ_STATUS_OK,
			    want);
	}
	/* The original is as it was at the fork, and goes on. */
	ckpt_check(s);
	assert_int_equal(aj_session_fork(s, 0, copies, NULL, &err), -EINVAL);
	assert_int_equal(aj_session_fork(s, AJ_MAX_FORK + 1, copies, NULL, &err), -EINVAL);
	for (int i = 0; i < 3; i++)
		close_session(copies[i]);
	close_session(s);
	assert_int_equal(count_open_fds(), fds);
}

/* A fork that cannot open all its copies opens none. */
static void fork_all_or_none(void **state)
{
	struct fixture *f = *state;
	struct aj_config cfg = f->cfg;
	cfg.session.max_sessions = 2;
	struct aj_session *s = open_session(&cfg);
	cell_expect(s, "v = 1\nprint('ok')", AJ_STATUS_OK, "ok");
	struct aj_session *copies[2] = {0};
	struct aj_error err = {0};
	/* The original and two copies are three: one past max_sessions. */
	assert_int_equal(aj_session_fork(s, 2, copies, NULL, &err), -EMFILE);
	assert_null(copies[0]);
	assert_null(copies[1]);
	/* One fits, and with it the limit is reached again. */
	if (aj_session_fork(s, 1, copies, NULL, &err))
		fail_msg("aj_session_fork: %s", err.message);
	track(copies[0]);
	cell_expect(copies[0], "print(v)", AJ_STATUS_OK, "1");
	close_session(copies[0]);
	close_session(s);
}

/* A pause frees the sandbox and keeps the state; the next call brings it
 * back as it was, and so does aj_session_resume. */
static void pause_resume_keeps_state(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	ckpt_setup(s);
	struct aj_error err = {0};
	struct aj_checkpoint_info info;
	if (aj_session_pause(s, &info, &err))
		fail_msg("aj_session_pause: %s", err.message);
	assert_true(aj_session_paused(s));
	assert_null(aj_session_closed_reason(s));
	assert_int_equal(aj_session_pause(s, NULL, &err), -EALREADY);
	/* The next call resumes it. */
	ckpt_check(s);
	assert_false(aj_session_paused(s));
	/* Again, by resume, with what changed since. */
	if (aj_session_pause(s, NULL, &err))
		fail_msg("aj_session_pause: %s", err.message);
	assert_int_equal(aj_session_resume(s, &err), 0);
	assert_false(aj_session_paused(s));
	cell_expect(s, "print(x, f(1))", AJ_STATUS_OK, "[1, 2, 9] 4");
	assert_int_equal(aj_session_resume(s, &err), 0); /* not paused: nothing to do */
	/* Closed while paused: nothing left, and the handle says so. */
	if (aj_session_pause(s, NULL, &err))
		fail_msg("aj_session_pause: %s", err.message);
	close_session(s);
}

/* A paused session's checkpoint is made from its pause, asleep: it stays
 * paused (no sandbox spent to wake it), and the checkpoint and the
 * session each come back whole. */
static void checkpoint_of_a_paused_session(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = open_session(&f->cfg);
	ckpt_setup(s);
	struct aj_error err = {0};
	if (aj_session_pause(s, NULL, &err))
		fail_msg("aj_session_pause: %s", err.message);
	ckpt_dir_make();
	struct aj_checkpoint_key key;
	char path[128];
	ckpt_key(&key, "key");
	ckpt_path(path, sizeof path, "c");
	struct aj_checkpoint_info info;
	if (aj_session_checkpoint(s, &key, path, &info, &err))
		fail_msg("aj_session_checkpoint: %s", err.message);
	assert_true(aj_session_paused(s));
	assert_true(info.bytes > 0 && info.files >= 1);
	struct aj_session *r = NULL;
	if (aj_session_restore(&f->cfg, &key, path, &r, NULL, &err))
		fail_msg("aj_session_restore: %s", err.message);
	ckpt_check(r);
	close_session(r);
	ckpt_check(s);
	close_session(s);
	ckpt_dir_remove();
}

/* The host's view of the workspace (tier_ops.session_workspace) never
 * follows a link the program made: here the program moves its workspace
 * to DECOY and leaves a symlink to it at /tmp/work. Followed from the
 * host, that absolute link would name the host's own DECOY, which holds a
 * file of the host's; resolved as the kernel is told to (in the sandbox's
 * root, no link followed), the view is refused and the state crosses
 * through the interpreter instead: the checkpoint is the sandbox's, and
 * the host's file is neither read nor touched. */
static void checkpoint_never_follows_the_programs_links(void **state)
{
	struct fixture *f = *state;
	char decoy[64], host_file[96], cell[512];
	snprintf(decoy, sizeof decoy, "/tmp/aj-ckpt-decoy-%d", (int)getpid());
	snprintf(host_file, sizeof host_file, "%s/.agentjail-state", decoy);
	assert_true(mkdir(decoy, 0700) == 0 || errno == EEXIST);
	FILE *hf = fopen(host_file, "w");
	assert_non_null(hf);
	fputs("the host's, never a checkpoint's", hf);
	fclose(hf);
	struct aj_session *s = open_session(&f->cfg);
	snprintf(cell, sizeof cell,
		 "import os\nkept = 'in the sandbox'\nos.chdir('/')\n"
		 "os.rename('/tmp/work', '%s')\nos.symlink('%s', '/tmp/work')\n"
		 "os.chdir('/tmp/work')\nprint('moved')\n",
		 decoy, decoy);
	cell_expect(s, cell, AJ_STATUS_OK, "moved");
	ckpt_dir_make();
	struct aj_checkpoint_key key;
	char path[128];
	ckpt_key(&key, "key");
	ckpt_path(path, sizeof path, "c");
	struct aj_error err = {0};
	unsigned long direct = session_state_direct_moves();
	int rc = aj_session_checkpoint(s, &key, path, NULL, &err);
	assert_int_equal(session_state_direct_moves(), direct);
	close_session(s);
	/* The interpreter's own reader may refuse a workspace that is a link
	 * (ENOTDIR, named); a host read of the wrong file would be another
	 * error (the state's size not the file's) or a checkpoint of it. */
	if (rc && rc != -ENOTDIR)
		fail_msg("aj_session_checkpoint: %s", err.message);
	struct aj_session *r = NULL;
	if (!rc && aj_session_restore(&f->cfg, &key, path, &r, NULL, &err))
		fail_msg("aj_session_restore: %s", err.message);
	if (!rc) {
		cell_expect(r, "print(kept)", AJ_STATUS_OK, "in the sandbox");
		close_session(r);
	}
	char back[128] = {0};
	hf = fopen(host_file, "r");
	assert_non_null(hf);
	assert_non_null(fgets(back, sizeof back, hf));
	fclose(hf);
	assert_string_equal(back, "the host's, never a checkpoint's");
	unlink(host_file);
	rmdir(decoy);
	ckpt_dir_remove();
}

/* pause_keep_sec: where the tier can freeze (container and gvisor: the
 * sandbox's cgroup; docker: the engine's pause; microvm: QEMU stopped;
 * not the process tier, which has no cgroup), a pause keeps
 * the sandbox frozen and the next call thaws it — its threads and
 * processes too, which no state file carries; once the window passes the
 * frozen sandbox is ended and the next call rebuilds from the file, as on
 * every other tier at once. */
static void pause_keep_freezes_then_frees(void **state)
{
	struct fixture *f = *state;
	bool can = f->cfg.tier != AJ_TIER_PROCESS;
	static const char ticker[] =
		"import threading, time\nbeat = [0]\ndef tick():\n    while True:\n"
		"        beat[0] += 1\n        time.sleep(0.005)\n"
		"threading.Thread(target=tick, daemon=True).start()\nprint('ticking')\n";
	f->cfg.session.pause_keep_sec = 600;
	struct aj_session *s = open_session(&f->cfg);
	ckpt_setup(s);
	cell_expect(s, ticker, AJ_STATUS_OK, "ticking");
	struct aj_error err = {0};
	unsigned long thawed = session_thaws();
	if (aj_session_pause(s, NULL, &err))
		fail_msg("aj_session_pause: %s", err.message);
	assert_true(aj_session_paused(s));
	assert_int_equal(session_frozen(s), can);
	ckpt_check(s);
	assert_int_equal(session_thaws() - thawed, can ? 1 : 0);
	/* Thawed, the ticker thread is there; rebuilt, only the main one. */
	cell_expect(s, "print('threads', threading.active_count())", AJ_STATUS_OK,
		    can ? "threads 2" : "threads 1");
	close_session(s);

	/* A short window: the reaper ends the frozen sandbox (memory freed)
	 * and the next call rebuilds it from the state file. */
	f->cfg.session.pause_keep_sec = 0.2;
	s = open_session(&f->cfg);
	ckpt_setup(s);
	cell_expect(s, ticker, AJ_STATUS_OK, "ticking");
	if (aj_session_pause(s, NULL, &err))
		fail_msg("aj_session_pause: %s", err.message);
	for (int i = 0; i < 6000 && session_frozen(s); i++)
		usleep(10000);
	assert_false(session_frozen(s));
	assert_true(aj_session_paused(s));
	thawed = session_thaws();
	ckpt_check(s);
	assert_int_equal(session_thaws(), thawed);
	cell_expect(s, "print('threads', threading.active_count())", AJ_STATUS_OK, "threads 1");
	close_session(s);
}

/* With idle_pause, the idle timeout pauses the session instead of closing
 * it: the next call resumes it, as it was, and says so. */
static void idle_pauses_a_session(void **state)
{
	struct fixture *f = *state;
	struct aj_config cfg = f->cfg;
	cfg.session.idle_sec = 1;
	cfg.session.idle_pause = true;
	struct aj_session *s = open_session(&cfg);
	cell_expect(s, "kept = 'across the pause'\nprint('ok')", AJ_STATUS_OK, "ok");
	/* The reaper looks each second; 120 s only catches one that never does. */
	for (int i = 0; i < 1200 && !aj_session_paused(s); i++)
		usleep(100000);
	assert_true(aj_session_paused(s));
	assert_null(aj_session_closed_reason(s));
	struct aj_result r;
	cell(s, &r, "print(kept)");
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "across the pause\n");
	if (!r.message || !contains(r.message, "paused while idle and resumed"))
		fail_msg("message: %s", r.message ? r.message : "(none)");
	aj_result_free(&r);
	/* Told once: the call after it has no such note. */
	cell(s, &r, "print(kept)");
	assert_null(r.message);
	aj_result_free(&r);
	close_session(s);
}

/* What cannot be written (a generator, a socket) is named and left out;
 * the rest is carried; background commands and JavaScript are named too. */
static void checkpoint_names_what_it_left(void **state)
{
	struct fixture *f = *state;
	ckpt_dir_make();
	struct aj_checkpoint_key key;
	ckpt_key(&key, "key");
	char path[128];
	ckpt_path(path, sizeof path, "c");
	struct aj_session *s = open_session(&f->cfg);
	cell_expect(s, "gen = (i for i in range(3))\nkept = {'a': 1}\nprint('ok')", AJ_STATUS_OK,
		    "ok");
	struct aj_exec x = {.command = "sleep 30"};
	uint32_t pid = 0;
	struct aj_error err = {0};
	if (aj_session_spawn(s, &x, false, &pid, &err))
		fail_msg("aj_session_spawn: %s", err.message);
	struct aj_checkpoint_info info;
	if (aj_session_checkpoint(s, &key, path, &info, &err))
		fail_msg("aj_session_checkpoint: %s", err.message);
	assert_int_equal(info.left_out, 1);
	if (!contains(info.note, "variable gen not carried (TypeError") ||
	    !contains(info.note, "background commands not carried"))
		fail_msg("note: %s", info.note);
	char spid[16];
	snprintf(spid, sizeof spid, "%u", pid);
	assert_true(contains(info.note, spid));
	close_session(s);
	struct aj_session *r = NULL;
	if (aj_session_restore(&f->cfg, &key, path, &r, &info, &err))
		fail_msg("aj_session_restore: %s", err.message);
	track(r);
	assert_int_equal(info.left_out, 1);
	assert_true(contains(info.note, "gen"));
	cell_expect(r, "print(kept, 'gen' in globals())", AJ_STATUS_OK, "{'a': 1} False");
	close_session(r);
	ckpt_dir_remove();
}

/* The limits are the restoring config's: a checkpoint made under a wide
 * wall clock restored under a narrow one keeps the narrow one. */
static void restore_runs_under_todays_limits(void **state)
{
	struct fixture *f = *state;
	struct aj_checkpoint_key key;
	char path[128];
	ckpt_made_of(&f->cfg, "import time\nprint('ok')", "ok", &key, path, sizeof path);
	struct aj_error err = {0};
	struct aj_config narrow = f->cfg;
	narrow.limits.output_kb = 4;
	struct aj_session *r = NULL;
	if (aj_session_restore(&narrow, &key, path, &r, NULL, &err))
		fail_msg("aj_session_restore: %s", err.message);
	track(r);
	struct aj_result res;
	cell(r, &res, "print('x' * 100000)");
	assert_status(&res, AJ_STATUS_OUTPUT_LIMIT);
	aj_result_free(&res);
	close_session(r);
	ckpt_dir_remove();
}

#define CHECKPOINT_TABLE                                                                     \
	SESSION_TEST(checkpoint_restore_keeps_state), SESSION_TEST(checkpoint_restores_twice_alike), \
	SESSION_TEST(checkpoint_tampered_refused), SESSION_TEST(checkpoint_key_rules),         \
	SESSION_TEST(fork_copies_are_independent), SESSION_TEST(fork_all_or_none),             \
	SESSION_TEST(pause_resume_keeps_state), SESSION_TEST(checkpoint_of_a_paused_session),   \
	SESSION_TEST(checkpoint_names_what_it_left),   \
	SESSION_TEST(checkpoint_never_follows_the_programs_links),   \
	SESSION_TEST(pause_keep_freezes_then_frees),   \
	SESSION_TEST(restore_runs_under_todays_limits), SESSION_TEST(idle_pauses_a_session)

#endif
