/* The agentjail command as a user meets it: flags, errors, exit codes, and
 * the one-JSON-object contract. Runs the sanitizer build of the binary. */
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"
#include "src/cli/measure.h"

static const char *cli_path(void)
{
	const char *p = getenv("AJ_CLI");
	return p ? p : "build/test/agentjail";
}

struct cli_result {
	int exit_code;
	char out[1 << 16];
	char err[1 << 16];
};

/* How long the command may stay silent. */
static int cli_silence_ms = 60000;

/* Starts agentjail with args, stdin_text on its stdin (NULL: none), its
 * stdout on *out and its stderr on *err (err NULL: discarded), both read
 * as they come. */
static pid_t cli_start(const char *stdin_text, const char *const *args, int *out, int *err)
{
	int in[2], o[2], e[2] = {-1, -1};
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(o), 0);
	if (err)
		assert_int_equal(pipe(e), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(o[1], 1);
		dup2(err ? e[1] : open("/dev/null", O_WRONLY), 2);
		close_range(3, ~0U, 0);
		char *argv[80];
		int n = 0;
		argv[n++] = (char *)cli_path();
		for (; args[n - 1] && n < 79; n++)
			argv[n] = (char *)args[n - 1];
		argv[n] = NULL;
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(o[1]);
	if (err) {
		close(e[1]);
		*err = e[0];
	}
	if (stdin_text)
		assert_int_equal(write(in[1], stdin_text, strlen(stdin_text)),
				 (ssize_t)strlen(stdin_text));
	close(in[1]);
	*out = o[0];
	return pid;
}

/* Runs agentjail with args, feeding stdin_text (may be NULL), and collects
 * both streams and the exit code. */
static void cli(struct cli_result *r, const char *stdin_text, const char *const *args)
{
	int out, err;
	pid_t pid = cli_start(stdin_text, args, &out, &err);
	size_t no = 0, ne = 0;
	struct pollfd p[2] = {{.fd = out, .events = POLLIN}, {.fd = err, .events = POLLIN}};
	while (p[0].fd >= 0 || p[1].fd >= 0) {
		assert_true(poll(p, 2, cli_silence_ms) > 0);
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			char *buf = i ? r->err : r->out;
			size_t *len = i ? &ne : &no;
			char tmp[4096];
			ssize_t n = read(p[i].fd, tmp, sizeof tmp);
			if (n <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
				continue;
			}
			size_t take = (size_t)n;
			if (*len + take >= sizeof r->out - 1)
				take = sizeof r->out - 1 - *len;
			memcpy(buf + *len, tmp, take);
			*len += take;
		}
	}
	r->out[no] = '\0';
	r->err[ne] = '\0';
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws));
	r->exit_code = WEXITSTATUS(ws);
}

static char program_dir[] = "/tmp/aj-cli-test-XXXXXX";

static const char *program(const char *name, const char *text, size_t len)
{
	static char path[200];
	snprintf(path, sizeof path, "%s/%s", program_dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

#define PROGRAM(name, text) program(name, text, sizeof(text) - 1)
#define CLI(r, in, ...) cli(r, in, (const char *const[]){__VA_ARGS__, NULL})

static struct cli_result res;

static json_t *one_json_object(const char *s)
{
	json_error_t e;
	/* Exactly one object and a newline: nothing else on stdout. */
	json_t *j = json_loads(s, JSON_ALLOW_NUL, &e);
	if (!j || !json_is_object(j))
		fail_msg("stdout is not one JSON object (%s): %s", e.text, s);
	return j;
}

static void usage_errors_exit_2(void **state)
{
	(void)state;
	const char *hello = PROGRAM("hello.py", "print('hi')\n");
	CLI(&res, NULL, "run", "--memory", "abc", hello);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "--memory: expected a whole number, got 'abc'"));

	CLI(&res, NULL, "run", "--memory", "1", hello);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "memory: 1 is out of range"));

	CLI(&res, NULL, "run", "--timeout", "soon", hello);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "--timeout"));

	CLI(&res, NULL, "run", "--tier", "vm", hello);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "unknown tier 'vm'"));

	CLI(&res, NULL, "run", "--frobnicate", hello);
	assert_int_equal(res.exit_code, 2);

	CLI(&res, NULL, "run");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "which program"));

	CLI(&res, NULL, "launch");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "unknown command 'launch'"));
}

static void bad_programs_exit_2(void **state)
{
	(void)state;
	CLI(&res, NULL, "run", "/nonexistent/prog.py");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "/nonexistent/prog.py: cannot open: No such file"));

	CLI(&res, NULL, "run", PROGRAM("empty.py", ""));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "is empty"));

	CLI(&res, NULL, "run", PROGRAM("nul.py", "print(1)\0\n"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "NUL byte"));

	CLI(&res, "", "run", "-");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "stdin is empty"));

	CLI(&res, NULL, "run", program_dir);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "cannot read"));
}

static void passes_output_and_exit_code_through(void **state)
{
	(void)state;
	CLI(&res, NULL, "run",
	    PROGRAM("io.py", "import sys\nprint('to out')\nprint('to err', file=sys.stderr)\n"
			     "sys.exit(7)\n"));
	assert_int_equal(res.exit_code, 7);
	assert_string_equal(res.out, "to out\n");
	assert_string_equal(res.err, "to err\n");

	CLI(&res, "print(6 * 7)\n", "run", "-");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "42\n");
	assert_string_equal(res.err, "");
}

static void json_contract(void **state)
{
	(void)state;
	CLI(&res, NULL, "run", "--json",
	    PROGRAM("j.py", "import sys\nsys.stdout.buffer.write(b'ok \\xff\\n')\nsys.exit(3)\n"));
	assert_int_equal(res.exit_code, 3);
	json_t *j = one_json_object(res.out);
	assert_string_equal(json_string_value(json_object_get(j, "tier")), "process");
	assert_string_equal(json_string_value(json_object_get(j, "status")), "error");
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 3);
	assert_true(json_is_null(json_object_get(j, "signal")));
	/* Invalid UTF-8 arrives as U+FFFD, inside valid JSON. */
	assert_string_equal(json_string_value(json_object_get(j, "stdout")), "ok \xEF\xBF\xBD\n");
	const char *keys[] = {"stderr", "stdout_truncated", "stderr_truncated", "wall_ms",
			      "cpu_ms", "memory_kb", "message"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		assert_non_null(json_object_get(j, keys[i]));
	assert_int_equal(json_object_size(j), 12);
	json_decref(j);
	assert_string_equal(res.err, "");
}

static void exit_codes_for_endings(void **state)
{
	(void)state;
	CLI(&res, NULL, "run", "--timeout", "0.5", PROGRAM("sleep.py", "import time\ntime.sleep(60)\n"));
	assert_int_equal(res.exit_code, 124);
	assert_true(contains(res.err, "agentjail: timeout: wall-clock limit of 0.5 s"));

	CLI(&res, NULL, "run", "--output", "4",
	    PROGRAM("flood.py", "for i in range(10**6):\n    print('x' * 100)\n"));
	assert_int_equal(res.exit_code, 128 + SIGKILL);
	assert_int_equal(strlen(res.out), 4096);
	assert_true(contains(res.err, "output_limit"));

	CLI(&res, NULL, "run",
	    PROGRAM("segv.py", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"));
	assert_int_equal(res.exit_code, 128 + SIGSEGV);
	assert_true(contains(res.err, "killed: killed by signal 11"));

	/* An uncaught MemoryError: status memory (docs/design.md rule S7),
	 * and Python's own exit code, passed through. */
	CLI(&res, NULL, "run", "--json", "--memory", "64",
	    PROGRAM("mem.py", "x = bytearray(128 * 1024 * 1024)\n"));
	assert_int_equal(res.exit_code, 1);
	json_t *j = one_json_object(res.out);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "memory");
	json_decref(j);
}

/* agentjail exec: one command in a fresh sandbox, its output passed
 * through and its exit code agentjail's, as run's contract says; argv
 * with no shell between, --shell, --stdin and --env; usage errors 2. */
static void exec_one_command(void **state)
{
	(void)state;
	CLI(&res, NULL, "exec", "--", "python3", "-c", "import sys; print(sys.argv[1:]); sys.exit(5)",
	    "a b", "$X");
	assert_int_equal(res.exit_code, 5);
	assert_string_equal(res.out, "['a b', '$X']\n");
	CLI(&res, "line in\n", "exec", "--stdin", "--env", "X=1", "--shell",
	    "read l; echo \"$l $X\" >&2; exit 0");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.err, "line in 1\n");
	CLI(&res, NULL, "exec", "--json", "--timeout", "0.5", "--", "python3", "-c",
	    "import time; time.sleep(60)");
	assert_int_equal(res.exit_code, 124);
	json_t *j = one_json_object(res.out);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "timeout");
	json_decref(j);
	CLI(&res, NULL, "exec");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "which command?"));
	CLI(&res, NULL, "exec", "--shell", "true", "--", "true");
	assert_int_equal(res.exit_code, 2);
	CLI(&res, NULL, "exec", "--env", "LD_PRELOAD=/x.so", "--", "true");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "LD_PRELOAD"));
}

#define NO_ENGINE "/nonexistent/docker.sock"
#define NO_ENGINE_MESSAGE                                                              \
	"docker: cannot reach the engine at " NO_ENGINE ": connect: ENOENT (is dockerd " \
	"running?)"

/* A tier that cannot run here (docker, with no engine behind the socket):
 * exit 125, and the reason, as text or as the contract's JSON. */
static void unavailable_tier_is_a_sandbox_error(void **state)
{
	(void)state;
	CLI(&res, NULL, "run", "--tier", "docker", "--docker-socket", NO_ENGINE,
	    PROGRAM("h.py", "print(1)\n"));
	assert_int_equal(res.exit_code, 125);
	assert_true(contains(res.err, NO_ENGINE_MESSAGE));

	CLI(&res, NULL, "run", "--json", "--tier", "docker", "--docker-socket", NO_ENGINE,
	    PROGRAM("h.py", "print(1)\n"));
	assert_int_equal(res.exit_code, 125);
	json_t *j = one_json_object(res.out);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "sandbox_error");
	assert_string_equal(json_string_value(json_object_get(j, "message")), NO_ENGINE_MESSAGE);
	json_decref(j);
}

static void caller_environment_does_not_leak(void **state)
{
	(void)state;
	char token[40];
	make_token(token, sizeof token);
	setenv("OPENAI_API_KEY", token, 1);
	CLI(&res, NULL, "run", PROGRAM("env.py", "import os\nprint(dict(os.environ))\n"));
	unsetenv("OPENAI_API_KEY");
	assert_int_equal(res.exit_code, 0);
	assert_false(contains(res.out, token));
	assert_false(contains(res.out, "OPENAI_API_KEY"));
}

static void check_lists_every_tier(void **state)
{
	(void)state;
	/* An images directory with no image in it: the image tiers must say
	 * which image is missing and how to make it. */
	setenv("AGENTJAIL_IMAGES", program_dir, 1);
	setenv("DOCKER_HOST", "unix://" NO_ENGINE, 1);
	CLI(&res, NULL, "check");
	unsetenv("DOCKER_HOST");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.out, "process    available"));
	assert_true(contains(res.out, "container  unavailable: image: no image 'default'"));
	assert_true(contains(res.out, "agentjail image build"));
	assert_true(contains(res.out, "microvm    unavailable: image: no image 'default'"));
	assert_true(contains(res.out, "docker     unavailable: " NO_ENGINE_MESSAGE));

	CLI(&res, NULL, "check", "--python", "/nonexistent/python3");
	unsetenv("AGENTJAIL_IMAGES");
	assert_int_equal(res.exit_code, 1);
	assert_true(contains(res.out, "process    unavailable: python: /nonexistent/python3: ENOENT"));
}

static void image_lifecycle(void **state)
{
	(void)state;
	char dir[300];
	/* A relative directory is refused, naming it (it was once ignored:
	 * the image went to the default directory). */
	setenv("AGENTJAIL_IMAGES", "build/images-relative", 1);
	CLI(&res, NULL, "image", "build", "--from-host", "--name", "rel");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "AGENTJAIL_IMAGES must be an absolute path (it is "
				      "'build/images-relative')"));
	CLI(&res, "print(1)\n", "run", "--tier", "container", "--image", "rel", "-");
	assert_int_equal(res.exit_code, 125);
	assert_true(contains(res.err, "AGENTJAIL_IMAGES must be an absolute path"));
	snprintf(dir, sizeof dir, "%s/rel", AJ_DEFAULT_IMAGES_DIR);
	assert_false(path_exists(dir));
	snprintf(dir, sizeof dir, "%s/images", program_dir);
	setenv("AGENTJAIL_IMAGES", dir, 1);

	CLI(&res, NULL, "image", "build", "--name", "../escape");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "not a valid image name"));
	CLI(&res, NULL, "image", "build", "--packages", "python3-numpy;reboot");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "not a comma-separated list of Debian package names"));
	CLI(&res, NULL, "image", "build", "--preset", "nosuch");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "unknown preset 'nosuch'"));
	/* From the host, packages come from its own installation. */
	CLI(&res, NULL, "image", "build", "--from-host", "--name", "pk", "--packages",
	    "agentjail-no-such-package");
	assert_int_equal(res.exit_code, 1);
	assert_true(contains(res.err, "agentjail-no-such-package is not installed on this host"));
	CLI(&res, NULL, "image", "rm", "nosuch");
	assert_int_equal(res.exit_code, 1);
	assert_true(contains(res.err, "no image 'nosuch'"));

	/* Built whole, listed, left alone when asked again, removed. */
	CLI(&res, NULL, "image", "build", "--from-host", "--name", "t1");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.out, "built image 't1'"));
	char path[400];
	snprintf(path, sizeof path, "%s/t1/root/usr/bin/python3", dir);
	assert_true(path_exists(path));
	CLI(&res, NULL, "image", "list");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.out, "t1 "));
	assert_true(contains(res.out, "host"));
	CLI(&res, NULL, "image", "build", "--from-host", "--name", "t1");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.out, "already built"));
	CLI(&res, "import os\nprint(sorted(os.listdir('/')))\n", "run", "--tier", "container",
	    "--image", "t1", "-");
	/* It runs as root (probed); as another user it is refused, saying so. */
	if (geteuid() == 0) {
		assert_int_equal(res.exit_code, 0);
		assert_true(contains(res.out, "'proc', 'sys', 'tmp', 'usr'"));
		/* A preload the image lacks (docs/warm.md's numpy,pandas on the
		 * default image) blames the image, naming the one that has it,
		 * never the tier. */
		CLI(&res, "", "mcp", "--tier", "container", "--image", "t1", "--preload",
		    "json,agentjail_no_such_module");
		assert_int_equal(res.exit_code, 125);
		if (!contains(res.err, "mcp: cannot open the sandbox: warm: preload: import "
				       "agentjail_no_such_module: ModuleNotFoundError") ||
		    !contains(res.err, "image 't1' does not have it") ||
		    !contains(res.err, "--image datascience") || contains(res.err, "cannot run here"))
			fail_msg("mcp with a preload the image lacks: %s", res.err);
	} else {
		assert_int_equal(res.exit_code, 125);
		assert_true(contains(res.err, "needs root"));
	}
	CLI(&res, NULL, "image", "rm", "t1");
	assert_int_equal(res.exit_code, 0);
	snprintf(path, sizeof path, "%s/t1", dir);
	assert_false(path_exists(path));
	/* Nothing half-built or removed is left beside the images. */
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		assert_false(de->d_name[0] == '.' && strcmp(de->d_name, ".") &&
			     strcmp(de->d_name, "..") && strcmp(de->d_name, ".lock"));
	closedir(d);
	unsetenv("AGENTJAIL_IMAGES");
}

static void mcp_config_errors_name_the_problem(void **state)
{
	(void)state;
	CLI(&res, NULL, "mcp", "--config",
	    PROGRAM("c1.json", "{\"tier\": \"process\", \"memory\": \"lots\"}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "memory: expected a whole number"));
	CLI(&res, NULL, "mcp", "--config", PROGRAM("c2.json", "{\"tier\": \"process\",}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "c2.json:1:"));
	CLI(&res, NULL, "mcp", "--config", PROGRAM("c3.json", "{\"tier\": \"vm\"}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "unknown tier 'vm'"));
	CLI(&res, NULL, "mcp", "--config", PROGRAM("c4.json", "{\"concurrency\": 0}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "concurrency: 0 is out of range"));
	CLI(&res, NULL, "mcp", "--config", "/nonexistent.json");
	assert_int_equal(res.exit_code, 2);
	/* warm and preload: the shapes here, the names and tiers by
	 * aj_config_validate; an array is the comma-separated list. */
	CLI(&res, NULL, "mcp", "--config", PROGRAM("w1.json", "{\"warm\": \"yes\"}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "w1.json: warm: expected true or false"));
	CLI(&res, NULL, "mcp", "--config", PROGRAM("w2.json", "{\"warm\": true, \"preload\": 3}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "preload: expected a string (\"numpy,pandas\") or an array "
				      "of strings"));
	CLI(&res, NULL, "mcp", "--config",
	    PROGRAM("w3.json", "{\"warm\": true, \"preload\": [\"numpy\", 1]}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "preload: item 2 of the array is not a string"));
	CLI(&res, NULL, "mcp", "--config",
	    PROGRAM("w4.json", "{\"tier\": \"docker\", \"warm\": true}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "mcp: warm: the docker tier has no warm mode (the process and "
				      "container tiers have)"));
	CLI(&res, NULL, "mcp", "--config", PROGRAM("w5.json", "{\"preload\": \"numpy\"}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "mcp: preload: needs warm mode (--warm)"));
	CLI(&res, NULL, "mcp", "--config",
	    PROGRAM("w6.json", "{\"warm\": true, \"preload\": [\"numpy\", \"num py\"]}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "mcp: preload: 'num py' is not a module name"));
	CLI(&res, NULL, "mcp", "--config",
	    PROGRAM("w7.json", "{\"warm\": true, \"preload\": [\"numpy\", \"os.path\", \"\"]}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "mcp: preload: 'numpy,os.path,' has an empty module name"));
	/* A flag overrides the file's tier; the file's warm stays. */
	CLI(&res, NULL, "mcp", "--config", PROGRAM("w8.json", "{\"warm\": true}"), "--tier",
	    "gvisor");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "warm: the gvisor tier has no warm mode"));
	/* A flag overrides the file; a tier that cannot run is refused at start. */
	CLI(&res, "", "mcp", "--config",
	    PROGRAM("c5.json", "{\"tier\": \"process\", \"docker_socket\": \"" NO_ENGINE "\"}"),
	    "--tier", "docker");
	assert_int_equal(res.exit_code, 125);
	assert_true(contains(res.err, "the docker tier cannot run here"));
	/* Nothing but protocol on stdout, even then. */
	assert_string_equal(res.out, "");
}

/* --ro-bind on run (several), and ro_bind in an MCP config file with the
 * flags adding to it; shapes and paths are refused naming the problem. */
/* --env on run (several), and env in an MCP config file with the flags
 * adding to it; names that would weaken the sandbox are refused, exit 2,
 * naming why, the same words from the flag and from the file. */
static void env_flags_and_config_key(void **state)
{
	(void)state;
	CLI(&res, "import os; print(os.environ['A'], os.environ['B'], os.environ['HOME'])\n", "run",
	    "--env", "A=one two", "--env", "B=x=y", "-");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "one two x=y /tmp/work\n");
	CLI(&res, "", "run", "--env", "LD_PRELOAD=/tmp/work/x.so", "-");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "agentjail: env: LD_PRELOAD may not be set: the dynamic loader"));
	CLI(&res, "", "run", "--json", "--env", "http_proxy=x", "-");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.out, "egress owns the proxy variables"));
	CLI(&res, "", "run", "--env", "NOVALUE", "-");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "env: 'NOVALUE' is not NAME=VALUE"));
	CLI(&res, "", "mcp", "--config", PROGRAM("env1.json", "{\"env\": {\"PYTHONHOME\": \"/x\"}}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "mcp: env: PYTHONHOME may not be set: it changes what Python"));
	CLI(&res, "", "mcp", "--config", PROGRAM("env2.json", "{\"env\": [\"A=1\"]}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "env: expected an object of strings"));
	CLI(&res, "", "mcp", "--config", PROGRAM("env3.json", "{\"env\": {\"A\": \"1\"}}"),
	    "--env", "A=2");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "env: A is set twice"));
}

static void ro_bind_flags_and_config_key(void **state)
{
	(void)state;
	char dir[64], file[96], bind1[128], bind2[128];
	snprintf(dir, sizeof dir, "/var/tmp/agentjail-cli-robind-%d", (int)getpid());
	snprintf(file, sizeof file, "%s/data.txt", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	FILE *fh = fopen(file, "we");
	assert_non_null(fh);
	fputs("from the host\n", fh);
	fclose(fh);
	chmod(file, 0644);
	snprintf(bind1, sizeof bind1, "%s:/mnt/a", dir);
	snprintf(bind2, sizeof bind2, "%s:/mnt/b.txt", file);
	CLI(&res, "print(open('/mnt/a/data.txt').read(), open('/mnt/b.txt').read(), end='')\n",
	    "run", "--ro-bind", bind1, "--ro-bind", bind2, "-");
	int run_exit = res.exit_code;
	bool run_out = contains(res.out, "from the host\n from the host\n");
	CLI(&res, "", "run", "--ro-bind", "/var/tmp:/proc/x", "-");
	int bad_exit = res.exit_code;
	bool bad_err = contains(res.err, "ro_bind: '/var/tmp:/proc/x': SANDBOX is under /proc");
	CLI(&res, "", "run", "--tier", "microvm", "--ro-bind", dir, "-");
	int vm_exit = res.exit_code;
	bool vm_err = contains(res.err, "ro_bind: the microvm tier shows no host path");
	unlink(file);
	rmdir(dir);
	assert_int_equal(run_exit, 0);
	assert_true(run_out);
	assert_int_equal(bad_exit, 2);
	assert_true(bad_err);
	assert_int_equal(vm_exit, 2);
	assert_true(vm_err);

	CLI(&res, NULL, "mcp", "--config", PROGRAM("r1.json", "{\"ro_bind\": 3}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "r1.json: ro_bind: expected a string (\"HOST[:SANDBOX]\") or "
				      "an array of strings"));
	CLI(&res, NULL, "mcp", "--config", PROGRAM("r2.json", "{\"ro_bind\": [\"/srv\", 1]}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "ro_bind: item 2 of the array is not a string"));
	CLI(&res, NULL, "mcp", "--config", PROGRAM("r3.json", "{\"ro_bind\": \"srv\"}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "mcp: ro-bind: 'srv': HOST is not an absolute path"));
	/* The flags add to the file's list: the two go to one place. */
	CLI(&res, NULL, "mcp", "--config", PROGRAM("r4.json", "{\"ro_bind\": [\"/srv:/mnt/x\"]}"),
	    "--ro-bind", "/usr:/mnt/x");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "ro-bind: '/srv:/mnt/x' and '/usr:/mnt/x' both go to /mnt/x"));
	/* A HOST that is not there is refused at start, named. */
	CLI(&res, "", "mcp", "--ro-bind", "/nonexistent-agentjail:/mnt/x");
	assert_int_equal(res.exit_code, 125);
	assert_true(contains(res.err, "/nonexistent-agentjail: No such file or directory"));
	assert_string_equal(res.out, "");
}

/* agentjail mcp --sessions: the session limits are checked at start, and a
 * bad one is named as the user wrote it (flag or key). */
static void mcp_session_options_name_the_problem(void **state)
{
	(void)state;
	CLI(&res, "", "mcp", "--sessions", "--transfer-mb", "0");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "transfer-mb: 0 is out of range (1 to 256 MiB)"));
	CLI(&res, "", "mcp", "--sessions", "--session-idle", "0.5");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "session-idle: 0.5 is out of range"));
	CLI(&res, "", "mcp", "--sessions", "--session-lifetime", "soon");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "--session-lifetime: expected seconds, got 'soon'"));
	CLI(&res, "", "mcp", "--max-sessions", "0");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "max-sessions: 0 is out of range"));
	CLI(&res, "", "mcp", "--config", PROGRAM("s1.json", "{\"sessions\": \"yes\"}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "sessions: expected true or false"));
	CLI(&res, "", "mcp", "--config",
	    PROGRAM("s2.json", "{\"sessions\": true, \"transfer_mb\": 300}"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "transfer-mb: 300 is out of range"));
	/* One-shot runs have no session to bound. */
	CLI(&res, NULL, "run", "--session-idle", "5", "-");
	assert_int_equal(res.exit_code, 2);
	/* Valid: the server starts (a session is opened and closed to check),
	 * and at EOF it ends cleanly with nothing on stdout. */
	CLI(&res, "", "mcp", "--sessions", "--tier", "process", "--session-idle", "60",
	    "--session-lifetime", "600", "--max-sessions", "2", "--transfer-mb", "4");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "");
	CLI(&res, NULL, "mcp", "--help");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.out, "--sessions"));
	assert_true(contains(res.out, "--transfer-mb N"));
}

/* --tools and the file's "tools": the tools that run something, named;
 * run_command only with sessions (it runs in the connection's session). */
static void mcp_tools_name_the_problem(void **state)
{
	(void)state;
	static const struct {
		const char *file; /* the config's JSON, or NULL: flags only */
		const char *flag; /* --tools' value, or NULL */
		bool sessions;
		const char *words;
	} cases[] = {
		{NULL, "run_python,run_command", false, "mcp: --tools: run_command runs in the "
							"connection's session: it needs sessions"},
		{NULL, "run_python,,run_command", true, "--tools: unknown tool ''"},
		{NULL, "run_python,upload_file", true, "unknown tool 'upload_file' (run_python, "
						       "run_command; the file tools come with "
						       "sessions)"},
		{"{\"tools\": 3}", NULL, true, "tools: expected a string (\"run_python,"
						 "run_command\") or an array of strings"},
		{"{\"tools\": [\"run_python\", 1]}", NULL, true,
		 "tools: item 2 of the array is not a string"},
		{"{\"tools\": []}", NULL, true, "tools: names no tool"},
		{"{\"tools\": [\"run_command\"]}", NULL, false, "it needs sessions"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char name[32];
		snprintf(name, sizeof name, "t%zu.json", i);
		const char *json = cases[i].file ? cases[i].file : "{}";
		const char *file = program(name, json, strlen(json));
		const char *argv[8] = {"mcp", "--config", file}, **a = argv + 3;
		if (cases[i].sessions)
			*a++ = "--sessions";
		if (cases[i].flag)
			*a++ = "--tools", *a++ = cases[i].flag;
		cli(&res, "", argv);
		assert_int_equal(res.exit_code, 2);
		if (!contains(res.err, cases[i].words))
			fail_msg("case %zu: %s", i, res.err);
	}
	/* Valid, from the file or the flag: the server starts (a session opened
	 * and closed to check, in this run's uid range) and ends at EOF. */
	const char *base = getenv("AJ_TEST_UID_BASE");
	char json[300];
	snprintf(json, sizeof json,
		 "{\"sessions\": true, \"tools\": [\"run_python\", \"run_command\"], "
		 "\"uid_base\": %s, \"state_dir\": \"/run/agentjail-test-%s\"}",
		 base && *base ? base : "2100000000", base && *base ? base : "cli");
	const char *file = program("t9.json", json, strlen(json));
	CLI(&res, "", "mcp", "--config", file, "--tier", "process");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.err, "(run_python, run_command and the file tools)"));
	CLI(&res, "", "mcp", "--config", file, "--tools", "run_command");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.err, "(run_command and the file tools)"));
}

/* The MCP config's egress keys: the CLI's options under the file's names,
 * refused in the same words, and the flags add to the file's rules. */
static void mcp_config_egress_keys(void **state)
{
	(void)state;
	static const struct {
		const char *file, *words;
	} bad[] = {
		{"{\"allow_hosts\": [\"pypi.org\", \"bad host\"]}", "mcp: allow-host: host rule 'bad host'"},
		{"{\"allow_cidrs\": \"10.0.0.0/40\"}", "mcp: allow-cidr: CIDR rule '10.0.0.0/40'"},
		{"{\"allow_hosts\": [3]}", "allow_hosts: item 1 of the array is not a string"},
		{"{\"allow_cidrs\": {}}", "allow_cidrs: expected a string (a rule) or an array"},
		{"{\"egress_out_mb\": 0}", "mcp: egress-out-mb: 0 is out of range"},
		{"{\"egress_connections\": 0}", "mcp: egress-connections: 0 is out of range"},
		{"{\"egress_kbps\": -1}", "egress_kbps: -1 is out of range"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CLI(&res, "", "mcp", "--config", program("e.json", bad[i].file, strlen(bad[i].file)));
		assert_int_equal(res.exit_code, 2);
		if (!contains(res.err, bad[i].words))
			fail_msg("%s: '%s' does not say '%s'", bad[i].file, res.err, bad[i].words);
	}
	/* The file's 32 rules and one flag: past the cap, so the flag was
	 * added to the file's list rather than replacing it. */
	char full[64 * AJ_MAX_EGRESS_RULES] = "{\"allow_cidrs\": [";
	for (int i = 0; i < AJ_MAX_EGRESS_RULES; i++)
		snprintf(full + strlen(full), sizeof full - strlen(full), "%s\"10.%d.0.0/16\"",
			 i ? ", " : "", i);
	strcat(full, "]}");
	const char *file = program("e8.json", full, strlen(full));
	CLI(&res, "", "mcp", "--config", file, "--allow-cidr", "10.99.0.0/16");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "--allow-cidr: more than 32 rules"));
	CLI(&res, "", "mcp", "--config", PROGRAM("e9.json", "{\"allow_hosts\": \"pypi.org\"}"),
	    "--allow-host", "a b");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "mcp: allow-host: host rule 'a b'"));
}

/* --secrets FILE (docs/secrets.md): the credentials come from a file, read
 * whole and checked before anything starts; every mistake is a usage error
 * naming the file and the problem, and no value ever reaches stdout or
 * stderr, refused or run. */
#define SECRET_VALUE "s3cr3t-VALUE-never-printed"

/* A file of text at name in the test's directory, with mode; its path in
 * out. */
static void secrets_file(char *out, size_t n, const char *name, const char *text, mode_t mode)
{
	snprintf(out, n, "%s", program(name, text, strlen(text)));
	assert_int_equal(chmod(out, mode), 0);
}

static void no_value_in_output(const char *what)
{
	if (contains(res.out, "s3cr3t") || contains(res.err, "s3cr3t"))
		fail_msg("%s: a secret's value was printed:\n%s\n%s", what, res.out, res.err);
}

static void secrets_file_names_the_problem(void **state)
{
	(void)state;
	const char *hello = PROGRAM("secrets.py", "print('hi')\n");
	char hi[200], good[200], path[200], want[400];
	snprintf(hi, sizeof hi, "%s", hello);
	secrets_file(good, sizeof good, "good.json",
		     "[{\"name\": \"GH\", \"value\": \"" SECRET_VALUE "\", \"hosts\": "
		     "[\"example.org:443\"], \"header\": \"Authorization\", \"format\": "
		     "\"Bearer {value}\"},\n {\"name\": \"TOKEN\", \"value\": \"" SECRET_VALUE
		     "2\", \"hosts\": [\"example.org\"], \"placeholder\": true, \"requests\": "
		     "[\"GET /repos/acme/\"]}]\n",
		     0600);
	/* Accepted: the run needs no network, so it ends as it would without. */
	CLI(&res, NULL, "run", "--allow-host", "example.org", "--secrets", good, hi);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "hi\n");
	no_value_in_output("a good file");
	CLI(&res, NULL, "run", "--json", "--allow-host", "example.org", "--secrets", good, hi);
	assert_int_equal(res.exit_code, 0);
	json_decref(one_json_object(res.out));
	no_value_in_output("a good file, --json");

	static const struct {
		const char *text;
		mode_t mode;
		const char *words;
	} bad[] = {
		{"[{\"name\": \"GH\", \"value\": \"" SECRET_VALUE "\"", 0600, ": not JSON (line "},
		{"{\"name\": \"GH\"}", 0600, ": must be a JSON array of secrets"},
		{"[{\"name\": \"GH\", \"value\": \"" SECRET_VALUE "\", \"header\": \"X-Token\"}]", 0600,
		 ": GH: \"hosts\" must be a non-empty array of host rules"},
		{"[{\"name\": \"gh-token\", \"value\": \"" SECRET_VALUE "\", \"hosts\": "
		 "[\"example.org\"], \"header\": \"X-Token\"}]",
		 0600, ": item 1: name 'gh-token' must be 1 to"},
		{"[{\"name\": \"GH\", \"value\": \"s3cr3t\\nVALUE\", \"hosts\": [\"example.org\"], "
		 "\"header\": \"X-Token\"}]",
		 0600, ": GH: the value holds a control character"},
		{"[{\"name\": \"GH\", \"value\": \"" SECRET_VALUE "\", \"hosts\": [\"example.org\"], "
		 "\"header\": \"Host\"}]",
		 0600, ": GH: header 'Host' is the proxy's own"},
		{"[]", 0644, " is readable by other users (mode 0644); chmod 600 it"},
		{"[]", 0620, " is writable or executable by other users (mode 0620); chmod 600 it"},
		{"", 0600, " is empty (a secrets file is a JSON array: [] for none)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char name[32];
		snprintf(name, sizeof name, "bad%zu.json", i);
		secrets_file(path, sizeof path, name, bad[i].text, bad[i].mode);
		snprintf(want, sizeof want, "--secrets: %s%s", path, bad[i].words);
		CLI(&res, NULL, "run", "--allow-host", "example.org", "--secrets", path, hi);
		assert_int_equal(res.exit_code, 2);
		if (!contains(res.err, want))
			fail_msg("case %zu: '%s' does not say '%s'", i, res.err, want);
		assert_string_equal(res.out, "");
		no_value_in_output(bad[i].words);
		/* --json: the same words as one object on stdout, and no value. */
		CLI(&res, NULL, "run", "--json", "--allow-host", "example.org", "--secrets", path, hi);
		assert_int_equal(res.exit_code, 2);
		assert_true(contains(res.out, "\"status\":\"usage_error\""));
		no_value_in_output(bad[i].words);
	}
	/* Not a file: missing, a directory. */
	CLI(&res, NULL, "run", "--allow-host", "example.org", "--secrets",
	    "/nonexistent-agentjail-secrets.json", hi);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "--secrets: /nonexistent-agentjail-secrets.json: cannot open: "
				      "No such file or directory"));
	CLI(&res, NULL, "run", "--allow-host", "example.org", "--secrets", "/tmp", hi);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "--secrets: /tmp is not a regular file"));
	/* Twice: the first file's secrets would be dropped without a word. */
	CLI(&res, NULL, "run", "--allow-host", "example.org", "--secrets", good, "--secrets", good,
	    hi);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "--secrets: given twice; put every secret in one file"));
	/* Secrets without a rule to reach their hosts have nowhere to go. */
	CLI(&res, NULL, "run", "--secrets", good, hi);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "secrets: no egress rule lets the program reach a host"));
	no_value_in_output("no rule");
	/* Every command that takes the egress options reads the file alike. */
	secrets_file(path, sizeof path, "open.json", "[]", 0644);
	snprintf(want, sizeof want, "--secrets: %s is readable by other users", path);
	CLI(&res, NULL, "repl", "--secrets", path);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, want));
	CLI(&res, "", "mcp", "--secrets", path);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, want));
	CLI(&res, NULL, "worker", "--queue", "redis://127.0.0.1:1", "--secrets", path);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, want));
	static const char *const commands[] = {"run", "repl", "mcp", "serve", "worker"};
	for (size_t i = 0; i < 5; i++) {
		CLI(&res, NULL, commands[i], "--help");
		assert_int_equal(res.exit_code, 0);
		assert_true(contains(res.out, "--secrets FILE"));
		assert_true(contains(res.out, "--egress-ca FILE"));
	}
}

/* --egress-ca FILE: the CAs the proxy trusts upstream, checked as
 * --trust-ca is: a file that is not PEM certificates is refused, named. */
static void egress_ca_names_the_problem(void **state)
{
	(void)state;
	char hi[200];
	snprintf(hi, sizeof hi, "%s", PROGRAM("egress_ca.py", "print('hi')\n"));
	CLI(&res, NULL, "run", "--allow-host", "example.org", "--egress-ca", hi, hi);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "egress_ca:"));
	assert_true(contains(res.err, "is not PEM"));
	char want[300];
	snprintf(want, sizeof want, "repl: egress-ca: %s is not PEM", hi);
	CLI(&res, NULL, "repl", "--egress-ca", hi);
	assert_int_equal(res.exit_code, 2);
	if (!contains(res.err, want))
		fail_msg("'%s' does not say '%s'", res.err, want);
	snprintf(want, sizeof want, "mcp: egress-ca: %s is not PEM", hi);
	CLI(&res, "", "mcp", "--egress-ca", hi);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, want));
	CLI(&res, NULL, "run", "--egress-ca", "/nonexistent-agentjail-ca.pem", hi);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "/nonexistent-agentjail-ca.pem"));
}

/* agentjail mcp --config with json refuses to start, saying want and no
 * secret's value. */
static void mcp_refuses(const char *json, const char *want)
{
	CLI(&res, "", "mcp", "--config", program("s.json", json, strlen(json)));
	assert_int_equal(res.exit_code, 2);
	if (!contains(res.err, want))
		fail_msg("%s: '%s' does not say '%s'", json, res.err, want);
	no_value_in_output(want);
}

/* The MCP config's "secrets" (the path of a secrets file, never the
 * secrets inline: the config file is not held to its owner) and
 * "egress_ca" keys. */
static void mcp_config_secrets(void **state)
{
	(void)state;
	char good[200], open[200], ca[200], json[1024], want[400];
	secrets_file(good, sizeof good, "mcp-secrets.json",
		     "[{\"name\": \"GH\", \"value\": \"" SECRET_VALUE "\", \"hosts\": "
		     "[\"example.org\"], \"header\": \"Authorization\"}]",
		     0600);
	secrets_file(open, sizeof open, "mcp-open.json", "[]", 0644);
	secrets_file(ca, sizeof ca, "mcp-ca.pem", "not a certificate\n", 0644);
	mcp_refuses("{\"allow_hosts\": \"example.org\", \"secrets\": [{\"name\": \"GH\", "
		    "\"value\": \"" SECRET_VALUE "\", \"hosts\": [\"example.org\"], \"header\": "
		    "\"X\"}]}",
		    "secrets: expected a string: the path of a secrets file, never the secrets "
		    "themselves");
	snprintf(json, sizeof json, "{\"allow_hosts\": \"example.org\", \"secrets\": \"%s\"}",
		 open);
	snprintf(want, sizeof want,
		 "secrets: %s is readable by other users (mode 0644); chmod 600 it", open);
	mcp_refuses(json, want);
	snprintf(json, sizeof json, "{\"secrets\": \"%s\"}", good);
	mcp_refuses(json, "mcp: secrets: no egress rule lets the program reach a host");
	snprintf(json, sizeof json, "{\"egress_ca\": \"%s\"}", ca);
	snprintf(want, sizeof want, "mcp: egress-ca: %s is not PEM", ca);
	mcp_refuses(json, want);
	/* Good: the server starts and ends at EOF, saying no value. */
	const char *base = getenv("AJ_TEST_UID_BASE");
	snprintf(json, sizeof json,
		 "{\"allow_hosts\": [\"example.org\"], \"secrets\": \"%s\", \"uid_base\": %s, "
		 "\"state_dir\": \"/run/agentjail-test-%s\"}",
		 good, base && *base ? base : "2100000000", base && *base ? base : "cli");
	const char *file = program("s-good.json", json, strlen(json));
	CLI(&res, "", "mcp", "--config", file);
	assert_int_equal(res.exit_code, 0);
	no_value_in_output("mcp with secrets");
	/* --secrets replaces the file's, as a flag overrides the file. */
	CLI(&res, "", "mcp", "--config", file, "--secrets", open);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "is readable by other users"));
}

/* The deployer's egress options, on every command that runs code: a bad
 * rule or cap is a usage error naming the option as typed and what is
 * wrong, found before anything starts; each --help lists them. */
static void egress_options_name_the_problem(void **state)
{
	(void)state;
	const char *hello = PROGRAM("egress.py", "print('hi')\n");
	static const struct {
		const char *option, *value, *words;
	} bad[] = {
		{"--allow-host", "pypi.org:99999", "allow-host: host rule 'pypi.org:99999': port 99999"},
		{"--allow-cidr", "10.0.0.0/33", "allow-cidr: CIDR rule '10.0.0.0/33'"},
		{"--allow-host", "10.0.0.1", "--allow-cidr"},
		{"--egress-out-mb", "0", "egress-out-mb: 0 is out of range"},
		{"--egress-in-mb", "0", "egress-in-mb: 0 is out of range"},
		{"--egress-connections", "0", "egress-connections: 0 is out of range"},
		{"--egress-kbps", "fast", "--egress-kbps: expected a whole number, got 'fast'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CLI(&res, NULL, "run", bad[i].option, bad[i].value, hello);
		assert_int_equal(res.exit_code, 2);
		if (!contains(res.err, bad[i].words))
			fail_msg("%s %s: '%s' does not say '%s'", bad[i].option, bad[i].value, res.err,
				 bad[i].words);
		assert_string_equal(res.out, "");
	}
	CLI(&res, NULL, "run", "--json", "--allow-host", "a b.org", hello);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.out, "\"status\":\"usage_error\""));
	assert_true(contains(res.out, "allow-host: host rule 'a b.org'"));
	/* Repeatable, up to the cap: one past it is named. */
	const char *many[2 * AJ_MAX_EGRESS_RULES + 6] = {"run"};
	size_t k = 1;
	for (int i = 0; i <= AJ_MAX_EGRESS_RULES; i++) {
		many[k++] = "--allow-cidr";
		many[k++] = "10.0.0.0/8";
	}
	many[k++] = hello;
	many[k] = NULL;
	cli(&res, NULL, many);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "--allow-cidr: more than 32 rules"));

	CLI(&res, NULL, "repl", "--allow-cidr", "fd00::/129");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "repl: allow-cidr: CIDR rule 'fd00::/129'"));
	CLI(&res, "", "mcp", "--allow-host", "*.*.org");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "mcp: allow-host: host rule '*.*.org'"));
	CLI(&res, NULL, "serve", "--egress-in-mb", "2000000");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "serve: egress-in-mb: 2000000 is out of range"));
	CLI(&res, NULL, "worker", "--queue", "redis://127.0.0.1:1", "--allow-cidr", "x");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "worker: allow-cidr: CIDR rule 'x'"));
	static const char *const commands[] = {"run", "repl", "mcp", "serve", "worker"};
	for (size_t i = 0; i < 5; i++) {
		CLI(&res, NULL, commands[i], "--help");
		assert_int_equal(res.exit_code, 0);
		assert_true(contains(res.out, "--allow-host PATTERN[:PORTS]"));
		assert_true(contains(res.out, "--allow-cidr CIDR[:PORTS]"));
		assert_true(contains(res.out, "--egress-kbps N"));
	}
}

/* --warm and --preload, on every command that runs one tier: a missing
 * list, a bad module name and a tier without warm mode are usage errors
 * naming the problem, found before anything starts. */
static void one_tier_options_name_the_problem(void **state)
{
	(void)state;
	const char *hello = PROGRAM("warm.py", "print('hi')\n");
	const char *no_warm =
		"warm: the docker tier has no warm mode (the process and container tiers have)";
	CLI(&res, NULL, "run", "--preload");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "option '--preload' requires an argument"));
	CLI(&res, NULL, "run", "--preload", "num py", hello);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "preload: 'num py' is not a module name"));
	CLI(&res, NULL, "run", "--warm", "--tier", "docker", hello);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, no_warm));
	assert_string_equal(res.out, "");
	/* --preload asks for warm mode: the tier is what is refused, not a
	 * preload without --warm. */
	CLI(&res, NULL, "run", "--tier", "docker", "--preload", "numpy", hello);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, no_warm));

	CLI(&res, "", "mcp", "--preload");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "option '--preload' requires an argument"));
	CLI(&res, "", "mcp", "--tier", "docker", "--warm");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "mcp: warm: the docker tier has no warm mode"));
	CLI(&res, "", "mcp", "--preload", "numpy,,pandas");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "preload: 'numpy,,pandas' has an empty module name"));
	assert_string_equal(res.out, "");

	CLI(&res, NULL, "serve", "--preload");
	assert_int_equal(res.exit_code, 2);
	CLI(&res, NULL, "serve", "--tier", "docker", "--warm");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "serve: warm: the docker tier has no warm mode"));
	CLI(&res, NULL, "serve", "--preload", "os;import sys");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "serve: preload: 'os;import sys' is not a module name"));
	CLI(&res, NULL, "worker", "--queue", "redis://127.0.0.1:1", "--tier", "docker", "--warm");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "worker: warm: the docker tier has no warm mode"));
	CLI(&res, NULL, "worker", "--queue", "redis://127.0.0.1:1", "--preload", "1x");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "worker: preload: '1x' is not a module name"));

	/* Each of them lists the options; bench, which makes a column of
	 * every tier, takes neither (it measures warm mode itself), and
	 * attack takes --warm for the tiers that have it (attack_warm). */
	static const char *const commands[] = {"run", "mcp", "serve", "worker"};
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		CLI(&res, NULL, commands[i], "--warm", "--preload", "numpy,os.path", "--help");
		assert_int_equal(res.exit_code, 0);
		assert_true(contains(res.out, "--warm "));
		assert_true(contains(res.out, "--preload LIST"));
	}
	CLI(&res, NULL, "attack", "--preload", "numpy");
	assert_int_equal(res.exit_code, 2);
	CLI(&res, NULL, "bench", "--preload", "numpy");
	assert_int_equal(res.exit_code, 2);
}

/* agentjail attack --warm: the seed's six in the process tier's warm mode,
 * all held, and the column says warm. */
static void attack_warm(void **state)
{
	(void)state;
	CLI(&res, NULL, "attack", "--quick", "--json", "--warm", "--tier", "process", "--lang",
	    "python");
	assert_int_equal(res.exit_code, 0);
	json_t *j = one_json_object(res.out);
	assert_true(json_is_true(json_object_get(j, "all_held")));
	assert_int_equal(json_integer_value(json_object_get(j, "tested")), 6);
	json_t *t = json_array_get(json_object_get(j, "tiers"), 0);
	assert_true(json_is_true(json_object_get(t, "warm")));
	json_decref(j);
}

/* agentjail attack in its quick mode: the seed's six in the process tier,
 * all held, as one JSON object; a tier that cannot run is n/a, not a pass
 * or a failure. */
static void attack_quick(void **state)
{
	(void)state;
	CLI(&res, NULL, "attack", "--quick", "--json", "--tier", "process", "--tier", "docker",
	    "--docker-socket", NO_ENGINE, "--lang", "python");
	assert_int_equal(res.exit_code, 0);
	json_t *j = one_json_object(res.out);
	assert_true(json_is_true(json_object_get(j, "all_held")));
	assert_int_equal(json_integer_value(json_object_get(j, "tested")), 6);
	json_t *tiers = json_object_get(j, "tiers");
	assert_int_equal(json_array_size(tiers), 2);
	json_t *p = json_array_get(tiers, 0);
	assert_string_equal(json_string_value(json_object_get(p, "tier")), "process");
	assert_int_equal(json_integer_value(json_object_get(p, "held")), 6);
	json_t *results = json_object_get(p, "results");
	assert_int_equal(json_array_size(results), 6);
	const char *seed[] = {"cpu loop", "512 MB allocation", "fork bomb", "disk fill",
			      "host secret read", "network call"};
	for (size_t i = 0; i < 6; i++) {
		json_t *r = json_array_get(results, i);
		assert_string_equal(json_string_value(json_object_get(r, "attack")), seed[i]);
		assert_string_equal(json_string_value(json_object_get(r, "verdict")), "held");
	}
	json_t *d = json_array_get(tiers, 1);
	assert_false(json_is_true(json_object_get(d, "available")));
	assert_true(contains(json_string_value(json_object_get(d, "unavailable_reason")),
			     "cannot reach the engine"));
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(d, "results"), 0), "verdict")),
			    "n/a");
	json_decref(j);
	CLI(&res, NULL, "attack", "--tier", "vm");
	assert_int_equal(res.exit_code, 2);
	/* Nothing testable is no pass. */
	CLI(&res, NULL, "attack", "--quick", "--tier", "docker", "--docker-socket", NO_ENGINE);
	assert_int_equal(res.exit_code, 1);
	assert_true(contains(res.out, "nothing could be tested here"));
}

/* agentjail attack --lang shell,js: the core attacks as shell lines and as
 * JavaScript in the process and container tiers, each cell saying its
 * language, every one held; n/a only where the image lacks a tool the
 * line needs (the test image has no curl), with that reason. */
static void attack_shell_and_js(void **state)
{
	(void)state;
	char cwd[PATH_MAX], image[PATH_MAX + 32];
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(image, sizeof image, "%s/build/images/test", cwd);
	cli_silence_ms = 600000;
	CLI(&res, NULL, "attack", "--json", "--tier", "process", "--tier", "container", "--image",
	    image, "--lang", "shell,js");
	cli_silence_ms = 60000;
	assert_int_equal(res.exit_code, 0);
	json_t *j = one_json_object(res.out);
	assert_true(json_is_true(json_object_get(j, "all_held")));
	json_t *tiers = json_object_get(j, "tiers");
	assert_int_equal(json_array_size(tiers), 2);
	for (size_t t = 0; t < 2; t++) {
		json_t *tier = json_array_get(tiers, t);
		assert_true(json_is_true(json_object_get(tier, "available")));
		json_t *results = json_object_get(tier, "results");
		int shell = 0, js = 0;
		for (size_t i = 0; i < json_array_size(results); i++) {
			json_t *r = json_array_get(results, i);
			const char *lang = json_string_value(json_object_get(r, "language"));
			const char *v = json_string_value(json_object_get(r, "verdict"));
			const char *why = json_string_value(json_object_get(r, "reason"));
			shell += !strcmp(lang, "shell");
			js += !strcmp(lang, "js");
			/* (The test image carries what every line needs: coreutils,
			 * curl and nodejs, so every cell is judged.) */
			if (strcmp(v, "held"))
				fail_msg("%s, %s, %s: %s (%s)",
					 json_string_value(json_object_get(tier, "tier")), lang,
					 json_string_value(json_object_get(r, "attack")), v, why);
		}
		assert_int_equal(shell, 8);
		assert_int_equal(js, 8);
	}
	json_decref(j);
	CLI(&res, NULL, "attack", "--lang", "python,perl");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "attack: --lang: 'perl' is not a language (python, shell, js)"));
	CLI(&res, NULL, "attack", "--list", "--json");
	assert_int_equal(res.exit_code, 0);
	j = json_loads(res.out, 0, NULL);
	json_t *cpu = json_array_get(j, 0);
	assert_int_equal(json_array_size(json_object_get(cpu, "languages")), 3);
	assert_true(contains(json_string_value(json_object_get(cpu, "js")), "Date.now()"));
	json_decref(j);
}

/* agentjail bench in its quick mode: figures, with the machine, for bare
 * Python and the process tier. Only their presence and shape are checked:
 * no timing is asserted. */
static void bench_quick(void **state)
{
	(void)state;
	CLI(&res, NULL, "bench", "--quick", "--no-peers", "--json", "--tier", "process");
	assert_int_equal(res.exit_code, 0);
	json_t *j = one_json_object(res.out);
	json_t *m = json_object_get(j, "machine");
	assert_true(json_integer_value(json_object_get(m, "cores")) >= 1);
	assert_non_null(json_string_value(json_object_get(m, "python")));
	json_t *rows = json_object_get(j, "rows");
	assert_int_equal(json_array_size(rows), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "row")),
			    "bare python3 -I");
	/* The process tier, then its warm mode. */
	json_t *w = json_array_get(rows, 2);
	assert_string_equal(json_string_value(json_object_get(w, "row")),
			    "agentjail process (warm)");
	assert_int_equal(json_integer_value(json_object_get(w, "runs")), 5);
	assert_true(json_real_value(json_object_get(w, "vs_bare")) > 0);
	/* numpy + pandas: bare, cold and warm on the process tier (the test
	 * machine has both); the container tier was not asked for. */
	json_t *imp = json_object_get(j, "imports_numpy_pandas");
	json_t *ip = json_object_get(imp, "process");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(ip, "cold"), "runs")), 3);
	assert_true(json_real_value(json_object_get(json_object_get(ip, "warm"), "vs_cold")) > 0);
	assert_non_null(json_string_value(
		json_object_get(json_object_get(imp, "container"), "unavailable")));
	json_t *p = json_array_get(rows, 1);
	assert_string_equal(json_string_value(json_object_get(p, "row")), "agentjail process");
	assert_int_equal(json_integer_value(json_object_get(p, "runs")), 5);
	assert_true(json_real_value(json_object_get(p, "median_ms")) > 0);
	/* Five runs cannot give a p95 or p99 that is not just their maximum. */
	assert_true(json_is_null(json_object_get(p, "p95_ms")));
	assert_true(json_is_null(json_object_get(p, "p99_ms")));
	assert_true(json_real_value(json_object_get(p, "vs_bare")) > 0);
	assert_true(json_real_value(json_object_get(p, "runs_per_s_1")) > 0);
	assert_true(json_real_value(json_object_get(p, "runs_per_s_n")) > 0);
	json_decref(j);
	CLI(&res, NULL, "bench", "--runs", "0");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "--runs: expected 1 to 10000"));
}

static void help_is_there(void **state)
{
	(void)state;
	CLI(&res, NULL, "--help");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.out, "run FILE|-"));
	CLI(&res, NULL, "run", "--help");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.out, "--memory MB"));
	assert_true(contains(res.out, "124 on timeout"));
}

/* agentjail repl --json: one request a line, one answer a line. */
static void repl_json_session(void **state)
{
	(void)state;
	CLI(&res,
	    "{\"run\": \"x = 20\"}\n"
	    "{\"run\": \"x * 2 + 2\"}\n"
	    "{\"put\": \"in/a.txt\", \"data\": \"hello\"}\n"
	    "{\"put\": \"in/b.bin\", \"base64\": \"AAEC\"}\n"
	    "{\"run\": \"open('out.txt', 'w').write(open('in/a.txt').read().upper())\"}\n"
	    "{\"get\": \"out.txt\"}\n"
	    "{\"list\": \"in\"}\n"
	    "{\"get\": \"../etc/passwd\"}\n"
	    "{\"put\": \"x\", \"base64\": \"not base64!\"}\n"
	    "[1]\n"
	    "{\"run\": \"import os; os._exit(4)\"}\n"
	    "{\"run\": \"print('x' in dir())\"}\n",
	    "repl", "--json");
	assert_int_equal(res.exit_code, 0);
	const char *want[] = {
		"\"status\":\"ok\"",
		"\"stdout\":\"42\\n\"",
		"{\"ok\":true}",
		"{\"ok\":true}",
		"\"status\":\"ok\"",
		"{\"path\":\"out.txt\",\"base64\":\"SEVMTE8=\"}",
		"{\"entries\":[{\"name\":\"a.txt\",\"type\":\"file\",\"size\":5},"
		"{\"name\":\"b.bin\",\"type\":\"file\",\"size\":3}]}",
		"{\"error\":\"path: ../etc/passwd: '..' is not allowed\"}",
		"\"error\":\"put: give",
		"\"error\":\"request: not a JSON object",
		"\"exit_code\":4",
		"the session's interpreter was restarted",
	};
	char *line = res.out;
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		if (!contains(line, want[i]))
			fail_msg("answer %zu: %s; want %s", i, line, want[i]);
		line = nl + 1;
	}
	assert_string_equal(line, "");
}

/* From a pipe: '# %%' cells and % commands, as a person would script it. */
/* In repl, !LINE is a shell line in the session's sandbox, beside the
 * cells (it ends the cell before it); --json takes {"exec"}. */
static void repl_exec_lines(void **state)
{
	(void)state;
	CLI(&res, "x = 5\n_ = open('f.txt', 'w').write('cell')\n!read l < f.txt; echo \"sh $l\"; exit 3\n"
		  "print(x)\n",
	    "repl");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "sh cell\n5\n"); /* the cell after it kept x */
	CLI(&res, "{\"exec\": [\"python3\", \"-c\", \"print(6 * 7)\"]}\n{\"exec\": 3}\n", "repl",
	    "--json");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.out, "\"stdout\":\"42\\n\""));
	assert_true(contains(res.out, "{\"error\":\"exec: give a command line"));
}

/* %checkpoint FILE writes the session's state; --restore FILE opens a new
 * session from it (its key made on first use under $XDG_STATE_HOME); a
 * key of another user's mode is refused, naming it. */
static void repl_checkpoint_and_restore(void **state)
{
	(void)state;
	char path[300], in[400], key[300];
	snprintf(path, sizeof path, "%s/s.ckpt", program_dir);
	setenv("XDG_STATE_HOME", program_dir, 1);
	snprintf(in, sizeof in, "x = 41\ndef f():\n    return x + 1\n\n%%checkpoint %s\n", path);
	CLI(&res, in, "repl");
	assert_int_equal(res.exit_code, 0);
	if (!contains(res.err, "checkpoint "))
		fail_msg("stderr: %s", res.err);
	CLI(&res, "print(f())\n", "repl", "--restore", path);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "42\n");
	snprintf(key, sizeof key, "%s/agentjail/checkpoint.key", program_dir);
	assert_int_equal(chmod(key, 0644), 0);
	CLI(&res, "print(f())\n", "repl", "--restore", path);
	assert_int_equal(res.exit_code, 125);
	assert_true(contains(res.err, "mode 0600"));
	unsetenv("XDG_STATE_HOME");
}

static void repl_cells_from_a_pipe(void **state)
{
	(void)state;
	char cmd[400];
	snprintf(cmd, sizeof cmd, "%s/local.txt", program_dir);
	FILE *f = fopen(cmd, "w");
	assert_non_null(f);
	fputs("from the host\n", f);
	fclose(f);
	char in[1200];
	snprintf(in, sizeof in,
		 "%%put %s/local.txt notes.txt\n"
		 "total = 0\n"
		 "for i in range(4):\n"
		 "    total += i\n"
		 "# %%%%\n"
		 "print('total', total, open('notes.txt').read().strip())\n"
		 "open('result.txt', 'w').write('done')\n"
		 "%%get result.txt %s/result.txt\n"
		 "%%ls\n"
		 "%%frobnicate\n",
		 program_dir, program_dir);
	CLI(&res, in, "repl");
	assert_int_equal(res.exit_code, 0);
	assert_true(contains(res.out, "total 6 from the host\n"));
	assert_true(contains(res.out, "result.txt"));
	assert_true(contains(res.err, "put notes.txt (14 bytes)"));
	assert_true(contains(res.err, "%frobnicate: unknown command"));
	snprintf(cmd, sizeof cmd, "%s/result.txt", program_dir);
	f = fopen(cmd, "r");
	assert_non_null(f);
	char got[16] = "";
	assert_non_null(fgets(got, sizeof got, f));
	fclose(f);
	assert_string_equal(got, "done");
	CLI(&res, "", "repl", "--timeout", "0");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "timeout"));
	CLI(&res, "", "repl", "extra");
	assert_int_equal(res.exit_code, 2);
}

/* ---- issue 24, item 12: the small cuts of the command line ---- */

/* A file of the repository (the tests run from its top), whole. */
static char *repo_file(const char *path)
{
	static char text[1 << 16];
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	return text;
}

/* One version, AGENTJAIL_VERSION: what --version prints, for agentjail and
 * agentjail-serve (run by agentjail for serve), and what the Python
 * package declares. */
static void version_is_one(void **state)
{
	(void)state;
	CLI(&res, NULL, "--version");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "agentjail " AGENTJAIL_VERSION "\n");
	CLI(&res, NULL, "serve", "--version");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "agentjail-serve " AGENTJAIL_VERSION "\n");
	assert_true(contains(repo_file("python/pyproject.toml"),
			     "\nversion = \"" AGENTJAIL_VERSION "\"\n"));
	assert_true(contains(repo_file("python/agentjail/__init__.py"),
			     "\n__version__ = \"" AGENTJAIL_VERSION "\"\n"));
}

/* agentjail --help names every command, those agentjail-serve runs too,
 * and each one's own --help answers. */
static void help_lists_every_command(void **state)
{
	(void)state;
	static const char *const commands[] = {"run",    "repl",  "check", "image", "mcp",
					       "attack", "bench", "serve", "keys",  "worker"};
	CLI(&res, NULL, "--help");
	assert_int_equal(res.exit_code, 0);
	char help[sizeof res.out];
	snprintf(help, sizeof help, "%s", res.out);
	assert_true(contains(help, "--version"));
	assert_true(contains(help, "agentjail-serve"));
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		char line[64];
		snprintf(line, sizeof line, "\n  %s ", commands[i]);
		if (!contains(help, line))
			fail_msg("agentjail --help does not list %s:\n%s", commands[i], help);
		CLI(&res, NULL, commands[i], "--help");
		if (res.exit_code != 0 || !contains(res.out, "usage: agentjail"))
			fail_msg("agentjail %s --help: exit %d\n%s%s", commands[i], res.exit_code,
				 res.out, res.err);
	}
}

/* Options after FILE, as most commands take them; -- still ends them, so a
 * file whose name starts with '-' can be run. */
static void options_after_the_file(void **state)
{
	(void)state;
	char hello[200];
	snprintf(hello, sizeof hello, "%s", PROGRAM("after.py", "print('after')\n"));
	CLI(&res, NULL, "run", hello, "--timeout", "5", "--memory", "128");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "after\n");

	CLI(&res, NULL, "run", PROGRAM("after2.py", "import time\ntime.sleep(60)\n"), "--timeout",
	    "0.5");
	assert_int_equal(res.exit_code, 124);

	CLI(&res, NULL, "run", "--tier", "process", hello, "--json");
	assert_int_equal(res.exit_code, 0);
	json_t *j = one_json_object(res.out);
	assert_string_equal(json_string_value(json_object_get(j, "stdout")), "after\n");
	json_decref(j);

	CLI(&res, NULL, "run", hello, hello);
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "one program at a time"));

	/* "--dash.py", in the program directory, run from there. */
	char cli_abs[PATH_MAX], cwd[PATH_MAX];
	assert_non_null(realpath(cli_path(), cli_abs));
	assert_non_null(getcwd(cwd, sizeof cwd));
	PROGRAM("--dash.py", "print('dash')\n");
	setenv("AJ_CLI", cli_abs, 1);
	assert_int_equal(chdir(program_dir), 0);
	CLI(&res, NULL, "run", "--timeout", "5", "--", "--dash.py");
	assert_int_equal(chdir(cwd), 0);
	unsetenv("AJ_CLI");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "dash\n");
}

/* The NUL-byte refusal says the whole of why. */
static void nul_byte_message_is_whole(void **state)
{
	(void)state;
	CLI(&res, NULL, "run", PROGRAM("nul2.py", "print(1)\0\n"));
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "nul2.py contains a NUL byte, which Python source cannot "
				      "hold (is it a binary file?)\n"));
}

/* With --json, a usage error is one JSON object on stdout naming the
 * problem, nothing on stderr, exit 2: wherever --json stands. */
static void expect_usage_error_json(const char *want)
{
	assert_int_equal(res.exit_code, 2);
	json_t *j = one_json_object(res.out);
	assert_int_equal(json_object_size(j), 2);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "usage_error");
	const char *m = json_string_value(json_object_get(j, "message"));
	if (!m || !contains(m, want))
		fail_msg("message %s, wanted %s", m ? m : "(none)", want);
	json_decref(j);
	assert_string_equal(res.err, "");
}

static void json_usage_errors_are_json(void **state)
{
	(void)state;
	char hello[200];
	snprintf(hello, sizeof hello, "%s", PROGRAM("hello.py", "print('hi')\n"));
	CLI(&res, NULL, "run", "--json", "--memory", "abc", hello);
	expect_usage_error_json("--memory: expected a whole number, got 'abc'");
	CLI(&res, NULL, "run", "--memory", "abc", hello, "--json");
	expect_usage_error_json("--memory: expected a whole number, got 'abc'");
	CLI(&res, NULL, "run", "--json", "--memory", "1", hello);
	expect_usage_error_json("memory: 1 is out of range");
	CLI(&res, NULL, "run", "--json", "--frobnicate", hello);
	expect_usage_error_json("unrecognized option '--frobnicate'");
	CLI(&res, NULL, "run", "--json", hello, "--timeout");
	expect_usage_error_json("option '--timeout' requires an argument");
	CLI(&res, NULL, "run", "--json");
	expect_usage_error_json("which program");
	CLI(&res, NULL, "run", "--json", hello, hello);
	expect_usage_error_json("one program at a time");
	CLI(&res, NULL, "run", "--json", PROGRAM("nul3.py", "print(1)\0\n"));
	expect_usage_error_json("contains a NUL byte");
	CLI(&res, NULL, "run", "--json", "/nonexistent/prog.py");
	expect_usage_error_json("/nonexistent/prog.py: cannot open");
	CLI(&res, "", "run", "--json", "-");
	expect_usage_error_json("stdin is empty");
	/* Bytes that are not UTF-8 come back inside valid JSON. */
	CLI(&res, NULL, "run", "--json", "--tier", "\xff\xfe", hello);
	expect_usage_error_json("unknown tier '\xEF\xBF\xBD\xEF\xBF\xBD'");
	CLI(&res, NULL, "repl", "--json", "--session-idle", "0");
	expect_usage_error_json("session");
	CLI(&res, NULL, "bench", "--runs", "0", "--json");
	expect_usage_error_json("--runs: expected 1 to 10000");
	CLI(&res, NULL, "attack", "--json", "--tier", "vm");
	expect_usage_error_json("unknown tier 'vm'");
	CLI(&res, NULL, "launch", "--json");
	expect_usage_error_json("unknown command 'launch'");
	/* "--python --json": a value, not the flag; the error stays text. */
	CLI(&res, NULL, "run", "--python", "--json", hello);
	assert_int_equal(res.exit_code, 2);
	assert_string_equal(res.out, "");
	assert_true(contains(res.err, "python"));
}

/* ---- issue 24, item 14: bench's numpy + pandas row on the container tier ---- */

/* The row needs an image with numpy and pandas. With none (only the test
 * image, which has neither), it says how to make one; with one (test-ds,
 * the datascience preset, which make test builds), it runs there. */
static void bench_numpy_row_finds_its_image(void **state)
{
	(void)state;
	char cwd[PATH_MAX], images[PATH_MAX + 16], test_image[PATH_MAX + 32];
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(images, sizeof images, "%s/build/images", cwd);
	snprintf(test_image, sizeof test_image, "%s/test", images);

	/* bench --json says nothing until its end, and numpy's import in a
	 * cold container is slow on a busy machine. */
	cli_silence_ms = 600000;
	setenv("AGENTJAIL_IMAGES", program_dir, 1);
	CLI(&res, NULL, "bench", "--quick", "--runs", "1", "--no-peers", "--json", "--tier",
	    "container", "--image", test_image);
	assert_int_equal(res.exit_code, 0);
	json_t *j = one_json_object(res.out);
	json_t *c = json_object_get(json_object_get(j, "imports_numpy_pandas"), "container");
	assert_null(json_object_get(c, "image"));
	const char *why = json_string_value(json_object_get(c, "unavailable"));
	if (!why || !contains(why, "agentjail image build --preset datascience"))
		fail_msg("container numpy row: %s", why ? why : "(measured)");
	json_decref(j);

	setenv("AGENTJAIL_IMAGES", images, 1);
	CLI(&res, NULL, "bench", "--quick", "--runs", "1", "--no-peers", "--json", "--tier",
	    "container", "--image", "test", "--timeout", "300", "--cpu", "300");
	unsetenv("AGENTJAIL_IMAGES");
	cli_silence_ms = 60000;
	assert_int_equal(res.exit_code, 0);
	j = one_json_object(res.out);
	c = json_object_get(json_object_get(j, "imports_numpy_pandas"), "container");
	if (json_object_get(c, "unavailable"))
		fail_msg("container numpy row: %s",
			 json_string_value(json_object_get(c, "unavailable")));
	assert_string_equal(json_string_value(json_object_get(c, "image")), "test-ds");
	/* Every cold and warm run imported both (failed runs are not counted;
	 * the limits are wide, so that only a failed import fails one). */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "cold"), "runs")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "warm"), "runs")), 3);
	json_decref(j);
}

/* agentjail bench --commands: every row measured in every round (none
 * failed), exec's figure over bare /bin/true and JavaScript's ratio to
 * bare node given; node's rows only where this host has node (probed as
 * the bench does, on PATH). No timing is asserted. */
static void bench_commands_quick(void **state)
{
	(void)state;
	CLI(&res, NULL, "bench", "--commands", "--quick", "--runs", "2", "--json", "--tier",
	    "process");
	assert_int_equal(res.exit_code, 0);
	json_t *j = one_json_object(res.out);
	json_t *rows = json_object_get(json_object_get(j, "commands"), "rows");
	char *node = measure_find_in_path("node");
	static const char *const want[] = {"bare /bin/true", "exec true: process",
					   "first byte: process", "bare node -e",
					   "js one-shot: process", "js session: process"};
	size_t n = node ? 6 : 3;
	free(node);
	assert_int_equal(json_array_size(rows), n);
	for (size_t i = 0; i < n; i++) {
		json_t *r = json_array_get(rows, i);
		assert_string_equal(json_string_value(json_object_get(r, "row")), want[i]);
		assert_int_equal(json_integer_value(json_object_get(r, "samples")), 2);
		assert_int_equal(json_integer_value(json_object_get(r, "failed")), 0);
		assert_true(json_real_value(json_object_get(r, "median_ms")) > 0);
	}
	assert_non_null(json_object_get(json_array_get(rows, 1), "over_bare_ms"));
	if (n == 6)
		assert_true(json_real_value(json_object_get(json_array_get(rows, 5),
							    "ratio_to_bare_node")) > 0);
	json_decref(j);
}

/* ---- Output as it happens (docs/streaming.md) ---- */

/* Reads fd until buf holds needle (or the end); false at the end. */
static bool read_until(int fd, char *buf, size_t size, size_t *len, const char *needle)
{
	while (!strstr(buf, needle)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		assert_true(poll(&p, 1, cli_silence_ms) > 0);
		ssize_t n = read(fd, buf + *len, size - 1 - *len);
		if (n <= 0)
			return false;
		*len += (size_t)n;
		buf[*len] = '\0';
	}
	return true;
}

/* The gate a program waits at: it prints "first", then waits (30 s at
 * most) for GATE/go, which the test makes only once it has read "first".
 * Output held until the end would reach the test after the wait, so the
 * program would say "no gate": the order proves the streaming, with no
 * clock in the assertion. */
#define GATE_PROGRAM(gate)                                                           \
	"import os, sys, time\n"                                                     \
	"print('first', flush=True)\n"                                               \
	"for _ in range(600):\n"                                                     \
	"    if os.path.exists('" gate "/go'): break\n"                               \
	"    time.sleep(0.05)\n"                                                     \
	"print('saw the gate' if os.path.exists('" gate "/go') else 'no gate')\n"   \
	"print('é', end='', file=sys.stderr)\n"

/* A new directory for a gate, gate[300], and its --ro-bind at /mnt/gate,
 * bind[400]. */
static void make_gate(const char *name, char *gate, char *bind)
{
	snprintf(gate, 300, "%s/%s", program_dir, name);
	assert_int_equal(mkdir(gate, 0755), 0);
	snprintf(bind, 400, "%s:/mnt/gate", gate);
}

static void open_gate(const char *dir)
{
	char go[300];
	snprintf(go, sizeof go, "%s/go", dir);
	int fd = open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
}

/* Everything after the gate, to the end of fd; the exit code. */
static int finish_cli(pid_t pid, int fd, char *buf, size_t size, size_t *len)
{
	(void)read_until(fd, buf, size, len, "\x01never");
	close(fd);
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws));
	return WEXITSTATUS(ws);
}

static void json_stream_events_then_the_result(void **state)
{
	(void)state;
	char gate[300], bind[400];
	make_gate("gate-json", gate, bind);
	const char *prog = PROGRAM("gate.py", GATE_PROGRAM("/mnt/gate"));
	int fd;
	pid_t pid = cli_start(NULL, (const char *const[]){"run", "--json-stream", "--ro-bind", bind,
							   prog, NULL}, &fd, NULL);
	static char out[1 << 16];
	size_t len = 0;
	out[0] = '\0';
	assert_true(read_until(fd, out, sizeof out, &len, "\n"));
	/* The first line came while the program waits at the gate. */
	json_error_t e;
	json_t *first = json_loadb(out, (size_t)(strchr(out, '\n') - out), 0, &e);
	assert_non_null(first);
	assert_string_equal(json_string_value(json_object_get(first, "event")), "stdout");
	assert_true(!strncmp(json_string_value(json_object_get(first, "text")), "first", 5));
	json_decref(first);
	open_gate(gate);
	assert_int_equal(finish_cli(pid, fd, out, sizeof out, &len), 0);

	/* One object a line; stdout and stderr events whose texts make the
	 * program's output, the result last and once. */
	char so[256] = "", se[256] = "";
	json_t *result = NULL;
	for (char *line = out, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
		assert_null(result);
		json_t *j = json_loadb(line, (size_t)(nl - line), 0, &e);
		if (!j)
			fail_msg("not a JSON line (%s): %.*s", e.text, (int)(nl - line), line);
		const char *ev = json_string_value(json_object_get(j, "event"));
		assert_non_null(ev);
		if (!strcmp(ev, "result")) {
			result = j;
			continue;
		}
		const char *text = json_string_value(json_object_get(j, "text"));
		assert_non_null(text);
		assert_true(!strcmp(ev, "stdout") || !strcmp(ev, "stderr"));
		strncat(!strcmp(ev, "stdout") ? so : se, text, 100);
		json_decref(j);
	}
	assert_non_null(result);
	assert_string_equal(so, "first\nsaw the gate\n");
	assert_string_equal(se, "\xC3\xA9");
	assert_string_equal(json_string_value(json_object_get(result, "status")), "ok");
	assert_string_equal(json_string_value(json_object_get(result, "stdout")), so);
	/* The contract object, with "event" in front: --json's 12 keys. */
	assert_int_equal(json_object_size(result), 13);
	json_decref(result);

	/* Bytes that are not UTF-8 come as base64, and the exit code is the
	 * program's, as without --json-stream. */
	CLI(&res, NULL, "run", "--json-stream",
	    PROGRAM("bin.py", "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe')\nsys.exit(4)\n"));
	assert_int_equal(res.exit_code, 4);
	assert_true(contains(res.out, "{\"event\":\"stdout\",\"base64\":\"//4=\"}\n"));
	assert_true(contains(res.out, "{\"event\":\"result\",\"tier\":\"process\",\"status\":\"error\""));

	/* Two formats at once: a usage error, said as JSON. */
	CLI(&res, NULL, "run", "--json", "--json-stream", prog);
	assert_int_equal(res.exit_code, 2);
	json_t *j = one_json_object(res.out);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "usage_error");
	assert_true(contains(json_string_value(json_object_get(j, "message")),
			     "--json and --json-stream are two output formats"));
	json_decref(j);
	/* --json-stream's usage error is the result line its reader waits for. */
	CLI(&res, NULL, "run", "--json-stream", "--memory", "abc", prog);
	assert_int_equal(res.exit_code, 2);
	j = one_json_object(res.out);
	assert_string_equal(json_string_value(json_object_get(j, "event")), "result");
	assert_string_equal(json_string_value(json_object_get(j, "status")), "usage_error");
	json_decref(j);
}

/* Without --json, run passes the output through as it comes. */
/* run --language ts: TypeScript, its types stripped by the host's
 * compiler on the process tier (or the refusal that names the package
 * where the host has none); a syntax error names its place, exit 1. */
static void run_language_typescript(void **state)
{
	(void)state;
	CLI(&res, "interface N { v: number }\nconst n: N = { v: 6 }\nconsole.log(n.v * 7)\n", "run",
	    "--language", "ts", "-");
	if (res.exit_code == 127) {
		assert_string_equal(res.err, "typescript: this sandbox's image has no TypeScript "
					     "compiler (Debian package node-typescript)\n");
		return;
	}
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "42\n");
	CLI(&res, "let n: = 1\n", "run", "--language", "typescript", "-");
	assert_int_equal(res.exit_code, 1);
	assert_true(contains(res.err, ".ts:1:8 - error TS1110: Type expected."));
	CLI(&res, "1", "run", "--language", "tsx", "-");
	assert_int_equal(res.exit_code, 2);
	assert_true(contains(res.err, "typescript (ts)"));
}

static void run_passes_output_as_it_comes(void **state)
{
	(void)state;
	char gate[300], bind[400];
	make_gate("gate-run", gate, bind);
	int fd;
	pid_t pid = cli_start(NULL, (const char *const[]){"run", "--ro-bind", bind,
		PROGRAM("gate.py", GATE_PROGRAM("/mnt/gate")), NULL}, &fd, NULL);
	static char out[4096];
	size_t len = 0;
	out[0] = '\0';
	assert_true(read_until(fd, out, sizeof out, &len, "first\n"));
	open_gate(gate);
	assert_int_equal(finish_cli(pid, fd, out, sizeof out, &len), 0);
	assert_string_equal(out, "first\nsaw the gate\n");
}

/* repl passes a cell's output through as it comes. It has no --ro-bind:
 * the gate is a host directory under /run, which the process tier shows
 * read-only (not /tmp, which each run makes for itself). */
static void repl_passes_output_as_it_comes(void **state)
{
	(void)state;
	char gate[PATH_MAX], probe[PATH_MAX + 100], cell[2 * PATH_MAX + 600];
	snprintf(gate, sizeof gate, "/run/aj-cli-gate-XXXXXX");
	if (!mkdtemp(gate))
		skip(); /* /run not writable: a machine where the test is not root */
	assert_int_equal(chmod(gate, 0755), 0);
	snprintf(probe, sizeof probe, "import os\nprint(os.path.isdir('%s'))\n", gate);
	CLI(&res, probe, "run", "-");
	if (strcmp(res.out, "True\n")) {
		rmdir(gate);
		skip(); /* a machine whose sandboxes cannot see this directory */
	}
	snprintf(cell, sizeof cell,
		 "import os, time\n"
		 "print('first', flush=True)\n"
		 "for _ in range(600):\n"
		 "    if os.path.exists('%s/go'): break\n"
		 "    time.sleep(0.05)\n"
		 "print('saw the gate' if os.path.exists('%s/go') else 'no gate')\n",
		 gate, gate);
	int fd;
	pid_t pid = cli_start(cell, (const char *const[]){"repl", NULL}, &fd, NULL);
	static char out[4096];
	size_t len = 0;
	out[0] = '\0';
	assert_true(read_until(fd, out, sizeof out, &len, "first\n"));
	open_gate(gate);
	int rc = finish_cli(pid, fd, out, sizeof out, &len);
	char go[PATH_MAX + 10];
	snprintf(go, sizeof go, "%s/go", gate);
	unlink(go);
	rmdir(gate);
	assert_int_equal(rc, 0);
	assert_true(contains(out, "first\nsaw the gate\n"));
}

static int make_dir(void **state)
{
	(void)state;
	return mkdtemp(program_dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", program_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* images/build-root.sh MODE ROOT PACKAGES (with PATH first on $PATH), what
 * `image build` runs before the VM parts, then `chroot ROOT CHECK` with its
 * output in out: 0, or -1 with the script's or the check's output there. */
static int build_root_and_check(const char *path, const char *mode, const char *packages,
				const char *check, char *out, size_t n)
{
	char dir[] = "/tmp/aj-root-XXXXXX", cmd[2048], root[64];
	assert_non_null(mkdtemp(dir));
	snprintf(root, sizeof root, "%s/root", dir);
	snprintf(cmd, sizeof cmd,
		 "mkdir %s && PATH=%s:$PATH sh images/build-root.sh %s %s %s >%s/log 2>&1", root,
		 path, mode, root, packages, dir);
	int rc = system(cmd);
	bool built = rc == 0;
	if (built) {
		snprintf(cmd, sizeof cmd, "chroot %s %s >%s/out 2>&1", root, check, dir);
		rc = system(cmd);
	}
	snprintf(cmd, sizeof cmd, "%s/%s", dir, built ? "out" : "log");
	FILE *fp = fopen(cmd, "r");
	size_t got = fp ? fread(out, 1, n - 1, fp) : 0;
	out[got] = '\0';
	if (fp)
		fclose(fp);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return rc == 0 ? 0 : -1;
}

/* Whether the host has each of the comma-separated packages installed. */
static bool host_has_packages(const char *packages)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd,
		 "for p in $(echo %s | tr , ' '); do dpkg-query -W -f='${Status}' $p "
		 "2>/dev/null | grep -q 'install ok installed' || exit 1; done",
		 packages);
	return system(cmd) == 0;
}

/* The build-root tests chroot into the root they make, which needs root, and
 * copy the host's PACKAGES: skipped without either. */
static void need_root_and_packages(const char *packages)
{
	if (geteuid() != 0)
		skip();
	if (!host_has_packages(packages))
		skip();
}

/* Each package arrives whole (docs/tiers/container.md, "Images"): the
 * bundle and hashed links ca-certificates' update-ca-certificates made,
 * python3-requests' byte-compiled caches, python3-tz's tzdata (whose
 * zoneinfo/localtime link leads to /etc/localtime, a file in the image);
 * and the image's own CA bundle. */
static void image_packages_arrive_whole(void **state)
{
	(void)state;
	need_root_and_packages("ca-certificates,python3-requests,python3-tz");
	char out[4096];
	if (build_root_and_check(
		    "/usr/bin", "host", "ca-certificates,python3-requests,python3-tz",
		    "/usr/bin/python3 -I -c \"import glob, os, ssl\n"
		    "print('x509', ssl.create_default_context().cert_store_stats()['x509'] > 100)\n"
		    "links = glob.glob('/etc/ssl/certs/*.0')\n"
		    "print('links', len(links) > 100, all(os.path.exists(l) for l in links))\n"
		    "print('pyc', len(glob.glob('/usr/lib/python3/dist-packages/requests/__pycache__/"
		    "*.pyc')) > 5)\n"
		    "print('localtime', os.path.isfile('/etc/localtime'), "
		    "os.path.islink('/etc/localtime'))\n"
		    "\"",
		    out, sizeof out))
		fail_msg("build-root.sh or the check failed: %s", out);
	if (!contains(out, "x509 True\nlinks True True\npyc True\nlocaltime True False\n"))
		fail_msg("the packages did not arrive whole: %s", out);
}

/* A package's programs bring the C libraries they link, not only its Python
 * extensions': nodejs' node (libstdc++ from the host's nodesource build;
 * libnode, libuv, ICU from Debian's) and coreutils' factor (libgmp, which
 * nothing of Python links) run in the root; the test image of node and
 * coreutils is built this way (docs/tiers/container.md, "Images"). */
static void image_programs_bring_their_libraries(void **state)
{
	(void)state;
	need_root_and_packages("nodejs,coreutils");
	char out[4096];
	if (build_root_and_check("/usr/bin", "host", "nodejs,coreutils",
				 "/bin/sh -c \"node -e 'console.log(6 * 7)' && "
				 "factor 12 && ls -d /usr\"",
				 out, sizeof out))
		fail_msg("build-root.sh or the check failed: %s", out);
	if (!contains(out, "42\n12: 2 2 3\n/usr\n"))
		fail_msg("a program of the packages does not run in the root: %s", out);
}

/* A stand-in for debootstrap in DIR (made if need be), for DIR to go first
 * on PATH: it writes its arguments to DIR/args and fills the root it is
 * given from the host's own PACKAGES (build-root.sh host), no network. */
static void fake_debootstrap(const char *dir, const char *packages)
{
	char bin[PATH_MAX], cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof cwd));
	mkdir(dir, 0755);
	snprintf(bin, sizeof bin, "%s/debootstrap", dir);
	FILE *fp = fopen(bin, "w");
	assert_non_null(fp);
	fprintf(fp,
		"#!/bin/sh\necho \"$*\" >%s/args\nfor a; do root=$a; done\n"
		"exec sh %s/images/build-root.sh host \"$root\" %s\n",
		dir, cwd, packages);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(bin, 0755), 0);
}

/* Every image built from Debian carries the userland beside python3 and
 * ca-certificates (docs/tiers/container.md, "Images"): build-root.sh asks
 * debootstrap for it, and refuses a root where a package's command is
 * missing. debootstrap is fake_debootstrap's stand-in. */
static void debian_images_carry_the_userland(void **state)
{
	(void)state;
	static const char userland[] = "bash,dash,coreutils,grep,sed,findutils,curl,git,procps,"
				       "nodejs";
	need_root_and_packages(userland);
	char fake[400], args[420], out[4096];
	snprintf(fake, sizeof fake, "%s/fake", program_dir);
	snprintf(args, sizeof args, "%s/args", fake);
	/* A root without node is refused, naming the package. */
	fake_debootstrap(fake, "bash,dash,coreutils,grep,sed,findutils,curl,git,procps");
	if (!build_root_and_check(fake, "debootstrap", "", "/bin/true", out, sizeof out) ||
	    !contains(out, "the image has no node (Debian package nodejs)"))
		fail_msg("a root without node was not refused: %s", out);
	fake_debootstrap(fake, userland);
	if (build_root_and_check(fake, "debootstrap", "", "/usr/bin/node -e 'console.log(6 * 7)'",
				 out, sizeof out))
		fail_msg("build-root.sh debootstrap or the check failed: %s", out);
	assert_true(contains(out, "42\n"));
	/* The --include list, each package in it between commas. */
	char line[1024] = "", include[1024], want[256];
	FILE *fp = fopen(args, "r");
	assert_non_null(fp);
	assert_non_null(fgets(line, sizeof line, fp));
	fclose(fp);
	const char *inc = strstr(line, "--include=");
	assert_non_null(inc);
	inc += strlen("--include=");
	snprintf(include, sizeof include, ",%.*s,", (int)strcspn(inc, " \n"), inc);
	snprintf(want, sizeof want, "python3,ca-certificates,%s", userland);
	char *save = NULL;
	for (char *p = strtok_r(want, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		char item[64];
		snprintf(item, sizeof item, ",%s,", p);
		if (!strstr(include, item))
			fail_msg("debootstrap was not asked for %s: %s", p, line);
	}
}

int main(void)
{
	if (getenv("AJ_TEST_FILTER"))
		cmocka_set_test_filter(getenv("AJ_TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(usage_errors_exit_2),
		cmocka_unit_test(bad_programs_exit_2),
		cmocka_unit_test(passes_output_and_exit_code_through),
		cmocka_unit_test(json_contract),
		cmocka_unit_test(exit_codes_for_endings),
		cmocka_unit_test(exec_one_command),
		cmocka_unit_test(unavailable_tier_is_a_sandbox_error),
		cmocka_unit_test(caller_environment_does_not_leak),
		cmocka_unit_test(check_lists_every_tier),
		cmocka_unit_test(image_lifecycle),
		cmocka_unit_test(mcp_config_errors_name_the_problem),
		cmocka_unit_test(mcp_session_options_name_the_problem),
		cmocka_unit_test(mcp_tools_name_the_problem),
		cmocka_unit_test(one_tier_options_name_the_problem),
		cmocka_unit_test(egress_options_name_the_problem),
		cmocka_unit_test(mcp_config_egress_keys),
		cmocka_unit_test(secrets_file_names_the_problem),
		cmocka_unit_test(egress_ca_names_the_problem),
		cmocka_unit_test(mcp_config_secrets),
		cmocka_unit_test(attack_quick),
		cmocka_unit_test(attack_warm),
		cmocka_unit_test(attack_shell_and_js),
		cmocka_unit_test(bench_quick),
		cmocka_unit_test(bench_commands_quick),
		cmocka_unit_test(help_is_there),
		cmocka_unit_test(repl_json_session),
		cmocka_unit_test(repl_cells_from_a_pipe),
		cmocka_unit_test(repl_checkpoint_and_restore),
		cmocka_unit_test(repl_exec_lines),
		cmocka_unit_test(env_flags_and_config_key), cmocka_unit_test(ro_bind_flags_and_config_key),
		cmocka_unit_test(version_is_one),
		cmocka_unit_test(help_lists_every_command),
		cmocka_unit_test(options_after_the_file),
		cmocka_unit_test(nul_byte_message_is_whole),
		cmocka_unit_test(json_usage_errors_are_json),
		cmocka_unit_test(bench_numpy_row_finds_its_image),
		cmocka_unit_test(json_stream_events_then_the_result),
		cmocka_unit_test(run_language_typescript),
		cmocka_unit_test(run_passes_output_as_it_comes),
		cmocka_unit_test(repl_passes_output_as_it_comes),
		cmocka_unit_test(image_packages_arrive_whole),
		cmocka_unit_test(image_programs_bring_their_libraries),
		cmocka_unit_test(debian_images_carry_the_userland),
	};
	return cmocka_run_group_tests_name("agentjail command", tests, make_dir, remove_dir);
}
