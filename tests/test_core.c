/* Unit tests of the core: limits, output capping, UTF-8 repair, JSON
 * encoding, and how an ending is classified. No sandbox is started here. */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "src/core/internal.h"
#include "src/api/api.h"
#include "src/api/tool_files.h"
#include "src/core/pool.h"
#include "src/core/status.h"
#include "src/linux/supervise.h"
#include "src/vm/answer.h"
#include "src/vm/protocol.h"

/* ---- limits ---- */

static void config_defaults_follow_design(void **state)
{
	(void)state;
	struct aj_config c;
	aj_config_init(&c);
	assert_int_equal(c.tier, AJ_TIER_PROCESS);
	assert_true(c.limits.wall_sec == 10.0);
	assert_int_equal(c.limits.cpu_sec, 10);
	assert_int_equal(c.limits.memory_mb, 256);
	assert_int_equal(c.limits.pids, 64);
	assert_int_equal(c.limits.file_size_mb, 16);
	assert_int_equal(c.limits.disk_mb, 64);
	assert_int_equal(c.limits.output_kb, 1024);
	assert_string_equal(c.python, "/usr/bin/python3");
	struct aj_error e;
	assert_int_equal(aj_config_validate(&c, &e), 0);
}

static void config_rejects_out_of_range(void **state)
{
	(void)state;
	struct aj_config c;
	struct aj_error e;
	aj_config_init(&c);
	c.limits.memory_mb = 0;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_true(contains(e.message, "memory: 0 is out of range (32 to 1048576 MiB)"));

	aj_config_init(&c);
	c.limits.wall_sec = 0;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_true(contains(e.message, "timeout"));

	aj_config_init(&c);
	c.limits.wall_sec = nan("");
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);

	aj_config_init(&c);
	c.limits.pids = 0;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_true(contains(e.message, "pids"));

	aj_config_init(&c);
	c.limits.output_kb = 0;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_true(contains(e.message, "output"));

	aj_config_init(&c);
	c.python = "python3";
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_true(contains(e.message, "absolute"));

	aj_config_init(&c);
	c.uid_base = 0;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_true(contains(e.message, "uid-base"));

	aj_config_init(&c);
	c.uid_base = 4294967290u;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);

	/* The docker tier's uids end at 2^31 - 1, the engine's limit (the
	 * soak's uid base, 2150000000, made every docker run a
	 * sandbox_error); the other tiers take the whole range. */
	aj_config_init(&c);
	c.tier = AJ_TIER_DOCKER;
	c.uid_base = 2150000000u;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_true(contains(e.message, "2147483647, the highest the Docker Engine accepts"));
	c.uid_base = 2147483648u - c.slots;
	assert_int_equal(aj_config_validate(&c, &e), 0);
	c.uid_base++;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	c.tier = AJ_TIER_GVISOR;
	c.uid_base = 2150000000u;
	assert_int_equal(aj_config_validate(&c, &e), 0);

	aj_config_init(&c);
	c.tier = (enum aj_tier)42;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
}

/* Warm mode is for the tiers that fork runs from a zygote on this host, and
 * preload is refused unless it is a list of plain module names; each
 * refusal names the problem. */
static void config_checks_warm_and_preload(void **state)
{
	(void)state;
	struct aj_config c;
	struct aj_error e;
	aj_config_init(&c);
	assert_false(c.warm);
	assert_null(c.preload);

	for (int t = 0; t < AJ_TIER_COUNT; t++) {
		aj_config_init(&c);
		c.tier = (enum aj_tier)t;
		c.warm = true;
		if (t == AJ_TIER_PROCESS || t == AJ_TIER_CONTAINER) {
			assert_int_equal(aj_config_validate(&c, &e), 0);
			continue;
		}
		assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
		char want[160];
		snprintf(want, sizeof want,
			 "warm: the %s tier has no warm mode (the process and container tiers have)",
			 aj_tier_name((enum aj_tier)t));
		assert_string_equal(e.message, want);
	}

	aj_config_init(&c);
	c.preload = "numpy";
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "preload: needs warm mode (--warm)");
	c.preload = ""; /* none: nothing to need warm mode for */
	assert_int_equal(aj_config_validate(&c, &e), 0);

	static const char *const good[] = {"numpy", "numpy,pandas", "os.path,_json,a1.b_2",
					   "matplotlib.pyplot"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		aj_config_init(&c);
		c.warm = true;
		c.preload = good[i];
		assert_int_equal(aj_config_validate(&c, &e), 0);
	}

	static const struct {
		const char *preload, *message;
	} bad[] = {
		{"num py", "preload: 'num py' is not a module name"},
		{"numpy, pandas", "preload: ' pandas' is not a module name"},
		{"numpy,1pandas", "preload: '1pandas' is not a module name"},
		{"os..path", "preload: 'os..path' is not a module name"},
		{".os", "preload: '.os' is not a module name"},
		{"os.", "preload: 'os.' is not a module name"},
		{"os/path", "preload: 'os/path' is not a module name"},
		{"os;import sys", "preload: 'os;import sys' is not a module name"},
		{"caf\xc3\xa9", "preload: 'caf\xc3\xa9' is not a module name"},
		{"numpy,,pandas", "preload: 'numpy,,pandas' has an empty module name (a stray comma)"},
		{"numpy,", "preload: 'numpy,' has an empty module name (a stray comma)"},
		{",numpy", "preload: ',numpy' has an empty module name (a stray comma)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		aj_config_init(&c);
		c.warm = true;
		c.preload = bad[i].preload;
		assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
		assert_string_equal(e.message, bad[i].message);
	}

	/* 32 modules are allowed, 33 are not; nor more than 1024 characters. */
	char list[1100] = "";
	for (int i = 0; i < 32; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%sm%d", i ? "," : "", i);
	aj_config_init(&c);
	c.warm = true;
	c.preload = list;
	assert_int_equal(aj_config_validate(&c, &e), 0);
	strcat(list, ",m32");
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "preload: more than 32 modules");
	memset(list, 'a', 1024);
	list[1024] = '\0';
	assert_int_equal(aj_config_validate(&c, &e), 0);
	strcat(list, "a");
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "preload: 1025 characters is too long (at most 1024)");
}

/* env: the deployer's variables. Harmless names are taken; each name that
 * would weaken the sandbox, or that it sets itself, is refused with its
 * reason; bad shapes, duplicates and the caps too (rule I3), on every tier. */
static void config_checks_env(void **state)
{
	(void)state;
	struct aj_config c;
	struct aj_error e;
	const char *one[1];
	aj_config_init(&c);
	assert_null(c.env);
	assert_int_equal(c.env_count, 0);
	c.env = one;
	c.env_count = 1;
	static const char *const good[] = {
		"TZ=UTC", "API_BASE=https://x.example/v1?a=b", "EMPTY=", "_under=1",
		"PYTHONUNBUFFERED=1", "PYTHONHASHSEED=0", "PYTHONPATH=/tmp/work",
		"PYTHONPATH=/tmp/work/lib:/tmp/work/src", "MY_PROXY_HOST=x", "LDFLAGS=-s",
		"PIP_INDEX_URL=https://mirror.example/simple",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		one[0] = good[i];
		if (aj_config_validate(&c, &e))
			fail_msg("%s refused: %s", good[i], e.message);
	}
	static const char loader[] = "the dynamic loader reads it";
	static const char python[] = "it changes what Python runs or where it looks for it";
	static const char proxy[] = "egress owns the proxy variables";
	static const char contract[] = "the sandbox sets it (docs/design.md rule E1";
	static const char workspace[] = "only directories under /tmp/work (the workspace)";
	static const struct {
		const char *var, *message;
	} bad[] = {
		{"LD_PRELOAD=/tmp/work/x.so", loader}, {"LD_LIBRARY_PATH=/tmp", loader},
		{"LD_AUDIT=x", loader}, {"LD_BIND_NOW=1", loader},
		{"GCONV_PATH=/tmp/work", "glibc loads code from it"},
		{"GLIBC_TUNABLES=glibc.malloc.arena_max=64", "glibc's allocator and loader"},
		{"PYTHONSTARTUP=/tmp/work/s.py", python}, {"PYTHONHOME=/tmp/work", python},
		{"PYTHONINSPECT=1", python}, {"PYTHONUSERBASE=/tmp/work", python},
		{"PYTHONPLATLIBDIR=x", python}, {"PYTHONSAFEPATH=", python},
		{"PYTHONPATH=/usr/lib/python3", workspace}, {"PYTHONPATH=/tmp/workspace", workspace},
		{"PYTHONPATH=/tmp/work/../../etc", workspace}, {"PYTHONPATH=/tmp/work:", workspace},
		{"PYTHONPATH=", workspace}, {"PYTHONPATH=:/tmp/work", workspace},
		{"HTTP_PROXY=http://evil:3128", proxy}, {"https_proxy=x", proxy},
		{"ALL_PROXY=x", proxy}, {"NO_PROXY=*", proxy}, {"no_proxy=*", proxy},
		{"PIP_PROXY=x", proxy}, {"Http_Proxy=x", proxy},
		{"PATH=/tmp/work", contract}, {"HOME=/", contract}, {"TMPDIR=/dev/shm", contract},
		{"LANG=C", contract}, {"MALLOC_ARENA_MAX=64", contract}, {"PIP_TARGET=/x", contract},
		{"MPLBACKEND=TkAgg", "a session's interpreter sets it"},
		{"MPLCONFIGDIR=/x", "a session's interpreter sets it"},
		{"NOEQUALS", "env: 'NOEQUALS' is not NAME=VALUE"},
		{"=x", "env: '' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
		{"1X=y", "env: '1X' is not a variable name"},
		{"A-B=y", "env: 'A-B' is not a variable name"},
		{"A B=y", "env: 'A B' is not a variable name"},
		{"X=a\nb", "env: X: a value holds no newline"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		one[0] = bad[i].var;
		memset(&e, 0, sizeof e);
		if (aj_config_validate(&c, &e) != -EINVAL)
			fail_msg("%s taken", bad[i].var);
		if (!strstr(e.message, bad[i].message) || strncmp(e.message, "env: ", 5))
			fail_msg("%s: '%s', want '%s'", bad[i].var, e.message, bad[i].message);
		/* The refused name is named. */
		const char *eq = strchr(bad[i].var, '=');
		if (eq && eq != bad[i].var && strstr(bad[i].message, "not a variable") == NULL &&
		    strncmp(e.message + 5, bad[i].var, (size_t)(eq - bad[i].var)))
			fail_msg("%s: the message names no variable: %s", bad[i].var, e.message);
	}
	/* Set twice; a count without a list; the caps. */
	const char *twice[] = {"A=1", "B=2", "A=3"};
	c.env = twice;
	c.env_count = 3;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "env: A is set twice");
	c.env = NULL;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "env: a count without its variables");
	static char names[AJ_MAX_ENV + 1][16];
	const char *many[AJ_MAX_ENV + 1];
	for (int i = 0; i <= AJ_MAX_ENV; i++) {
		snprintf(names[i], sizeof names[i], "V%d=x", i);
		many[i] = names[i];
	}
	c.env = many;
	c.env_count = AJ_MAX_ENV;
	assert_int_equal(aj_config_validate(&c, &e), 0);
	c.env_count = AJ_MAX_ENV + 1;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "env: 65 variables, more than 64");
	static char big[2][AJ_MAX_ENV_BYTES / 2 + 8];
	for (int i = 0; i < 2; i++) {
		memset(big[i], 'x', sizeof big[i] - 1);
		big[i][0] = (char)('A' + i);
		big[i][1] = '=';
		big[i][sizeof big[i] - 1] = '\0';
	}
	const char *two[] = {big[0], big[1]};
	c.env = two;
	c.env_count = 1;
	assert_int_equal(aj_config_validate(&c, &e), 0);
	c.env_count = 2;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "env: the variables pass 32768 bytes together");
}

/* ro_bind: two absolute paths in plain form, SANDBOX outside what each run
 * makes for itself, no two to one place, at most 16, never on microvm; a
 * HOST that does not exist is found when the sandbox opens. */
static void config_checks_ro_binds(void **state)
{
	(void)state;
	struct aj_config c;
	struct aj_error e;
	const char *one[1];
	aj_config_init(&c);
	assert_null(c.ro_binds);
	assert_int_equal(c.ro_bind_count, 0);
	c.ro_binds = one;
	c.ro_bind_count = 1;
	static const char *const good[] = {"/srv/data", "/srv/data:/mnt/data", "/etc/hostname:/mnt/h",
					   "/usr/share/doc:/opt/doc", "/srv:/var/lib/x"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		one[0] = good[i];
		assert_int_equal(aj_config_validate(&c, &e), 0);
	}
	static const struct {
		const char *bind, *message;
	} bad[] = {
		{"data", "ro_bind: 'data': HOST is not an absolute path"},
		{"", "ro_bind: '': HOST is not an absolute path"},
		{":/mnt/x", "ro_bind: ':/mnt/x': HOST is not an absolute path"},
		{"/srv/data:", "ro_bind: '/srv/data:': SANDBOX is not an absolute path"},
		{"/srv/data:mnt", "ro_bind: '/srv/data:mnt': SANDBOX is not an absolute path"},
		{"/srv/../etc:/mnt/x", "ro_bind: '/srv/../etc:/mnt/x': HOST is not in plain form (an "
				       "empty, '.' or '..' part, or a trailing '/')"},
		{"/srv/data:/mnt/../proc", "ro_bind: '/srv/data:/mnt/../proc': SANDBOX is not in plain "
					   "form (an empty, '.' or '..' part, or a trailing '/')"},
		{"/srv//data", "ro_bind: '/srv//data': HOST is not in plain form (an empty, '.' or "
			       "'..' part, or a trailing '/')"},
		{"/srv/data/", "ro_bind: '/srv/data/': HOST is not in plain form (an empty, '.' or "
			       "'..' part, or a trailing '/')"},
		{"/srv/./data", "ro_bind: '/srv/./data': HOST is not in plain form (an empty, '.' or "
				"'..' part, or a trailing '/')"},
		{"/a:/b:/c", "ro_bind: '/a:/b:/c': SANDBOX has a colon (one separates HOST from "
			     "SANDBOX)"},
		{"/srv:/", "ro_bind: '/srv:/': SANDBOX cannot be / (the whole view)"},
		{"/", "ro_bind: '/': SANDBOX cannot be / (the whole view)"},
		{"/srv:/proc", "ro_bind: '/srv:/proc': SANDBOX is under /proc, which each run makes "
			       "for itself (choose a path such as /mnt/NAME)"},
		{"/srv:/proc/1", "ro_bind: '/srv:/proc/1': SANDBOX is under /proc, which each run "
				 "makes for itself (choose a path such as /mnt/NAME)"},
		{"/dev/kvm", "ro_bind: '/dev/kvm': SANDBOX is under /dev, which each run makes for "
			     "itself (choose a path such as /mnt/NAME)"},
		{"/sys", "ro_bind: '/sys': SANDBOX is under /sys, which each run makes for itself "
			 "(choose a path such as /mnt/NAME)"},
		{"/srv:/tmp/work/data", "ro_bind: '/srv:/tmp/work/data': SANDBOX is under /tmp, which "
					"each run makes for itself (choose a path such as /mnt/NAME)"},
		{"/var/tmp", "ro_bind: '/var/tmp': SANDBOX is under /var/tmp, which each run makes "
			     "for itself (choose a path such as /mnt/NAME)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		one[0] = bad[i].bind;
		assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
		assert_string_equal(e.message, bad[i].message);
	}
	/* /tmpfoo is not /tmp. */
	one[0] = "/srv:/tmpfoo";
	assert_int_equal(aj_config_validate(&c, &e), 0);

	const char *two[] = {"/srv/a:/mnt/x", "/srv/b:/mnt/x"};
	c.ro_binds = two;
	c.ro_bind_count = 2;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "ro_bind: '/srv/a:/mnt/x' and '/srv/b:/mnt/x' both go to /mnt/x");
	c.ro_bind_count = 1;
	c.ro_binds = NULL;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "ro_bind: 1 entries given but no list");

	const char *many[AJ_MAX_RO_BINDS + 1];
	char names[AJ_MAX_RO_BINDS + 1][32];
	for (int i = 0; i <= AJ_MAX_RO_BINDS; i++) {
		snprintf(names[i], sizeof names[i], "/srv:/mnt/%d", i);
		many[i] = names[i];
	}
	c.ro_binds = many;
	c.ro_bind_count = AJ_MAX_RO_BINDS;
	assert_int_equal(aj_config_validate(&c, &e), 0);
	c.ro_bind_count = AJ_MAX_RO_BINDS + 1;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "ro_bind: 17 paths is more than 16");

	c.ro_binds = one;
	c.ro_bind_count = 1;
	one[0] = "/srv";
	c.tier = AJ_TIER_MICROVM;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "ro_bind: the microvm tier shows no host path (its guest "
				       "sees only its image; put files into a session instead)");

	/* A HOST that is not there: the open says so, before any tier. */
	c.tier = AJ_TIER_PROCESS;
	one[0] = "/nonexistent-agentjail-path:/mnt/x";
	struct aj_sandbox *sb = NULL;
	assert_int_equal(aj_open(&c, &sb, &e), -ENOENT);
	assert_null(sb);
	assert_string_equal(e.message,
			    "ro_bind: /nonexistent-agentjail-path: No such file or directory");
	one[0] = "/dev/null:/mnt/x";
	assert_int_equal(aj_open(&c, &sb, &e), -EINVAL);
	assert_string_equal(e.message, "ro_bind: /dev/null is neither a directory nor a regular file");
}

/* cfg.trust_ca (src/core/trust_ca.c): each bad file refused with its
 * problem named, a good one taken; and at open, the bundle is the view's
 * followed by the file's certificates, removed at close. */
static void write_file(const char *path, const char *text, size_t len)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, len, fp), len);
	fclose(fp);
}

static void config_checks_trust_ca(void **state)
{
	(void)state;
	/* A certificate's DER begins with a SEQUENCE (0x30): "MIIB" is one. */
	static const char cert[] = "-----BEGIN CERTIFICATE-----\n"
				   "MIIBAAAA\n"
				   "-----END CERTIFICATE-----\n";
	char dir[] = "/tmp/aj-trust-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/ca.pem", dir);
	struct aj_config c;
	struct aj_error e;
	aj_config_init(&c);
	c.trust_ca = path;
	const struct {
		const char *text, *message;
	} bad[] = {
		{"", "is not PEM: no '-----BEGIN CERTIFICATE-----' block in it"},
		{"hello\n", "is not PEM: no '-----BEGIN CERTIFICATE-----' block in it"},
		{"-----BEGIN PRIVATE KEY-----\nMIIBAAAA\n-----END PRIVATE KEY-----\n",
		 "line 1: holds a 'PRIVATE KEY' block; only CERTIFICATE blocks may be trusted (a "
		 "private key must never reach a sandbox)"},
		{"-----BEGIN CERTIFICATE-----\nMIIBAAAA\n",
		 "the 'CERTIFICATE' block has no END line"},
		{"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
		 "line 3: the 'CERTIFICATE' block ending here is not a base64 DER certificate"},
		{"-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END X509 CRL-----\n",
		 "line 3: the END line does not close 'CERTIFICATE'"},
		{"-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n-----END CERTIFICATE-----\n",
		 "line 2: a header inside the 'CERTIFICATE' block"},
	};
	char want[512];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_file(path, bad[i].text, strlen(bad[i].text));
		assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
		snprintf(want, sizeof want, "trust_ca: %s %s", path, bad[i].message);
		assert_string_equal(e.message, want);
	}
	write_file(path, "\x30\x82\0\1", 4); /* DER, not PEM */
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_true(strstr(e.message, "is not PEM (it holds binary data"));
	/* Past the cap: refused whole, never cut. */
	size_t big = (size_t)AJ_MAX_TRUST_CA_KB * 1024 + 1;
	char *text = malloc(big);
	assert_non_null(text);
	memset(text, '#', big);
	write_file(path, text, big);
	free(text);
	assert_int_equal(aj_config_validate(&c, &e), -EFBIG);
	snprintf(want, sizeof want,
		 "trust_ca: %s is larger than %d KiB (a CA bundle is a few KiB; name only the "
		 "certificates to add)",
		 path, AJ_MAX_TRUST_CA_KB);
	assert_string_equal(e.message, want);
	c.trust_ca = dir;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	snprintf(want, sizeof want, "trust_ca: %s is not a regular file", dir);
	assert_string_equal(e.message, want);
	c.trust_ca = "/nonexistent-agentjail-ca.pem";
	assert_int_equal(aj_config_validate(&c, &e), -ENOENT);
	assert_string_equal(e.message,
			    "trust_ca: /nonexistent-agentjail-ca.pem: No such file or directory");

	/* The bundle's path is the sandbox's own. */
	c.trust_ca = path;
	write_file(path, cert, sizeof cert - 1);
	const char *bind[] = {"/srv/x:/etc/ssl/certs/ca-certificates.crt"};
	c.ro_binds = bind;
	c.ro_bind_count = 1;
	assert_int_equal(aj_config_validate(&c, &e), -EINVAL);
	assert_string_equal(e.message, "trust_ca: ro_bind '/srv/x:/etc/ssl/certs/ca-certificates.crt' "
				       "shows a file at /etc/ssl/certs/ca-certificates.crt too, where "
				       "the sandbox's CA bundle goes");
	c.ro_binds = NULL;
	c.ro_bind_count = 0;

	/* Comments between blocks, CRLF, two certificates: taken. */
	c.trust_ca = path;
	static const char two[] = "# a comment\r\nsubject=CN = x\r\n"
				  "-----BEGIN CERTIFICATE-----\r\nMIIBAAAA\r\n"
				  "-----END CERTIFICATE-----\r\n"
				  "-----BEGIN TRUSTED CERTIFICATE-----\nMIIB\nAAAA\n"
				  "-----END TRUSTED CERTIFICATE-----";
	write_file(path, two, strlen(two));
	assert_int_equal(aj_config_validate(&c, &e), 0);

	/* The bundle: a view whose bundle lacks a final newline, then the file. */
	char root[96], bundle_dir[96], base[128];
	snprintf(root, sizeof root, "%s/root", dir);
	snprintf(bundle_dir, sizeof bundle_dir, "%s/root/etc/ssl/certs", dir);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "mkdir -p %s", bundle_dir);
	assert_int_equal(system(cmd), 0);
	snprintf(base, sizeof base, "%s/ca-certificates.crt", bundle_dir);
	write_file(base, "IMAGE", 5);
	write_file(path, cert, sizeof cert - 1);
	char state_dir[96];
	snprintf(state_dir, sizeof state_dir, "%s/state", dir);
	c.state_dir = state_dir;
	char *bdir = NULL, *bfile = NULL;
	assert_int_equal(trust_bundle_make(&c, root, NULL, 0, &bdir, &bfile, &e), 0);
	FILE *fp = fopen(bfile, "r");
	assert_non_null(fp);
	char got[512] = "";
	size_t n = fread(got, 1, sizeof got - 1, fp);
	fclose(fp);
	got[n] = '\0';
	snprintf(want, sizeof want,
		 "IMAGE\n\n# agentjail: the deployer's CA certificates (trust_ca) and the sandbox's "
		 "egress CA (secrets)\n%s",
		 cert);
	assert_string_equal(got, want);
	struct stat st;
	assert_int_equal(stat(bfile, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(stat(bdir, &st), 0);
	free(bfile);
	char *gone = strdup(bdir);
	trust_bundle_remove(bdir);
	assert_int_equal(stat(gone, &st), -1);
	free(gone);
	/* A bundle directory another user could write: refused, never used. */
	char base_dir[128];
	snprintf(base_dir, sizeof base_dir, "%s-trust", state_dir);
	assert_int_equal(chmod(base_dir, 0777), 0);
	assert_int_equal(trust_bundle_make(&c, root, NULL, 0, &bdir, &bfile, &e), -EPERM);
	assert_true(strstr(e.message, "writable by no one else"));
	assert_int_equal(chmod(base_dir, 0700), 0);
	/* A view without a bundle: named, with how to get one. */
	unlink(base);
	assert_int_equal(trust_bundle_make(&c, root, NULL, 0, &bdir, &bfile, &e), -ENOENT);
	assert_true(strstr(e.message, "trust_ca: the sandbox's view has no CA bundle to add to"));
	assert_null(bdir);
	snprintf(cmd, sizeof cmd, "rm -rf %s %s-trust", dir, state_dir);
	assert_int_equal(system(cmd), 0);
}

static void names_round_trip(void **state)
{
	(void)state;
	for (int t = 0; t < AJ_TIER_COUNT; t++) {
		enum aj_tier got;
		assert_int_equal(aj_tier_parse(aj_tier_name((enum aj_tier)t), &got), 0);
		assert_int_equal(got, t);
	}
	enum aj_tier got;
	assert_int_equal(aj_tier_parse("vm", &got), -EINVAL);
	assert_int_equal(aj_tier_parse(NULL, &got), -EINVAL);
	assert_string_equal(aj_status_name(AJ_STATUS_OUTPUT_LIMIT), "output_limit");
	assert_string_equal(aj_status_name(AJ_STATUS_SANDBOX_ERROR), "sandbox_error");
	assert_string_equal(aj_status_name((enum aj_status)99), "unknown");
}

/* A tier that cannot run here refuses to open, saying why, and check says
 * the same: the docker tier with no engine behind its socket. */
static void unavailable_tier_says_why(void **state)
{
	(void)state;
	struct aj_config c;
	struct aj_sandbox *sb = NULL;
	struct aj_error e;
	aj_config_init(&c);
	c.tier = AJ_TIER_DOCKER;
	c.docker_socket = "/nonexistent/docker.sock";
	assert_int_equal(aj_open(&c, &sb, &e), -ENOENT);
	assert_null(sb);
	assert_string_equal(e.message, "docker: cannot reach the engine at /nonexistent/docker.sock: "
				       "connect: ENOENT (is dockerd running?)");
	assert_int_equal(aj_check(AJ_TIER_DOCKER, &c, &e), -ENOENT);
	assert_true(strstr(e.message, "is dockerd running?") != NULL);
}

/* ---- output capping ---- */

static void capture_caps_and_flags(void **state)
{
	(void)state;
	struct capture c;
	capture_init(&c, 10);
	assert_false(capture_append(&c, "hello", 5));
	assert_false(c.truncated);
	assert_false(capture_append(&c, "world", 5));
	assert_false(c.truncated);
	assert_true(capture_append(&c, "!", 1));
	assert_true(c.truncated);
	size_t len;
	char *s = capture_take(&c, &len);
	assert_int_equal(len, 10);
	assert_string_equal(s, "helloworld");
	free(s);
	capture_free(&c);
}

static void capture_large_stream_is_capped(void **state)
{
	(void)state;
	struct capture c;
	char chunk[4000];
	memset(chunk, 'x', sizeof chunk);
	capture_init(&c, 100000);
	bool over = false;
	for (int i = 0; i < 100 && !over; i++)
		over = capture_append(&c, chunk, sizeof chunk);
	assert_true(over);
	assert_int_equal(c.len, 100000);
	/* Memory held never exceeds the cap. */
	assert_true(c.alloc <= 100000);
	size_t len;
	char *s = capture_take(&c, &len);
	assert_int_equal(len, 100000);
	assert_int_equal(s[len], '\0');
	free(s);
}

/* A window keeps the last bytes: what falls off the front is dropped and
 * flagged, in every way it can fall (a part, a whole, more than a whole). */
static void capture_tail_keeps_the_last_bytes(void **state)
{
	(void)state;
	struct capture c;
	capture_init(&c, 10);
	capture_append_tail(&c, "0123456789", 10);
	assert_false(c.truncated);
	capture_append_tail(&c, "abc", 3);
	assert_true(c.truncated);
	size_t len;
	char *s = capture_take(&c, &len);
	assert_int_equal(len, 10);
	assert_string_equal(s, "3456789abc");
	free(s);
	capture_init(&c, 4);
	capture_append_tail(&c, "ab", 2);
	capture_append_tail(&c, "wxyz", 4);
	assert_true(c.truncated);
	s = capture_take(&c, &len);
	assert_string_equal(s, "wxyz");
	free(s);
	capture_init(&c, 4);
	capture_append_tail(&c, "0123456789", 10);
	assert_true(c.truncated);
	s = capture_take(&c, &len);
	assert_int_equal(len, 4);
	assert_string_equal(s, "6789");
	free(s);
	capture_free(&c);
}

static void capture_empty_gives_empty_string(void **state)
{
	(void)state;
	struct capture c;
	capture_init(&c, 10);
	size_t len = 99;
	char *s = capture_take(&c, &len);
	assert_non_null(s);
	assert_int_equal(len, 0);
	assert_string_equal(s, "");
	free(s);
}

/* ---- UTF-8 repair ---- */

static void check_repair(const char *in, size_t n, const char *want)
{
	size_t len;
	char *out = utf8_repair(in, n, &len);
	assert_non_null(out);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(out, want, len);
	free(out);
}

#define FFFD "\xEF\xBF\xBD"

static void utf8_valid_passes_through(void **state)
{
	(void)state;
	const char *s = "plain ascii, caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80";
	check_repair(s, strlen(s), s);
	check_repair("", 0, "");
}

static void utf8_invalid_becomes_replacement(void **state)
{
	(void)state;
	check_repair("a\xFF" "b", 3, "a" FFFD "b");
	check_repair("\x80\x80", 2, FFFD FFFD);                 /* lone continuations */
	check_repair("\xC0\xAF", 2, FFFD FFFD);                 /* overlong '/' */
	check_repair("\xE0\x80\xAF", 3, FFFD FFFD FFFD);        /* overlong, 3 bytes */
	check_repair("\xED\xA0\x80", 3, FFFD FFFD FFFD);        /* a surrogate */
	check_repair("\xF4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD); /* above U+10FFFF */
	check_repair("\xE2\x82", 2, FFFD);                      /* cut short at the end */
	check_repair("\xE2\x82" "A", 3, FFFD "A");              /* cut short mid-text */
	check_repair("\xF0\x9F\x98", 3, FFFD);
}

/* ---- JSON ---- */

static json_t *parse(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, JSON_ALLOW_NUL, &e);
	if (!j)
		fail_msg("invalid JSON (%s): %s", e.text, s);
	return j;
}

static void json_has_every_contract_field(void **state)
{
	(void)state;
	struct aj_result r;
	memset(&r, 0, sizeof r);
	r.status = AJ_STATUS_ERROR;
	r.has_exit_code = true;
	r.exit_code = 3;
	r.stdout_buf = "out\n";
	r.stdout_len = 4;
	r.stderr_buf = "err\n";
	r.stderr_len = 4;
	r.wall_ms = 14.2345;
	r.cpu_ms = 9.81;
	r.memory_kb = 9120;
	char *s = aj_result_to_json(&r, AJ_TIER_PROCESS);
	assert_non_null(s);
	/* The exact shape docs/design.md shows, in its order. */
	assert_string_equal(s, "{\"tier\":\"process\",\"status\":\"error\",\"exit_code\":3,"
			       "\"signal\":null,\"stdout\":\"out\\n\",\"stderr\":\"err\\n\","
			       "\"stdout_truncated\":false,\"stderr_truncated\":false,"
			       "\"wall_ms\":14.2,\"cpu_ms\":9.8,\"memory_kb\":9120,"
			       "\"message\":null}");
	free(s);
}

static void json_repairs_binary_output(void **state)
{
	(void)state;
	struct aj_result r;
	memset(&r, 0, sizeof r);
	r.status = AJ_STATUS_KILLED;
	r.signal = SIGSEGV;
	char bin[] = {'a', (char)0xff, '\0', 'b', '"', '\n'};
	r.stdout_buf = bin;
	r.stdout_len = sizeof bin;
	r.stderr_buf = "";
	r.message = "killed by signal 11 (SEGV) \xff";
	char *s = aj_result_to_json(&r, AJ_TIER_PROCESS);
	assert_non_null(s);
	json_t *j = parse(s);
	json_t *out = json_object_get(j, "stdout");
	assert_int_equal(json_string_length(out), 8); /* a, FFFD (3), NUL, b, ", \n */
	assert_memory_equal(json_string_value(out), "a" FFFD "\0b\"\n", 8);
	assert_true(json_is_null(json_object_get(j, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(j, "signal")), SIGSEGV);
	assert_true(contains(json_string_value(json_object_get(j, "message")), FFFD));
	json_decref(j);
	free(s);
}

/* With egress rules the proxy's decision log rides along as a nested
 * object (every front end that prints a result gets it); without, the
 * contract's keys stay exactly as they were (json_has_every_contract_field). */
static void json_carries_the_egress_log(void **state)
{
	(void)state;
	struct aj_result r;
	memset(&r, 0, sizeof r);
	r.status = AJ_STATUS_OK;
	r.has_exit_code = true;
	char log[] = "{\"connections\":[{\"host\":\"pypi.org\",\"port\":443,\"allowed\":false,"
		     "\"reason\":\"no rule\"}],\"allowed\":0,\"denied\":1}";
	r.egress_log = log;
	char *s = aj_result_to_json(&r, AJ_TIER_PROCESS);
	assert_non_null(s);
	json_t *j = parse(s);
	json_t *e = json_object_get(j, "egress");
	assert_true(json_is_object(e));
	assert_int_equal(json_integer_value(json_object_get(e, "denied")), 1);
	json_t *c = json_array_get(json_object_get(e, "connections"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "host")), "pypi.org");
	json_decref(j);
	free(s);
	r.egress_log = NULL;
	s = aj_result_to_json(&r, AJ_TIER_PROCESS);
	assert_false(contains(s, "egress"));
	free(s);
}

/* The model's text names a cap that cut a transfer and the refusals with
 * their reasons, so it does not retry what the rules forbid. */
static void tool_text_names_egress_refusals_and_caps(void **state)
{
	(void)state;
	struct aj_result r;
	memset(&r, 0, sizeof r);
	r.status = AJ_STATUS_OK;
	r.has_exit_code = true;
	char log[] = "{\"connections\":[{\"host\":\"files.example\",\"port\":443,"
		     "\"allowed\":true,\"reason\":\"allow-host files.example\"},"
		     "{\"host\":\"evil.example\",\"port\":80,\"allowed\":false,"
		     "\"reason\":\"no allow-host rule names evil.example\"},"
		     "{\"host\":\"10.1.0.5\",\"port\":5432,\"allowed\":true,"
		     "\"verdict\":\"failed\",\"failure\":\"ECONNREFUSED\","
		     "\"reason\":\"allow-cidr 10.1.0.0/16:5432; connect: Connection refused\"}],"
		     "\"limit\":\"in_mb: the sandbox received 1 MiB\"}";
	r.egress_log = log;
	char *t = aj_result_text(&r);
	/* Allowed, yet not reached: the destination's doing, said as such. */
	assert_true(contains(t, "\negress: 10.1.0.5:5432 was allowed but not reached: allow-cidr "
				"10.1.0.0/16:5432; connect: Connection refused"));
	assert_true(contains(t, "\negress: in_mb: the sandbox received 1 MiB"));
	assert_true(contains(t, "\negress: refused evil.example:80: no allow-host rule names"));
	assert_false(contains(t, "refused files.example"));
	free(t);
	r.egress_log = NULL;
	t = aj_result_text(&r);
	assert_false(contains(t, "egress"));
	free(t);
}

/* ---- classifying an ending ---- */

/* ---- the run_python tool's words (src/api/tool.c) ---- */

static void tool_arguments_take_only_code(void **state)
{
	(void)state;
	char *code;
	size_t n;
	struct aj_error err = {0};
	const char *ok = "{\"code\": \"print(1)\\n\"}";
	assert_int_equal(aj_tool_arguments(ok, strlen(ok), &code, &n, &err), 0);
	assert_string_equal(code, "print(1)\n");
	assert_int_equal(n, 9);
	aj_free(code);
	/* A NUL inside the code reaches the run, which names its offset. */
	const char *nul = "{\"code\": \"a\\u0000b\"}";
	assert_int_equal(aj_tool_arguments(nul, strlen(nul), &code, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(code[1], '\0');
	aj_free(code);
	static const char *const bad[][2] = {
		{"{\"code\": 1}", "'code' must be a string"},
		{"{\"code\": \"x\", \"timeout\": 99}", "unexpected argument 'timeout'"},
		{"[1]", "must be an object"},
		{"{\"code\": \"x\", \"code\": \"y\"}", "not a JSON object"},
		{"not json", "not a JSON object"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		code = (char *)"untouched";
		assert_int_equal(aj_tool_arguments(bad[i][0], strlen(bad[i][0]), &code, &n, &err),
				 -EINVAL);
		assert_null(code);
		assert_non_null(strstr(err.message, "Invalid arguments for run_python: "));
		assert_non_null(strstr(err.message, bad[i][1]));
	}
	assert_int_equal(aj_tool_arguments(NULL, 0, &code, &n, &err), -EINVAL);
}

static void result_text_reads_well(void **state)
{
	(void)state;
	struct aj_result r;
	result_init(&r);
	r.status = AJ_STATUS_ERROR;
	r.has_exit_code = true;
	r.exit_code = 2;
	r.stdout_buf = strdup("a\xff\n");
	r.stdout_len = 3;
	r.stdout_truncated = true;
	result_set_message(&r, "note: something");
	char *t = aj_result_text(&r);
	assert_string_equal(t, "status: error (exit code 2)\nnote: something\n"
			       "--- stdout (cut at the output limit) ---\na\xef\xbf\xbd\n\n"
			       "--- stderr ---\n(empty)");
	aj_free(t);
	aj_result_free(&r);
}

static void tool_definition_carries_the_limits(void **state)
{
	(void)state;
	struct aj_config c;
	aj_config_init(&c);
	c.limits.wall_sec = 7;
	for (int session = 0; session < 2; session++) {
		char *d = aj_tool_definition(&c, session);
		json_error_t e;
		json_t *def = json_loads(d, 0, &e);
		assert_non_null(def);
		assert_string_equal(json_string_value(json_object_get(def, "name")), "run_python");
		const char *desc = json_string_value(json_object_get(def, "description"));
		assert_non_null(strstr(desc, "7 s of wall-clock time"));
		assert_non_null(strstr(desc, session ? "persistent" : "clean state"));
		json_t *in = json_object_get(def, "inputSchema");
		assert_true(json_is_false(json_object_get(in, "additionalProperties")));
		json_decref(def);
		aj_free(d);
	}
	char *note = aj_session_replaced_note("idle for 300 s");
	assert_non_null(strstr(note, "(idle for 300 s)"));
	aj_free(note);
}

/* run_command is offered only where the deployer turned it on, and only
 * with sessions; its words carry the session's limits and what is there. */
static void run_command_only_where_turned_on(void **state)
{
	(void)state;
	struct aj_config c;
	aj_config_init(&c);
	c.limits.wall_sec = 7;
	unsigned both = TOOL_BIT(TOOL_RUN_PYTHON) | TOOL_BIT(TOOL_RUN_COMMAND);
	static const struct {
		bool sessions;
		unsigned tools;
		const char *names;
	} cases[] = {
		{false, TOOLS_DEFAULT, "run_python"},
		{true, TOOLS_DEFAULT, "run_python upload_file download_file list_files"},
		{false, TOOL_BIT(TOOL_RUN_PYTHON) | TOOL_BIT(TOOL_RUN_COMMAND), "run_python"},
		{true, TOOL_BIT(TOOL_RUN_PYTHON) | TOOL_BIT(TOOL_RUN_COMMAND),
		 "run_python run_command upload_file download_file list_files"},
		{true, TOOL_BIT(TOOL_RUN_COMMAND), "run_command upload_file download_file list_files"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *list = tool_list(&c, cases[i].sessions, cases[i].tools, NULL);
		char names[200] = "";
		size_t k;
		json_t *t;
		json_array_foreach(list, k, t)
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
				 k ? " " : "", json_string_value(json_object_get(t, "name")));
		assert_string_equal(names, cases[i].names);
		/* A tool is called by name exactly when it is listed. */
		enum tool_kind kind;
		bool found = !tool_find("run_command", cases[i].sessions, cases[i].tools, &kind);
		assert_int_equal(found, strstr(cases[i].names, "run_command") != NULL);
		found = !tool_find("run_python", cases[i].sessions, cases[i].tools, &kind);
		assert_int_equal(found, strstr(cases[i].names, "run_python") != NULL);
		if (cases[i].tools == both && cases[i].sessions) {
			const char *desc = json_string_value(
				json_object_get(json_array_get(list, 1), "description"));
			assert_non_null(strstr(desc, "/bin/sh -c, a POSIX shell"));
			assert_non_null(strstr(desc, "7 s of wall-clock time"));
			assert_non_null(strstr(desc, "There is no network."));
		}
		json_decref(list);
	}
	assert_int_equal(tool_bit_named("run_command", 11), TOOL_BIT(TOOL_RUN_COMMAND));
	assert_int_equal(tool_bit_named("upload_file", 11), 0);
	assert_int_equal(tool_bit_named("run_python,", 10), TOOL_BIT(TOOL_RUN_PYTHON));
}

static void classify(struct outcome *o, const char *err_text, struct aj_result *r)
{
	struct aj_limits l = {.wall_sec = 10, .cpu_sec = 10, .memory_mb = 256, .output_kb = 1};
	struct capture out, err;
	capture_init(&out, 1024);
	capture_init(&err, 1024);
	capture_append(&out, "o", 1);
	if (err_text)
		capture_append(&err, err_text, strlen(err_text));
	memset(r, 0, sizeof *r);
	outcome_to_result(o, &l, &out, &err, r);
	capture_free(&out);
	capture_free(&err);
}

static struct outcome exited(int wstatus, int64_t cpu_us)
{
	struct outcome o;
	memset(&o, 0, sizeof o);
	o.exited_report = true;
	o.report.kind = REPORT_EXITED;
	o.report.wstatus = wstatus;
	o.report.cpu_us = cpu_us;
	o.report.maxrss_kb = 9000;
	o.wall_ms = 12.5;
	return o;
}

static void classify_exits(void **state)
{
	(void)state;
	struct aj_result r;
	struct outcome o = exited(0, 5000);
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_OK);
	assert_int_equal(r.exit_code, 0);
	assert_true(r.has_exit_code);
	assert_true(r.cpu_ms == 5.0);
	assert_int_equal(r.memory_kb, 9000);
	assert_string_equal(r.stdout_buf, "o");
	assert_null(r.message);
	aj_result_free(&r);

	o = exited(3 << 8, 0);
	classify(&o, "Traceback...\nValueError: x\n", &r);
	assert_int_equal(r.status, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 3);
	aj_result_free(&r);

	/* A MemoryError, any subclass, ends the interpreter with Python's
	 * 1 and its verdict pipe's byte (src/core/launch.py), which init
	 * reports: memory, and the exit code the program's own. */
	o = exited(1 << 8, 0);
	o.report.flags = REPORT_MEMORY_ERROR;
	classify(&o, "Traceback (most recent call last):\n  ...\n_ArrayMemoryError: x\n", &r);
	assert_int_equal(r.status, AJ_STATUS_MEMORY);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 1);
	assert_true(contains(r.message, "256 MiB"));
	aj_result_free(&r);

	/* A program that exits 121 itself (the code that once meant memory)
	 * keeps its own exit and is an error. */
	o = exited(121 << 8, 0);
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 121);
	aj_result_free(&r);

	/* The verdict with exit 0: the program did not end by it. */
	o = exited(0, 0);
	o.report.flags = REPORT_MEMORY_ERROR;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_OK);
	aj_result_free(&r);

	/* The words on stderr decide nothing: exit 1 is an error. */
	o = exited(1 << 8, 0);
	classify(&o, "Traceback (most recent call last):\n  ...\nMemoryError\n", &r);
	assert_int_equal(r.status, AJ_STATUS_ERROR);
	aj_result_free(&r);
}

/* The one memory rule: the kernel's OOM kills make any end but exit 0
 * memory; a stop by the host stays the host's; no OOM kill is hidden by
 * an exit code. */
static void classify_oom_kills(void **state)
{
	(void)state;
	struct aj_result r;
	struct outcome o = exited(SIGKILL, 0);
	o.oom_kills = 2;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_MEMORY);
	assert_true(contains(r.message, "OOM killer ended 2 processes"));
	aj_result_free(&r);

	o = exited(3 << 8, 0);
	o.oom_kills = 1;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_MEMORY);
	assert_int_equal(r.exit_code, 3);
	aj_result_free(&r);

	o = exited(0, 0);
	o.oom_kills = 1;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_OK);
	aj_result_free(&r);

	o = exited(SIGKILL, 0);
	o.oom_kills = 1;
	o.cancelled = true;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_KILLED);
	aj_result_free(&r);

	/* No word from init, and the OOM killer at work: memory, not a
	 * sandbox_error (gVisor's sentry, docker's PID 1). */
	memset(&o, 0, sizeof o);
	o.oom_kills = 1;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_MEMORY);
	aj_result_free(&r);
}

static void classify_signals(void **state)
{
	(void)state;
	struct aj_result r;
	struct outcome o = exited(SIGXCPU, 10000000);
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_TIMEOUT);
	assert_true(contains(r.message, "CPU"));
	aj_result_free(&r);

	o = exited(SIGKILL, 10500000);  /* past the soft limit, short of the hard one */
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_KILLED);
	aj_result_free(&r);

	o = exited(SIGKILL, 11000000);  /* the hard CPU limit, soft + 1 s */
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_TIMEOUT);
	aj_result_free(&r);

	o = exited(SIGKILL, 100);       /* someone else's SIGKILL */
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_KILLED);
	assert_int_equal(r.signal, SIGKILL);
	assert_false(r.has_exit_code);
	aj_result_free(&r);

	o = exited(SIGSEGV, 100);
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_KILLED);
	assert_true(contains(r.message, "SEGV"));
	aj_result_free(&r);
}

/* A run the host stopped before it ended: status and words, SIGKILL, no
 * exit code of its own. */
static void assert_stopped_by_the_host(struct aj_result *r, enum aj_status status,
				       const char *words)
{
	assert_int_equal(r->status, status);
	assert_true(contains(r->message, words));
	assert_int_equal(r->signal, SIGKILL);
	assert_false(r->has_exit_code);
	aj_result_free(r);
}

static void classify_supervisor_verdicts(void **state)
{
	(void)state;
	struct aj_result r;
	struct outcome o = exited(SIGKILL, 100);
	o.timed_out = true;
	classify(&o, NULL, &r);
	assert_stopped_by_the_host(&r, AJ_STATUS_TIMEOUT, "wall-clock limit of 10 s");

	o = exited(SIGKILL, 100);
	o.output_overflow = true;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_OUTPUT_LIMIT);
	assert_true(contains(r.message, "1 KiB"));
	aj_result_free(&r);

	/* A program that had already exited when the flood was noticed keeps
	 * its own exit code: no SIGKILL is reported that never happened. */
	o = exited(7 << 8, 100);
	o.output_overflow = true;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_OUTPUT_LIMIT);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 7);
	assert_int_equal(r.signal, 0);
	aj_result_free(&r);

	/* A setup failure outranks everything: the run never really ran. */
	memset(&o, 0, sizeof o);
	o.setup_failed = true;
	snprintf(o.setup_message, sizeof o.setup_message, "network namespace: unshare: EPERM");
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_SANDBOX_ERROR);
	assert_string_equal(r.message, "network namespace: unshare: EPERM");
	aj_result_free(&r);

	/* init vanished without a word: the sandbox's fault, not the code's. */
	memset(&o, 0, sizeof o);
	o.init_wstatus = SIGKILL;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_SANDBOX_ERROR);
	assert_true(contains(r.message, "without reporting"));
	aj_result_free(&r);

	/* What the tier saw of such an end (gvisor: runsc's word) is the
	 * message, by the same rule. */
	memset(&o, 0, sizeof o);
	o.unknown_end = "gvisor: the sandbox ended without a report (runsc exit code 3)";
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_SANDBOX_ERROR);
	assert_string_equal(r.message, o.unknown_end);
	aj_result_free(&r);
}

/* The host's own count of the CPU time (gvisor's cgroup, where no
 * RLIMIT_CPU works) stops a run as the wall clock does: timeout, by the
 * status rules, not by a tier setting it beside them. */
static void classify_cpu_stopped_by_the_host(void **state)
{
	(void)state;
	struct aj_result r;
	struct outcome o;
	memset(&o, 0, sizeof o);
	o.cpu_stopped = true;
	o.unknown_end = "gvisor: the sandbox ended without a report";
	classify(&o, NULL, &r);
	assert_stopped_by_the_host(&r, AJ_STATUS_TIMEOUT, "CPU time limit of 10 s reached");

	/* A flood still outranks it; a cancel too (rule S3). */
	o.output_overflow = true;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_OUTPUT_LIMIT);
	aj_result_free(&r);
	o.output_overflow = false;
	o.cancelled = true;
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_KILLED);
	aj_result_free(&r);

	/* A session interpreter's reply past its cap is rule 1's. */
	o = exited(SIGKILL, 100);
	outcome_reply_too_long(&o, 4096);
	classify(&o, NULL, &r);
	assert_int_equal(r.status, AJ_STATUS_SANDBOX_ERROR);
	assert_true(contains(r.message, "reply passed 4096 bytes"));
	aj_result_free(&r);
}

/* ---- what a sandbox's inside can forge ---- */

/* A session's reply line is the session's own to write: one that claims
 * more images than session.images, or a negative count of dropped ones,
 * still gets the caps (found by fuzz/fuzz_session_reply.c). */
static void session_reply_holds_the_image_caps(void **state)
{
	(void)state;
	struct aj_config cfg;
	aj_config_init(&cfg);
	cfg.session.images = 1;
	cfg.session.image_kb = 1;
	static const char line[] =
		"{\"seq\":1,\"exit\":0,\"dropped\":4,\"images\":["
		"{\"name\":\"a.png\",\"mime\":\"image/png\",\"data\":\"aGVsbG8=\"},"
		"{\"name\":\"b.png\",\"mime\":\"image/png\",\"data\":\"aGVsbG8=\"},"
		"{\"name\":\"c.png\",\"mime\":\"image/png\",\"data\":\"aGVsbG8=\"}]}";
	struct aj_result res;
	result_init(&res);
	json_t *reply = session_reply_json(line, sizeof line - 1, &res);
	assert_non_null(reply);
	session_run_reply(reply, &cfg, &res);
	json_decref(reply);
	assert_int_equal(res.status, AJ_STATUS_OK);
	assert_int_equal(res.image_count, 1);
	assert_string_equal(res.images[0].name, "a.png");
	assert_int_equal(res.images_dropped, 2 + 4);
	aj_result_free(&res);

	static const char negative[] = "{\"seq\":2,\"exit\":0,\"images\":[],\"dropped\":-1}";
	result_init(&res);
	reply = session_reply_json(negative, sizeof negative - 1, &res);
	session_run_reply(reply, &cfg, &res);
	json_decref(reply);
	assert_int_equal(res.images_dropped, 0);
	aj_result_free(&res);
}

/* One VM_OUTPUT's payload: the head, then n bytes of fill. */
static void *output_frame(uint32_t stream, uint64_t seq, size_t n, char fill, uint32_t *len)
{
	struct vm_output_head h = {.stream = stream, .seq = seq};
	char *p = malloc(sizeof h + n + 1);
	assert_non_null(p);
	memcpy(p, &h, sizeof h);
	memset(p + sizeof h, fill, n);
	*len = (uint32_t)(sizeof h + n);
	return p;
}

/* Takes one VM_OUTPUT frame into v: vm_output_take's answer, res freed. */
static int take_output(struct vm_output *v, uint32_t stream, uint64_t seq, size_t n,
		       char fill, char *message, size_t size)
{
	uint32_t len;
	void *p = output_frame(stream, seq, n, fill, &len);
	struct aj_result res;
	result_init(&res);
	int rc = vm_output_take(v, p, len, &res);
	snprintf(message, size, "%s", res.message ? res.message : "");
	aj_result_free(&res);
	free(p);
	return rc;
}

/* A microvm guest taken over by its program could send more output than
 * the cap its agent holds: the frame that passes it fails the run. */
static void microvm_output_past_the_cap_is_refused(void **state)
{
	(void)state;
	char why[256];
	struct vm_output v;
	vm_output_init(&v, 1024, 0);
	assert_int_equal(take_output(&v, 0, 0, 1000, 'x', why, sizeof why), 0);
	assert_int_equal(take_output(&v, 0, 0, 24, 'x', why, sizeof why), 0);
	assert_int_equal(take_output(&v, 1, 0, 1024, 'y', why, sizeof why), 0);
	assert_int_equal(take_output(&v, 0, 0, 1, 'x', why, sizeof why), -EPROTO);
	assert_string_equal(why, "microvm: the guest's stdout passed the output cap of 1024 bytes");
	assert_int_equal(take_output(&v, 1, 0, 1, 'y', why, sizeof why), -EPROTO);
	assert_string_equal(why, "microvm: the guest's stderr passed the output cap of 1024 bytes");
	/* What was refused was never kept. */
	assert_int_equal(v.cap[0].len, 1024);
	assert_int_equal(v.cap[1].len, 1024);
	vm_output_free(&v);
}

/* Each rule of an output frame, broken once, names itself; a good frame
 * between them is kept, in order. */
static void microvm_output_frame_rules(void **state)
{
	(void)state;
	char why[256];
	struct vm_output v;
	vm_output_init(&v, 1 << 20, 7);
	assert_int_equal(take_output(&v, 0, 7, 3, 'a', why, sizeof why), 0);
	assert_int_equal(take_output(&v, 0, 7, 0, 'a', why, sizeof why), -EPROTO);
	assert_string_equal(why, "microvm: the guest's output frame is malformed (16 bytes; 1 to "
				 "65536 of output in one)");
	assert_int_equal(take_output(&v, 0, 7, VM_OUTPUT_MAX + 1, 'a', why, sizeof why), -EPROTO);
	assert_string_equal(why, "microvm: the guest's output frame is malformed (65553 bytes; 1 "
				 "to 65536 of output in one)");
	assert_int_equal(take_output(&v, 2, 7, 1, 'a', why, sizeof why), -EPROTO);
	assert_string_equal(why, "microvm: the guest's output frame names stream 2 (reserved 0)");
	/* A late piece of the last call, after its result. */
	assert_int_equal(take_output(&v, 0, 6, 1, 'a', why, sizeof why), -EPROTO);
	assert_string_equal(why, "microvm: the guest's output frame is of call 6, not of this "
				 "one (7)");
	struct aj_result res;
	result_init(&res);
	assert_int_equal(vm_output_take(&v, "short", 5, &res), -EPROTO);
	assert_string_equal(res.message, "microvm: the guest's output frame is malformed (5 "
					 "bytes; 1 to 65536 of output in one)");
	aj_result_free(&res);
	assert_int_equal(take_output(&v, 0, 7, VM_OUTPUT_MAX, 'b', why, sizeof why), 0);
	assert_int_equal(v.cap[0].len, 3 + VM_OUTPUT_MAX);
	assert_memory_equal(v.cap[0].buf, "aaab", 4);
	vm_output_free(&v);
}

/* The result's stream lengths must be what the output frames brought; the
 * streams themselves come from the frames. */
static void microvm_result_counts_the_output_frames(void **state)
{
	(void)state;
	struct aj_limits l = {.output_kb = 1, .memory_mb = 256, .wall_sec = 10, .cpu_sec = 10};
	char why[256];
	for (uint32_t said = 5; said <= 6; said++) {
		struct vm_output v;
		vm_output_init(&v, 1024, 0);
		assert_int_equal(take_output(&v, 0, 0, 2, 'h', why, sizeof why), 0);
		assert_int_equal(take_output(&v, 0, 0, 3, 'i', why, sizeof why), 0);
		assert_int_equal(take_output(&v, 1, 0, 1, 'e', why, sizeof why), 0);
		struct vm_result r = {.flags = VM_RUN_ENDED, .stdout_len = said, .stderr_len = 1};
		struct aj_result res;
		result_init(&res);
		assert_int_equal(vm_run_answer(VM_RESULT, &r, sizeof r, &l, &v, &res), 0);
		if (said == 5) {
			assert_int_equal(res.status, AJ_STATUS_OK);
			assert_string_equal(res.stdout_buf, "hhiii");
			assert_string_equal(res.stderr_buf, "e");
		} else {
			assert_int_equal(res.status, AJ_STATUS_SANDBOX_ERROR);
			assert_string_equal(res.message, "microvm: the guest's answer is malformed");
		}
		aj_result_free(&res);
		vm_output_free(&v);
	}

	/* A call's result too. */
	struct aj_config cfg;
	aj_config_init(&cfg);
	const struct session_call call = {.request = "{}\n", .len = 3, .seq = 3, .cancel_fd = -1,
					  .reply_max = 64};
	for (uint32_t said = 2; said <= 3; said++) {
		struct vm_output v;
		vm_output_init(&v, (size_t)cfg.limits.output_kb * 1024, 3);
		assert_int_equal(take_output(&v, 1, 3, 2, 'w', why, sizeof why), 0);
		static const char reply[] = "{\"seq\":3}";
		struct vm_call_result r = {.flags = VM_CALL_REPLIED, .stderr_len = said,
					   .reply_len = sizeof reply - 1, .oom_kills = 2};
		char frame[sizeof r + sizeof reply];
		memcpy(frame, &r, sizeof r);
		memcpy(frame + sizeof r, reply, sizeof reply - 1);
		struct aj_result res;
		struct session_answer ans;
		result_init(&res);
		memset(&ans, 0, sizeof ans);
		uint64_t ooms = 9;
		int rc = vm_call_answer(VM_CALL_RESULT, frame, (uint32_t)(sizeof r + sizeof reply - 1),
					&cfg, &call, 1.0, &v, &res, &ans, &ooms);
		if (said == 2) {
			assert_int_equal(rc, 0);
			/* A replied call's OOM kills are kept for a command's end. */
			assert_int_equal(ooms, 2);
			assert_string_equal(res.stderr_buf, "ww");
			assert_string_equal(ans.reply, reply);
		} else {
			assert_int_equal(rc, -EPROTO);
			assert_string_equal(res.message, "microvm: the guest's answer is malformed");
		}
		free(ans.reply);
		aj_result_free(&res);
		vm_output_free(&v);
	}
}

/* issue 24 item 5, fuzz/corpus/fuzz_vm_channel/regression_guest_chooses_sandbox_error:
 * a guest taken over by its program answered a run with a status of its own
 * choosing (sandbox_error, with no words). The host decides the status from
 * the guest's facts; a sandbox_error only ever carries the host's prefix. */
static void microvm_guest_cannot_choose_the_status(void **state)
{
	(void)state;
	static const unsigned char stream[] = {
		0x03, 0x00, 0x00, 0x00, 0x38, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0xe9, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x84, 0x03, 0x00, 0x00,
		0x00, 0x00, 0xff, 0xff, 0x28, 0x23, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	struct aj_limits l = {.output_kb = 16, .memory_mb = 256, .wall_sec = 10, .cpu_sec = 10};
	struct aj_result res;
	result_init(&res);
	struct vm_output v;
	vm_output_init(&v, (size_t)l.output_kb * 1024, 0);
	vm_run_answer(VM_RESULT, stream + 8, 0x38, &l, &v, &res);
	if (res.status == AJ_STATUS_SANDBOX_ERROR) {
		assert_non_null(res.message);
		assert_true(strncmp(res.message, "microvm: ", 9) == 0);
	}
	aj_result_free(&res);

	/* A guest's words for a failed setup are quoted, under the host's
	 * prefix, never the message on their own. */
	const char words[] = "killed by signal 9 (KILL)";
	struct vm_result r = {.flags = VM_RUN_SETUP_FAILED, .message_len = sizeof words - 1};
	char frame[sizeof r + sizeof words];
	memcpy(frame, &r, sizeof r);
	memcpy(frame + sizeof r, words, sizeof words - 1);
	result_init(&res);
	vm_run_answer(VM_RESULT, frame, (uint32_t)(sizeof r + sizeof words - 1), &l, &v, &res);
	assert_int_equal(res.status, AJ_STATUS_SANDBOX_ERROR);
	assert_string_equal(res.message,
			    "microvm: the guest could not prepare the run: killed by signal 9 (KILL)");
	aj_result_free(&res);

	/* The zygote's verdict pipe is a fact: memory, with the program's
	 * own exit code, as on every tier. */
	struct vm_result m = {.flags = VM_RUN_ENDED | VM_RUN_MEMORY_ERROR, .wstatus = 1 << 8};
	result_init(&res);
	vm_run_answer(VM_RESULT, &m, sizeof m, &l, &v, &res);
	assert_int_equal(res.status, AJ_STATUS_MEMORY);
	assert_int_equal(res.exit_code, 1);
	aj_result_free(&res);
	/* Exit 121 without it is the program's own error. */
	struct vm_result e = {.flags = VM_RUN_ENDED, .wstatus = 121 << 8};
	result_init(&res);
	vm_run_answer(VM_RESULT, &e, sizeof e, &l, &v, &res);
	assert_int_equal(res.status, AJ_STATUS_ERROR);
	assert_int_equal(res.exit_code, 121);
	aj_result_free(&res);
	vm_output_free(&v);
}

/* A session cell's reply is read with the same memory rule: its
 * "memory_error" beside the cell's own exit code; 121 alone is an error. */
static void session_reply_memory_error_exit(void **state)
{
	(void)state;
	struct aj_config cfg;
	aj_config_init(&cfg);
	static const struct {
		const char *line;
		enum aj_status status;
		int exit_code;
	} cases[] = {
		{"{\"seq\":1,\"exit\":1,\"memory_error\":true,\"images\":[]}", AJ_STATUS_MEMORY, 1},
		{"{\"seq\":1,\"exit\":121,\"images\":[]}", AJ_STATUS_ERROR, 121},
		{"{\"seq\":1,\"exit\":1,\"memory_error\":1,\"images\":[]}", AJ_STATUS_ERROR, 1},
		{"{\"seq\":1,\"exit\":0,\"memory_error\":true,\"images\":[]}", AJ_STATUS_OK, 0},
		/* An exit code no process can have is a broken reply. */
		{"{\"seq\":1,\"exit\":256,\"images\":[]}", AJ_STATUS_SANDBOX_ERROR, 0},
		{"{\"seq\":1,\"exit\":-1,\"images\":[]}", AJ_STATUS_SANDBOX_ERROR, 0},
		{"{\"seq\":1,\"images\":[]}", AJ_STATUS_SANDBOX_ERROR, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct aj_result res;
		result_init(&res);
		json_t *reply = session_reply_json(cases[i].line, strlen(cases[i].line), &res);
		assert_non_null(reply);
		session_run_reply(reply, &cfg, &res);
		json_decref(reply);
		assert_int_equal(res.status, cases[i].status);
		assert_int_equal(res.exit_code, cases[i].exit_code);
		aj_result_free(&res);
	}
}

/* ---- the pool filled by a thread (src/core/pool.c) ---- */

/* Items are numbers, made in order; what the pool did is recorded here. */
struct pool_log {
	pthread_mutex_t mu;
	int calls;              /* make called */
	int fails_left;         /* the next makes that fail */
	int fails;
	unsigned want;          /* what wanted() answers */
	int unusable;           /* an item usable() refuses (0: none) */
	int destroyed[16];
	int ndestroyed;
	bool hold;              /* a make waits while it is set */
	pthread_cond_t cv;      /* hold's change */
};

static int log_make(void *ctx, void *item)
{
	struct pool_log *g = ctx;
	pthread_mutex_lock(&g->mu);
	int id = ++g->calls, rc = 0;
	pthread_cond_broadcast(&g->cv);
	while (g->hold)
		pthread_cond_wait(&g->cv, &g->mu);
	if (g->fails_left > 0) {
		g->fails_left--;
		g->fails++;
		rc = -EAGAIN;
	} else {
		memcpy(item, &id, sizeof id);
	}
	pthread_mutex_unlock(&g->mu);
	return rc;
}

static void log_destroy(void *ctx, void *item)
{
	struct pool_log *g = ctx;
	pthread_mutex_lock(&g->mu);
	assert_true(g->ndestroyed < 16);
	memcpy(&g->destroyed[g->ndestroyed++], item, sizeof(int));
	pthread_mutex_unlock(&g->mu);
}

static bool log_usable(void *ctx, const void *item)
{
	struct pool_log *g = ctx;
	int id;
	memcpy(&id, item, sizeof id);
	pthread_mutex_lock(&g->mu);
	bool ok = id != g->unusable;
	pthread_mutex_unlock(&g->mu);
	return ok;
}

static unsigned log_wanted(void *ctx)
{
	struct pool_log *g = ctx;
	pthread_mutex_lock(&g->mu);
	unsigned n = g->want;
	pthread_mutex_unlock(&g->mu);
	return n;
}

static void log_set(struct pool_log *g, int *field, int value)
{
	pthread_mutex_lock(&g->mu);
	*field = value;
	pthread_mutex_unlock(&g->mu);
}

/* Waits (however long it takes) until n items are ready: a state, not a
 * time. */
static void wait_ready(struct pool *p, unsigned n)
{
	while (pool_ready(p) != n)
		usleep(1000);
}

static const struct pool_ops log_ops = {
	.item_size = sizeof(int), .size = 2, .make = log_make, .destroy = log_destroy,
	.usable = log_usable, .wanted = log_wanted, .retry_ms = 1};

/* A pool of numbers that wants `want` of them, its thread not started. */
struct log_pool {
	struct pool_log g;
	int slots[2];
	struct pool p;
};

static void log_pool_init(struct log_pool *f, unsigned want, int fails)
{
	memset(f, 0, sizeof *f);
	f->g.want = want;
	f->g.fails_left = fails;
	pthread_mutex_init(&f->g.mu, NULL);
	pthread_cond_init(&f->g.cv, NULL);
	pool_init(&f->p, &log_ops, &f->g, f->slots);
}

static void pool_takes_newest_refills_and_ends_what_is_left(void **state)
{
	(void)state;
	struct log_pool f;
	log_pool_init(&f, 2, 0);
	struct pool_log *g = &f.g;
	struct pool *p = &f.p;
	int id = 0;
	/* Empty before the thread: the run makes its own. */
	assert_false(pool_take(p, &id));
	assert_int_equal(g->calls, 0);
	assert_int_equal(pool_start(p), 0);
	wait_ready(p, 2);
	/* The newest first: it waited least. */
	assert_true(pool_take(p, &id));
	assert_int_equal(id, 2);
	wait_ready(p, 2); /* refilled by the thread */
	pthread_mutex_lock(&g->mu);
	assert_int_equal(g->calls, 3);
	g->want = 0; /* no more refills */
	g->unusable = 3;
	pthread_mutex_unlock(&g->mu);
	/* 3 may no longer serve: skipped and ended, never handed out. */
	assert_true(pool_take(p, &id));
	assert_int_equal(id, 1);
	assert_int_equal(g->ndestroyed, 1);
	assert_int_equal(g->destroyed[0], 3);
	assert_false(pool_take(p, &id));
	/* Wanted again: the thread makes one on a kick. */
	log_set(g, (int *)&g->want, 1);
	pool_kick(p);
	wait_ready(p, 1);
	/* Stopped with an item in it: ended, nothing left behind. */
	pool_destroy(p);
	assert_int_equal(g->calls, 4);
	assert_int_equal(g->ndestroyed, 2);
	assert_int_equal(g->destroyed[1], 4);
	assert_int_equal(g->fails, 0);
	pthread_mutex_destroy(&g->mu);
}

static void pool_make_that_fails_is_tried_again(void **state)
{
	(void)state;
	struct log_pool f;
	log_pool_init(&f, 1, 2);
	struct pool_log *g = &f.g;
	struct pool *p = &f.p;
	int id = 0;
	assert_int_equal(pool_start(p), 0);
	wait_ready(p, 1);
	assert_int_equal(g->fails, 2);
	assert_int_equal(g->calls, 3);
	log_set(g, (int *)&g->want, 0); /* no refill after the take */
	assert_true(pool_take(p, &id));
	assert_int_equal(id, 3); /* the first make that worked */
	pool_destroy(p);
	/* A failed make left nothing to end; the taken one is the caller's. */
	assert_int_equal(g->ndestroyed, 0);
	pthread_mutex_destroy(&g->mu);
}

/* The oldest item that may no longer serve is ended by the thread itself
 * and replaced, before any run asks. */
static void pool_thread_replaces_the_oldest_that_aged(void **state)
{
	(void)state;
	struct log_pool f;
	log_pool_init(&f, 1, 0);
	struct pool_log *g = &f.g;
	struct pool *p = &f.p;
	int id = 0;
	assert_int_equal(pool_start(p), 0);
	wait_ready(p, 1);
	log_set(g, &g->unusable, 1);
	pool_kick(p);
	for (;;) {
		pthread_mutex_lock(&g->mu);
		bool replaced = g->calls == 2;
		pthread_mutex_unlock(&g->mu);
		if (replaced && pool_ready(p) == 1)
			break;
		usleep(1000);
	}
	assert_int_equal(g->ndestroyed, 1);
	assert_int_equal(g->destroyed[0], 1);
	log_set(g, (int *)&g->want, 0);
	assert_true(pool_take(p, &id));
	assert_int_equal(id, 2);
	pool_destroy(p);
	pthread_mutex_destroy(&g->mu);
}

/* Lets the make in progress finish once the taker has said it asks. */
static void *release_when_asked(void *arg)
{
	struct pool_log *g = arg;
	pthread_mutex_lock(&g->mu);
	while (g->want != 0) /* the taker's "asked": it sets want to 0 */
		pthread_cond_wait(&g->cv, &g->mu);
	g->hold = false;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* Calls made so far, once the thread is inside the make numbered n. */
static void wait_in_make(struct pool_log *g, int n)
{
	pthread_mutex_lock(&g->mu);
	while (g->calls < n)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

/* pool_take_wait: the item in the making is waited for, not made twice
 * (warm's next zygote); a make that fails or a bound ends the wait. */
static void pool_take_wait_waits_for_the_item_in_the_making(void **state)
{
	(void)state;
	struct log_pool f;
	log_pool_init(&f, 1, 0);
	struct pool_log *g = &f.g;
	struct pool *p = &f.p;
	int id = 0;
	/* Nothing in the making: no wait at all. */
	assert_false(pool_take_wait(p, &id, 60000));
	g->hold = true;
	assert_int_equal(pool_start(p), 0);
	wait_in_make(g, 1);
	assert_false(pool_take(p, &id)); /* a plain take does not wait */
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, release_when_asked, g), 0);
	pthread_mutex_lock(&g->mu);
	g->want = 0; /* asked (and no refill after the take) */
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	/* 60 s only catches a hang. */
	assert_true(pool_take_wait(p, &id, 60000));
	assert_int_equal(id, 1);
	pthread_join(t, NULL);
	/* A make that fails ends the wait with nothing. */
	pthread_mutex_lock(&g->mu);
	g->hold = true;
	g->fails_left = 1;
	g->want = 1;
	pthread_mutex_unlock(&g->mu);
	pool_kick(p);
	wait_in_make(g, 2);
	assert_int_equal(pthread_create(&t, NULL, release_when_asked, g), 0);
	log_set(g, (int *)&g->want, 0);
	pthread_mutex_lock(&g->mu);
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	assert_false(pool_take_wait(p, &id, 60000));
	pthread_join(t, NULL);
	assert_int_equal(g->fails, 1);
	/* A make that hangs: the bound ends the wait. */
	pthread_mutex_lock(&g->mu);
	g->hold = true;
	g->want = 1;
	pthread_mutex_unlock(&g->mu);
	pool_kick(p);
	wait_in_make(g, 3);
	assert_false(pool_take_wait(p, &id, 50));
	log_set(g, (int *)&g->want, 0);
	pthread_mutex_lock(&g->mu);
	g->hold = false;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pool_destroy(p);
	assert_int_equal(g->calls, 3);
	pthread_mutex_destroy(&g->mu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(config_defaults_follow_design),
		cmocka_unit_test(config_rejects_out_of_range),
		cmocka_unit_test(config_checks_warm_and_preload),
		cmocka_unit_test(names_round_trip),
		cmocka_unit_test(unavailable_tier_says_why),
		cmocka_unit_test(capture_caps_and_flags),
		cmocka_unit_test(capture_large_stream_is_capped),
		cmocka_unit_test(capture_tail_keeps_the_last_bytes),
		cmocka_unit_test(capture_empty_gives_empty_string),
		cmocka_unit_test(utf8_valid_passes_through),
		cmocka_unit_test(utf8_invalid_becomes_replacement),
		cmocka_unit_test(json_has_every_contract_field),
		cmocka_unit_test(json_repairs_binary_output),
		cmocka_unit_test(json_carries_the_egress_log),
		cmocka_unit_test(tool_text_names_egress_refusals_and_caps),
		cmocka_unit_test(tool_arguments_take_only_code),
		cmocka_unit_test(result_text_reads_well),
		cmocka_unit_test(tool_definition_carries_the_limits),
		cmocka_unit_test(run_command_only_where_turned_on),
		cmocka_unit_test(classify_exits),
		cmocka_unit_test(classify_signals),
		cmocka_unit_test(classify_oom_kills),
		cmocka_unit_test(microvm_guest_cannot_choose_the_status),
		cmocka_unit_test(session_reply_memory_error_exit),
		cmocka_unit_test(classify_supervisor_verdicts),
		cmocka_unit_test(classify_cpu_stopped_by_the_host),
		cmocka_unit_test(config_checks_ro_binds),
		cmocka_unit_test(config_checks_trust_ca),
		cmocka_unit_test(config_checks_env),
		cmocka_unit_test(session_reply_holds_the_image_caps),
		cmocka_unit_test(microvm_output_past_the_cap_is_refused),
		cmocka_unit_test(microvm_output_frame_rules),
		cmocka_unit_test(microvm_result_counts_the_output_frames),
		cmocka_unit_test(pool_takes_newest_refills_and_ends_what_is_left),
		cmocka_unit_test(pool_make_that_fails_is_tried_again),
		cmocka_unit_test(pool_thread_replaces_the_oldest_that_aged),
		cmocka_unit_test(pool_take_wait_waits_for_the_item_in_the_making),
	};
	return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
