/* The hostile programs as a shell line and as JavaScript (see languages.h).
 * Each is the Python program's attack, made with what the language has:
 * the shell's own loop, dd, cat, curl, yes; Node's Buffer, fs, net and
 * child_process. The placeholders sit inside '...' literals, as in the
 * Python table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "languages.h"

struct hostile_variant {
	enum hostile_id program;
	const char *shell;
	const char *tools; /* what the shell line runs besides /bin/sh */
	const char *js;
};

static const struct hostile_variant variants[] = {
	{HOSTILE_CPU_LOOP,
	 /* A count, not `while :`: bounded where no limit held it, yet far
	  * past any CPU or wall limit (dash counts some millions a second). */
	 "i=0; while [ $i -lt 1000000000 ]; do i=$((i + 1)); done", "",
	 "const end = Date.now() + 600000;\nwhile (Date.now() < end) {}\n"},
	{HOSTILE_MEMORY_512MB,
	 /* dd's one 512 MiB buffer, every page of it written by the read
	  * (a shell's own variable filled by a command substitution was too
	  * slow under TCG and gVisor's ptrace: it met the wall clock first). */
	 "dd if=/dev/zero of=/dev/null bs=536870912 count=1 && echo allocated", "dd",
	 "const b = Buffer.alloc(512 * 1024 * 1024);\n"
	 "for (let i = 0; i < b.length; i += 4096) b[i] = 1;\n"
	 "console.log('allocated', b.length);\n"},
	{HOSTILE_FORK_FLAT,
	 /* `:(){ :|:& };:` with a depth: each call forks two copies of
	  * itself in a pipeline, 511 calls and a sleep each at most, each
	  * alive a second (dash runs `:` as its builtin, hence the name). The
	  * first shell forks once, then only waits, so a fork refused deep
	  * in the tree cannot end it: it finishes (exit 0). */
	 "bomb() { if [ $1 -gt 0 ]; then bomb $(($1 - 1)) | bomb $(($1 - 1)) & fi; sleep 1; "
	 "wait; }; bomb 8 & wait; exit 0",
	 "sleep",
	 /* child_process, 200 children of the first process, each alive a
	  * second; a refused spawn is an 'error' event, not the end. */
	 "const { spawn } = require('child_process');\n"
	 "let made = 0;\n"
	 "for (let i = 0; i < 200; i++) {\n"
	 "  const c = spawn('sleep', ['1'], { stdio: 'ignore' });\n"
	 "  c.on('error', () => {});\n"
	 "  if (c.pid) made++;\n"
	 "}\n"
	 "console.log('made', made);\n"},
	{HOSTILE_DISK_FILL_EVERYWHERE,
	 "for d in . /tmp /var/tmp /dev/shm '{CWD}'; do "
	 "dd if=/dev/zero of=\"$d\"/'aj-attack-{TOKEN}' bs=1048576 count=2048 2>/dev/null; "
	 "done; exit 0",
	 "dd",
	 "const fs = require('fs');\n"
	 "const mb = Buffer.alloc(1048576, 120);\n"
	 "for (const d of ['.', '/tmp', '/var/tmp', '/dev/shm', '{CWD}']) {\n"
	 "  let fd = -1;\n"
	 "  try {\n"
	 "    fd = fs.openSync(d + '/aj-attack-{TOKEN}', 'w');\n"
	 "    for (let i = 0; i < 2048; i++) fs.writeSync(fd, mb);\n"
	 "  } catch (e) {}\n"
	 "  if (fd >= 0) fs.closeSync(fd);\n"
	 "}\n"},
	{HOSTILE_READ_SECRETS,
	 "env; for p in '{SECRET}' /proc/1/environ /etc/shadow /root/.bash_history; do "
	 "cat \"$p\"; done; exit 0",
	 "env cat",
	 "const fs = require('fs');\n"
	 "console.log(JSON.stringify(process.env));\n"
	 "for (const p of ['{SECRET}', '/proc/1/environ', '/etc/shadow', '/root/.bash_history']) {\n"
	 "  try {\n"
	 "    console.log(p, fs.readFileSync(p, 'latin1'));\n"
	 "  } catch (e) {\n"
	 "    console.log(p, e.code);\n"
	 "  }\n"
	 "}\n"},
	{HOSTILE_NETWORK_HOST,
	 "for a in '127.0.0.1:{PORT}' 'localhost:{PORT}' '{HOSTIP}:{HOSTPORT}'; do "
	 "curl -sS -m 2 \"http://$a/\"'{TOKEN}'; done; exit 0",
	 "curl",
	 "const net = require('net');\n"
	 "for (const [host, port] of [['127.0.0.1', {PORT}], ['localhost', {PORT}],\n"
	 "                            ['{HOSTIP}', {HOSTPORT}]]) {\n"
	 "  const s = net.connect({ host, port });\n"
	 "  s.setTimeout(2000, () => s.destroy());\n"
	 "  s.on('connect', () => { s.write('{TOKEN}'); console.log('CONNECTED', host); s.destroy(); });\n"
	 "  s.on('error', (e) => console.log(host, e.code));\n"
	 "}\n"},
	{HOSTILE_SLEEP_FOREVER, "echo going to sleep; sleep 3600", "sleep",
	 "console.log('going to sleep');\nsetTimeout(() => {}, 3600000);\n"},
	{HOSTILE_OUTPUT_FLOOD,
	 /* 1 GiB if nothing stopped it. */
	 "yes | head -c 1073741824", "yes head",
	 /* As fast as stdout takes it: a loop of writes without waiting
	  * would only queue them in node's own memory. */
	 "const chunk = 'x'.repeat(65536);\n"
	 "let i = 0;\n"
	 "function more() {\n"
	 "  while (i++ < 16384)\n"
	 "    if (!process.stdout.write(chunk)) return process.stdout.once('drain', more);\n"
	 "}\n"
	 "more();\n"},
};

static const char *const lang_names[HOSTILE_LANG_COUNT] = {"python", "shell", "js"};

const char *hostile_lang_name(enum hostile_lang lang)
{
	return (unsigned)lang < HOSTILE_LANG_COUNT ? lang_names[lang] : "?";
}

int hostile_lang_parse(const char *name, enum hostile_lang *out)
{
	static const struct {
		const char *name;
		enum hostile_lang lang;
	} names[] = {{"python", HOSTILE_PYTHON}, {"shell", HOSTILE_SHELL}, {"sh", HOSTILE_SHELL},
		     {"js", HOSTILE_JS},         {"javascript", HOSTILE_JS}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(name, names[i].name)) {
			*out = names[i].lang;
			return 0;
		}
	return -1;
}

const char *hostile_code(enum hostile_id id, enum hostile_lang lang, const char **tools)
{
	if (tools)
		*tools = "";
	if (lang == HOSTILE_PYTHON)
		return (unsigned)id < HOSTILE_COUNT ? hostile_programs[id].code : NULL;
	for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
		if (variants[i].program != id)
			continue;
		if (tools && lang == HOSTILE_SHELL)
			*tools = variants[i].tools;
		return lang == HOSTILE_SHELL ? variants[i].shell : lang == HOSTILE_JS ? variants[i].js : NULL;
	}
	return NULL;
}

char *hostile_shell_program(const char *line, const char *tools)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	if (!m)
		return NULL;
	fputs("import os, shutil, signal, sys\n"
	      "for c in ['/bin/sh'] + '", m);
	hostile_put_literal(m, tools, HOSTILE_PYTHON);
	fputs("'.split():\n"
	      "    if not shutil.which(c):\n"
	      "        sys.stderr.write('shell: %s is not in this sandbox\\'s image\\n' % c)\n"
	      "        sys.exit(127)\n"
	      "signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n"
	      "signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
	      "sys.stdout.flush()\n"
	      "os.execv('/bin/sh', ['sh', '-c', '", m);
	hostile_put_literal(m, line, HOSTILE_PYTHON);
	fputs("'])\n", m);
	if (fclose(m)) {
		free(out);
		return NULL;
	}
	return out;
}
