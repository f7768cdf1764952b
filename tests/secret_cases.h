/* Secrets at the egress proxy (issue 39, docs/secrets.md), every tier that
 * carries the proxy: included by egress_cases.h, whose setup gives each
 * case its loopback servers and rules. An HTTPS origin on 127.0.0.1 with a
 * certificate from a test CA (tls_server.h) is reached by name
 * (localhost:PORT, which carries the secrets) and by address (127.0.0.1,
 * which carries none); the proxy trusts the test CA through egress_ca. The
 * judges are the origin's record of every request head it got, what the
 * program printed, and the decision log. */
#ifndef AJ_TEST_SECRET_CASES_H
#define AJ_TEST_SECRET_CASES_H

#include <openssl/rand.h>

struct secret_case {
	char value[64];        /* random per case: found nowhere it must not be */
	char host_rule[64], cidr[64];
	char *json;
};

/* The origin, rules reaching it by name and by address, and two secrets
 * for its name: GH set as a header, PH swapped for its placeholder. */
static void secret_setup(struct fixture *f, struct secret_case *sc, const char *extra)
{
	struct egress_case *e = &egress_case;
	struct tls_server *t = &e->tls;
	if (tls_server_start(t))
		fail_msg("cannot make the CA or start the HTTPS server (openssl, python3)");
	unsigned char rnd[12];
	RAND_bytes(rnd, sizeof rnd);
	int n = snprintf(sc->value, sizeof sc->value, "ajtestsecret-");
	for (size_t i = 0; i < sizeof rnd; i++)
		n += snprintf(sc->value + n, sizeof sc->value - (size_t)n, "%02x", rnd[i]);
	snprintf(sc->host_rule, sizeof sc->host_rule, "localhost:%d", t->port);
	snprintf(sc->cidr, sizeof sc->cidr, "127.0.0.1/32:%d", t->port);
	e->hosts[2] = sc->host_rule;
	e->cidrs[2] = sc->cidr;
	f->cfg.allow_host_count = 3;
	f->cfg.allow_cidr_count = 3;
	if (asprintf(&sc->json,
		     "[{\"name\": \"GH\", \"value\": \"%s\", \"hosts\": [\"%s\"], "
		     "\"header\": \"Authorization\", \"format\": \"Bearer {value}\"%s},"
		     " {\"name\": \"PH\", \"value\": \"%s\", \"hosts\": [\"%s\"], \"placeholder\": true}]",
		     sc->value, sc->host_rule, extra, sc->value, sc->host_rule) < 0)
		fail_msg("out of memory");
	f->cfg.secrets = sc->json;
	f->cfg.egress_ca = t->ca;
	/* The program trusts the test CA too, for the address's tunnel,
	 * which stays end to end. */
	f->cfg.trust_ca = t->ca;
}

static void secret_teardown(struct fixture *f, struct secret_case *sc)
{
	f->cfg.secrets = NULL;
	f->cfg.egress_ca = NULL;
	f->cfg.trust_ca = NULL;
	free(sc->json);
	sc->json = NULL;
}

/* The heads the origin got, whole (malloc'd, "" if none). */
static char *secret_heads(void)
{
	char p[160];
	snprintf(p, sizeof p, "%s/heads.log", egress_case.tls.dir);
	FILE *fp = fopen(p, "rb");
	char *s = calloc(1, 1 << 20);
	if (fp && s)
		(void)!fread(s, 1, (1 << 20) - 1, fp);
	if (fp)
		fclose(fp);
	return s;
}

/* The head the origin got for path (its request line and headers), or NULL. */
static char *secret_head_for(const char *heads, const char *path, char *out, size_t n)
{
	char line[128];
	snprintf(line, sizeof line, "GET %s HTTP/1.1\r\n", path);
	const char *at = strstr(heads, line);
	if (!at) {
		snprintf(line, sizeof line, "POST %s HTTP/1.1\r\n", path);
		at = strstr(heads, line);
	}
	if (!at)
		return NULL;
	const char *end = strstr(at, "\r\n\r\n");
	size_t len = end ? (size_t)(end - at) : strlen(at);
	snprintf(out, n, "%.*s", (int)len, at);
	return out;
}

static void secret_absent(const char *what, const char *text, const char *value)
{
	if (text && strstr(text, value))
		fail_msg("the secret's value is in %s: %s", what, text);
}

/* Looks for the value everywhere the program can read: its environment,
 * its and PID 1's /proc files, the files of /tmp, the workspace, /etc,
 * /run and /dev/shm. The prefix is put together at run time, so the
 * program's own text never matches. */
static const char secret_search_py[] =
	"import os\n"
	"needle = ('ajtest' + 'secret-').encode()\n"
	"found = [k for k, v in os.environ.items() if needle in (k + v).encode()]\n"
	"paths = ['/proc/self/environ', '/proc/self/cmdline', '/proc/1/environ', '/proc/1/cmdline']\n"
	"for top in ['/tmp', os.getcwd(), '/etc', '/run', '/dev/shm']:\n"
	"    for d, _, files in os.walk(top):\n"
	"        paths += [os.path.join(d, f) for f in files][:2000]\n"
	"for p in paths[:5000]:\n"
	"    try:\n"
	"        with open(p, 'rb') as fh:\n"
	"            if needle in fh.read(1 << 20):\n"
	"                found.append(p)\n"
	"    except OSError:\n"
	"        pass\n"
	"print('search done', 'found', found)\n";

static const char secret_program[] =
	"import os, shutil, subprocess, urllib.request\n"
	"P = %d\n"
	"def get(url, headers):\n"
	"    r = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60)\n"
	"    return r.status, r.headers.get('X-Echo-Auth'), r.read().decode()\n"
	"ph = os.environ['AJ_SECRET_PH']\n"
	"print('placeholder', ph)\n"
	"s, auth, body = get('https://localhost:%%d/echo-a' %% P, {'X-Key': ph, 'Authorization': 'Bearer mine'})\n"
	"print('a', s, 'auth', auth, 'masked', '*' * 20 in body)\n"
	"s, auth, body = get('https://127.0.0.1:%%d/echo-b' %% P, {'X-Key': ph})\n"
	"print('b', s, 'auth', auth)\n"
	"if shutil.which('curl'):\n"
	"    out = subprocess.run(['curl', '-sS', '-D', '-', '-o', '/dev/null', '-H', 'X-Key: ' + ph,\n"
	"                          'https://localhost:%%d/echo-curl' %% P], capture_output=True, text=True)\n"
	"    print('curl', out.returncode, [l for l in out.stdout.splitlines() if 'Echo' in l], out.stderr[:200])\n"
	"if shutil.which('node'):\n"
	"    js = '''\n"
	"const http = require('http'), tls = require('tls');\n"
	"const req = http.request({host: '127.0.0.1', port: 3128, method: 'CONNECT', path: 'localhost:%%d',\n"
	"  headers: {host: 'localhost:%%d'}});\n"
	"req.on('connect', (res, sock) => {\n"
	"  const s = tls.connect({socket: sock, servername: 'localhost'}, () => {\n"
	"    s.write('GET /echo-node HTTP/1.1\\\\r\\\\nHost: localhost:%%d\\\\r\\\\nX-Key: ' + process.env.AJ_SECRET_PH + '\\\\r\\\\n\\\\r\\\\n');\n"
	"  });\n"
	"  let got = ''; s.on('data', d => got += d); s.on('end', () => console.log('node', got.split('\\\\r\\\\n')[0]));\n"
	"  s.on('error', e => console.log('node error', e.message));\n"
	"});\n"
	"req.end();\n"
	"''' %% (P, P, P)\n"
	"    out = subprocess.run(['node', '-e', js], capture_output=True, text=True)\n"
	"    print(out.stdout.strip(), out.stderr[:300])\n";

/* The secrets reach their own host, set as a header and swapped for the
 * placeholder, through Python, curl and node; the address (no secret)
 * gets the placeholder; the program finds the value nowhere. */
static void egress_secret_reaches_its_host_only(void **state)
{
	struct fixture *f = *state;
	struct secret_case sc = {0};
	secret_setup(f, &sc, "");
	int port = egress_case.tls.port;
	char *code;
	if (asprintf(&code, secret_program, port) < 0)
		fail_msg("out of memory");
	char *prog;
	if (asprintf(&prog, "%s%s", code, secret_search_py) < 0)
		fail_msg("out of memory");
	struct aj_result r;
	run_code(&f->cfg, &r, "%s", prog);
	assert_status(&r, AJ_STATUS_OK);
	char *heads = secret_heads();
	char head[4096], want[200];
	if (!secret_head_for(heads, "/echo-a", head, sizeof head))
		fail_msg("the origin got no /echo-a: %s | %s | %s", r.stdout_buf, r.stderr_buf, heads);
	snprintf(want, sizeof want, "Authorization: Bearer %s", sc.value);
	assert_true(contains(head, want)); /* the header set, the program's own replaced */
	assert_false(contains(head, "Bearer mine"));
	snprintf(want, sizeof want, "X-Key: %s", sc.value);
	assert_true(contains(head, want)); /* the placeholder swapped */
	if (!secret_head_for(heads, "/echo-b", head, sizeof head))
		fail_msg("the origin got no /echo-b: %s", r.stdout_buf);
	assert_true(contains(head, "X-Key: AJ_SECRET_PH")); /* another host: the placeholder only */
	secret_absent("the head sent to 127.0.0.1", head, sc.value);
	if (contains(r.stdout_buf, "curl ")) {
		if (!secret_head_for(heads, "/echo-curl", head, sizeof head))
			fail_msg("curl's request did not arrive: %s", r.stdout_buf);
		assert_true(contains(head, want));
	}
	if (contains(r.stdout_buf, "node ")) {
		if (!secret_head_for(heads, "/echo-node", head, sizeof head))
			fail_msg("node's request did not arrive: %s", r.stdout_buf);
		assert_true(contains(head, want));
	}
	/* What the program saw: the placeholder, its answer's echo masked. */
	assert_true(contains(r.stdout_buf, "placeholder AJ_SECRET_PH"));
	assert_true(contains(r.stdout_buf, "a 200 auth Bearer ****"));
	assert_true(contains(r.stdout_buf, "masked True"));
	assert_true(contains(r.stdout_buf, "search done found []"));
	secret_absent("stdout", r.stdout_buf, sc.value);
	secret_absent("stderr", r.stderr_buf, sc.value);
	secret_absent("the egress log", r.egress_log, sc.value);
	json_t *log = egress_log(&r);
	json_t *inj = json_object_get(log, "injections");
	assert_true(json_integer_value(json_object_get(inj, "GH")) >= 1);
	assert_true(json_integer_value(json_object_get(inj, "PH")) >= 1);
	char *all = json_dumps(log, 0);
	assert_true(contains(all, "\"secrets\": [\"GH\", \"PH\"]"));
	free(all);
	json_decref(log);
	aj_result_free(&r);
	free(heads);
	free(code);
	free(prog);
	secret_teardown(f, &sc);
}

static const char secret_refusal_program[] =
	"import socket, ssl, urllib.error, urllib.request\n"
	"P = %d\n"
	"CA = '''%s'''\n"
	"def tunnel(target, sni, head, ctx=None):\n"
	"    s = socket.create_connection(('127.0.0.1', 3128), timeout=60)\n"
	"    s.sendall(('CONNECT %%s HTTP/1.1\\r\\nHost: %%s\\r\\n\\r\\n' %% (target, target)).encode())\n"
	"    s.recv(1024)\n"
	"    try:\n"
	"        t = (ctx or ssl.create_default_context()).wrap_socket(s, server_hostname=sni)\n"
	"        t.sendall(head.encode())\n"
	"        got = b''\n"
	"        while True:\n"
	"            b = t.recv(4096)\n"
	"            if not b:\n"
	"                break\n"
	"            got += b\n"
	"        return got.decode(errors='replace').replace('\\r\\n', ' ')\n"
	"    except (OSError, ssl.SSLError) as e:\n"
	"        return 'failed ' + type(e).__name__\n"
	"print('host', tunnel('localhost:%%d' %% P, 'localhost', 'GET /host-x HTTP/1.1\\r\\nHost: other.example:%%d\\r\\n\\r\\n' %% P))\n"
	"print('addr', tunnel('127.0.0.1:%%d' %% P, 'localhost', 'GET /addr-x HTTP/1.1\\r\\nHost: localhost:%%d\\r\\n\\r\\n' %% P))\n"
	"own = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)\n"
	"own.load_verify_locations(cadata=CA)\n"
	"print('own', tunnel('localhost:%%d' %% P, 'localhost', 'GET /own-x HTTP/1.1\\r\\nHost: localhost:%%d\\r\\n\\r\\n' %% P, own))\n"
	"for name, url, data in [('plain', 'http://localhost:%%d/plain-x' %% P, None),\n"
	"                        ('rule', 'https://localhost:%%d/post-x' %% P, b'x')]:\n"
	"    try:\n"
	"        urllib.request.urlopen(url, data=data, timeout=60)\n"
	"        print(name, 'sent')\n"
	"    except urllib.error.HTTPError as e:\n"
	"        print(name, e.code, e.read().decode().strip())\n"
	"    except Exception as e:\n"
	"        import traceback; print(name, 'raised', repr(e), traceback.format_exc()[-600:])\n";

/* What must be refused is, with nothing sent upstream: a Host other than
 * the SNI, an address tunnel with the name's SNI, a program that brings
 * its own trust store, plain HTTP, a request its rules do not admit; and
 * an upstream whose certificate fails verification. */
static void egress_secret_refusals(void **state)
{
	struct fixture *f = *state;
	struct secret_case sc = {0};
	secret_setup(f, &sc, ", \"requests\": [\"GET /echo\", \"GET /host\", \"GET /own\"]");
	char ca[8192] = "";
	FILE *fp = fopen(egress_case.tls.ca, "r");
	if (!fp || !fread(ca, 1, sizeof ca - 1, fp))
		fail_msg("cannot read the test CA");
	fclose(fp);
	char *code;
	if (asprintf(&code, secret_refusal_program, egress_case.tls.port, ca) < 0)
		fail_msg("out of memory");
	struct aj_result r;
	run_code(&f->cfg, &r, "%s", code);
	assert_status(&r, AJ_STATUS_OK);
	const char *o = r.stdout_buf;
	if (!contains(o, "host HTTP/1.1 403") || !contains(o, "the Host header names other.example"))
		fail_msg("Host != SNI: %s %s", o, r.stderr_buf);
	if (!contains(o, "addr failed"))
		fail_msg("an address tunnel with a name's SNI: %s", o);
	if (!contains(o, "own failed SSLCertVerificationError"))
		fail_msg("its own trust store: %s", o);
	if (!contains(o, "plain 403 agentjail egress: secret GH is for localhost but not over plain HTTP"))
		fail_msg("plain HTTP: %s", o);
	if (!contains(o, "rule 403 agentjail egress: secret GH: POST /post-x is not among its request rules"))
		fail_msg("a request rule: %s", o);
	json_t *log = egress_log(&r);
	char *all = json_dumps(log, 0);
	assert_true(contains(all, "the program's TLS handshake with the proxy failed"));
	assert_true(contains(all, "names 'localhost', not 127.0.0.1"));
	free(all);
	json_decref(log);
	secret_absent("stdout", o, sc.value);
	secret_absent("the egress log", r.egress_log, sc.value);
	aj_result_free(&r);
	char *heads = secret_heads();
	for (const char *p = "/host-x\0/addr-x\0/own-x\0/plain-x\0/post-x\0"; *p; p += strlen(p) + 1)
		if (contains(heads, p))
			fail_msg("%s reached the origin: %s", p, heads);
	free(heads);

	/* The proxy without the test CA: the origin fails verification, and
	 * the program reads why; the origin never gets a request. */
	f->cfg.egress_ca = NULL;
	run_code(&f->cfg, &r,
		 "import urllib.error, urllib.request\n"
		 "try:\n"
		 "    urllib.request.urlopen('https://localhost:%d/echo-unverified', timeout=60)\n"
		 "except urllib.error.HTTPError as e:\n"
		 "    print('unverified', e.code, e.read().decode().strip())\n",
		 egress_case.tls.port);
	assert_status(&r, AJ_STATUS_OK);
	if (!contains(r.stdout_buf, "unverified 502") ||
	    !contains(r.stdout_buf, "certificate failed verification"))
		fail_msg("an unverified upstream: %s %s", r.stdout_buf, r.stderr_buf);
	aj_result_free(&r);
	heads = secret_heads();
	assert_false(contains(heads, "/echo-unverified"));
	free(heads);
	free(code);
	secret_teardown(f, &sc);
}

/* A session's secrets narrowed drop at once, in its forks too; a
 * checkpoint of it holds no value. */
static void egress_secret_session_narrows(void **state)
{
	struct fixture *f = *state;
	struct secret_case sc = {0};
	secret_setup(f, &sc, "");
	int port = egress_case.tls.port;
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	if (aj_session_open(&f->cfg, &s, &err))
		fail_msg("aj_session_open: %s", err.message);
	char code[1024];
	snprintf(code, sizeof code,
		 "import os, urllib.request\n"
		 "def get(path):\n"
		 "    r = urllib.request.urlopen(urllib.request.Request('https://localhost:%d' + path,"
		 " headers={'X-Key': os.environ['AJ_SECRET_PH']}), timeout=60)\n"
		 "    return r.status\n"
		 "print('first', get('/echo-s1'))\n",
		 port);
	struct aj_result r;
	assert_int_equal(aj_session_run(s, code, strlen(code), &r), 0);
	if (!contains(r.stdout_buf, "first 200"))
		fail_msg("first call: %s %s", r.stdout_buf, r.stderr_buf);
	aj_result_free(&r);

	struct aj_checkpoint_key key;
	RAND_bytes(key.bytes, sizeof key.bytes);
	char path[96];
	snprintf(path, sizeof path, "/tmp/aj-secret-ckpt-%d", (int)getpid());
	if (aj_session_checkpoint(s, &key, path, NULL, &err))
		fail_msg("aj_session_checkpoint: %s", err.message);
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	size_t cap = 64 << 20, n;
	char *bytes = malloc(cap);
	n = fread(bytes, 1, cap, fp);
	fclose(fp);
	unlink(path);
	assert_null(memmem(bytes, n, sc.value, strlen(sc.value)));
	free(bytes);

	const char *unknown[] = {"NOPE"};
	assert_int_equal(aj_session_secrets_keep(s, unknown, 1, &err), -EPERM);
	assert_true(contains(err.message, "'NOPE' is not one of the session's secrets"));
	const char *keep[] = {"PH"};
	if (aj_session_secrets_keep(s, keep, 1, &err))
		fail_msg("keep PH: %s", err.message);
	const char *call2 = "print('second', get('/echo-s2'))\n";
	assert_int_equal(aj_session_run(s, call2, strlen(call2), &r), 0);
	assert_true(contains(r.stdout_buf, "second 200"));
	aj_result_free(&r);
	/* A fork keeps the narrowing: GH stays dropped in the copy. */
	struct aj_session *copy = NULL;
	if (aj_session_fork(s, 1, &copy, NULL, &err))
		fail_msg("aj_session_fork: %s", err.message);
	const char *in_copy = "print('fork', get('/echo-f1'))\n";
	assert_int_equal(aj_session_run(copy, in_copy, strlen(in_copy), &r), 0);
	if (!contains(r.stdout_buf, "fork 200"))
		fail_msg("in the fork: %s [%s]", r.stdout_buf, r.stderr_buf);
	aj_result_free(&r);
	aj_session_close(copy);
	assert_int_equal(aj_session_secrets_keep(s, NULL, 0, &err), 0);
	const char *call3 = "print('third', get('/echo-s3'))\n";
	assert_int_equal(aj_session_run(s, call3, strlen(call3), &r), 0);
	assert_true(contains(r.stdout_buf, "third 200")); /* end to end now: the test CA */
	aj_result_free(&r);
	aj_session_close(s);

	char *heads = secret_heads();
	char head[4096], with_value[200], header_set[200];
	snprintf(with_value, sizeof with_value, "X-Key: %s", sc.value);
	snprintf(header_set, sizeof header_set, "Authorization: Bearer %s", sc.value);
	assert_non_null(secret_head_for(heads, "/echo-s1", head, sizeof head));
	assert_true(contains(head, with_value) && contains(head, header_set));
	assert_non_null(secret_head_for(heads, "/echo-s2", head, sizeof head));
	assert_true(contains(head, with_value)); /* PH kept */
	assert_false(contains(head, header_set)); /* GH dropped */
	assert_non_null(secret_head_for(heads, "/echo-f1", head, sizeof head));
	assert_true(contains(head, with_value)); /* the fork: PH, as its session */
	assert_false(contains(head, header_set)); /* and GH dropped there too */
	assert_non_null(secret_head_for(heads, "/echo-s3", head, sizeof head));
	assert_true(contains(head, "X-Key: AJ_SECRET_PH")); /* none left: the placeholder only */
	secret_absent("the last head", head, sc.value);
	free(heads);
	secret_teardown(f, &sc);
}

/* A streamed answer through an intercepted host comes as it is sent: the
 * first event reaches the program while the origin still holds the
 * second, which it sends only once the program asked for /release. A
 * proxy that kept the first back would leave the program waiting (its 30 s
 * only catches that). */
static void egress_secret_streams_as_sent(void **state)
{
	struct fixture *f = *state;
	struct secret_case sc = {0};
	secret_setup(f, &sc, "");
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import socket, urllib.request\n"
		 "P = %d\n"
		 "s = urllib.request.urlopen('https://localhost:%%d/stream' %% P, timeout=30)\n"
		 "try:\n"
		 "    first = s.readline().decode().strip()\n"
		 "except (socket.timeout, TimeoutError):\n"
		 "    first = 'stalled'\n"
		 "urllib.request.urlopen('https://localhost:%%d/release' %% P, timeout=30).read()\n"
		 "print('got', first, s.read().decode().split())\n",
		 egress_case.tls.port);
	assert_status(&r, AJ_STATUS_OK);
	if (!contains(r.stdout_buf, "got data: one ['data:', 'two']"))
		fail_msg("the stream: %s %s", r.stdout_buf, r.stderr_buf);
	json_t *log = egress_log(&r);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(log, "injections"), "GH")),
			 2);
	json_decref(log);
	aj_result_free(&r);
	secret_teardown(f, &sc);
}

#define SECRET_TABLE                                                                          \
	EGRESS_TEST(egress_secret_reaches_its_host_only), EGRESS_TEST(egress_secret_refusals), \
	EGRESS_TEST(egress_secret_session_narrows), EGRESS_TEST(egress_secret_streams_as_sent)

#endif
