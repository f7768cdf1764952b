/* The egress cases every tier that carries the proxy runs (docs/egress.md;
 * include it, then put EGRESS_TABLE in the tier's test list). Each case starts its own origin server on 127.0.0.1
 * (src/attack/egress_server.h), gives the run rules naming it, and judges
 * from both sides: what the program printed, what the server received, and
 * the proxy's decision log (aj_result.egress_log). Nothing here names a
 * tier. */
#ifndef AJ_TEST_EGRESS_CASES_H
#define AJ_TEST_EGRESS_CASES_H

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>

#include "hostile.h"
#include "src/attack/egress_server.h"
#include "tls_server.h"

struct egress_case {
	struct egress_server *server;
	int port;
	char cidr[64], host[64], tls_cidr[64];
	const char *cidrs[4], *hosts[4];
	struct tls_server tls; /* the HTTPS case's, stopped at teardown */
};

static struct egress_case egress_case;

/* A server, and rules: allow-cidr 127.0.0.1/32:PORT, allow-host
 * localhost:PORT, and (for the cases' refusals) localhost:443 with
 * allow-cidr 127.0.0.1/32:443 (whose tunnels must show the right SNI). A
 * localhost rule without a CIDR rule reaching loopback on its port is
 * refused at validation (it could never match: test_egress.c). */
static int egress_setup(void **state)
{
	case_setup(state);
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	memset(e, 0, sizeof *e);
	if (egress_server_start(&e->server, &e->port))
		fail_msg("egress server: cannot start");
	snprintf(e->cidr, sizeof e->cidr, "127.0.0.1/32:%d", e->port);
	snprintf(e->host, sizeof e->host, "localhost:%d", e->port);
	snprintf(e->tls_cidr, sizeof e->tls_cidr, "127.0.0.1/32:443");
	e->cidrs[0] = e->cidr;
	e->cidrs[1] = e->tls_cidr;
	e->hosts[0] = e->host;
	e->hosts[1] = "localhost:443";
	f->cfg.allow_cidrs = e->cidrs;
	f->cfg.allow_cidr_count = 2;
	f->cfg.allow_hosts = e->hosts;
	f->cfg.allow_host_count = 2;
	/* Slow tiers (an emulated VM) take seconds to start Python's urllib. */
	f->cfg.limits.wall_sec = 60;
	f->cfg.limits.cpu_sec = 30;
	return 0;
}

static int egress_teardown(void **state)
{
	egress_server_stop(egress_case.server);
	egress_case.server = NULL;
	/* Stopped here too, so a case that failed leaves no server or files. */
	tls_server_stop(&egress_case.tls);
	return case_teardown(state);
}

/* The run's decision log, parsed (a JSON object). */
static json_t *egress_log(const struct aj_result *r)
{
	if (!r->egress_log)
		fail_msg("no egress log; stdout: %s stderr: %s message: %s", r->stdout_buf,
			 r->stderr_buf, r->message ? r->message : "");
	json_t *j = json_loads(r->egress_log, 0, NULL);
	if (!json_is_object(j))
		fail_msg("egress log is not a JSON object: %s", r->egress_log);
	return j;
}

/* The log entry for host:port (the first one), or fail. */
static json_t *egress_entry(json_t *log, const char *host, int port, const char *via)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(log, "connections"), i, c) {
		if (!strcmp(json_string_value(json_object_get(c, "host")), host) &&
		    json_integer_value(json_object_get(c, "port")) == port &&
		    (!via || !strcmp(json_string_value(json_object_get(c, "via")), via)))
			return c;
	}
	char *all = json_dumps(log, 0);
	fail_msg("no log entry for %s:%d (%s) in %s", host, port, via ? via : "any", all);
	return NULL;
}

/* An entry for host:port with this verdict and reason, among any others
 * for it: a session call's log may also hold an earlier call's connection,
 * reported live then and again once it ended (or was cut by a keep) after
 * that call returned. */
static void assert_entry(json_t *log, const char *host, int port, const char *via, bool allowed,
			 const char *reason_part)
{
	egress_entry(log, host, port, via); /* at least one, or fail naming the log */
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(log, "connections"), i, c) {
		const char *reason = json_string_value(json_object_get(c, "reason"));
		if (!strcmp(json_string_value(json_object_get(c, "host")), host) &&
		    json_integer_value(json_object_get(c, "port")) == port &&
		    (!via || !strcmp(json_string_value(json_object_get(c, "via")), via)) &&
		    json_is_true(json_object_get(c, "allowed")) == allowed &&
		    contains(reason, reason_part))
			return;
	}
	char *all = json_dumps(log, 0);
	fail_msg("%s:%d via %s: no entry %s with '%s' in %s", host, port, via ? via : "any",
		 allowed ? "allowed" : "denied", reason_part, all);
}

/* Through the proxy every way the issue names: urllib (HTTP_PROXY from the
 * environment) by address and by a listed name, a CONNECT tunnel, and
 * SOCKS5 with the name resolved by the proxy; requests too where the image
 * has it. */
static void egress_reaches_allowed(void **state)
{
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import os, socket, urllib.request\n"
		 "T = '%s'\n"
		 "def read_all(s):\n"
		 "    data = b''\n"
		 "    while True:\n"
		 "        b = s.recv(4096)\n"
		 "        if not b:\n"
		 "            return data\n"
		 "        data += b\n"
		 "print(urllib.request.urlopen('http://127.0.0.1:%d/ip-' + T, timeout=20).read().decode().strip())\n"
		 "print(urllib.request.urlopen('http://localhost:%d/name-' + T, timeout=20).read().decode().strip())\n"
		 "s = socket.create_connection(('127.0.0.1', %d), timeout=20)\n"
		 "s.sendall(b'CONNECT localhost:%d HTTP/1.1\\r\\nHost: localhost:%d\\r\\n\\r\\n')\n"
		 "head = b''\n"
		 "while b'\\r\\n\\r\\n' not in head:\n"
		 "    head += s.recv(1)\n"
		 "s.sendall(b'GET /tunnel-' + T.encode() + b' HTTP/1.0\\r\\n\\r\\n')\n"
		 "data = read_all(s)\n"
		 "print(head.split(b'\\r\\n')[0].decode(), data.split(b'\\r\\n\\r\\n', 1)[1].decode().strip())\n"
		 "s = socket.create_connection(('127.0.0.1', %d), timeout=20)\n"
		 "s.sendall(b'\\x05\\x01\\x00')\n"
		 "assert s.recv(2) == b'\\x05\\x00'\n"
		 "s.sendall(b'\\x05\\x01\\x00\\x03\\x09localhost' + (%d).to_bytes(2, 'big'))\n"
		 "print('socks', s.recv(10)[1])\n"
		 "s.sendall(b'GET /socks-' + T.encode() + b' HTTP/1.0\\r\\n\\r\\n')\n"
		 "print(read_all(s).split(b'\\r\\n\\r\\n', 1)[-1].decode().strip())\n"
		 "try:\n"
		 "    import requests\n"
		 "except ImportError:\n"
		 "    print('requests absent')\n"
		 "else:\n"
		 "    print(requests.get('http://localhost:%d/requests-' + T, timeout=20).text.strip())\n"
		 "print(os.environ['HTTPS_PROXY'], os.environ['all_proxy'])\n",
		 f->token, e->port, e->port, CONTRACT_EGRESS_PORT, e->port, e->port,
		 CONTRACT_EGRESS_PORT, e->port, e->port);
	assert_status(&r, AJ_STATUS_OK);
	char want[200];
	const char *paths[] = {"ip", "name", "tunnel", "socks"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(want, sizeof want, "egress-ok /%s-%s", paths[i], f->token);
		if (!contains(r.stdout_buf, want))
			fail_msg("no '%s' in: %s", want, r.stdout_buf);
		snprintf(want, sizeof want, "/%s-%s", paths[i], f->token);
		assert_true(egress_server_saw(e->server, want));
	}
	assert_true(contains(r.stdout_buf, "HTTP/1.1 200 Connection established"));
	assert_true(contains(r.stdout_buf, "socks 0"));
	snprintf(want, sizeof want, "egress-ok /requests-%s", f->token);
	assert_true(contains(r.stdout_buf, want) || contains(r.stdout_buf, "requests absent"));
	assert_true(contains(r.stdout_buf, CONTRACT_EGRESS_HTTP_URL " " CONTRACT_EGRESS_SOCKS_URL));
	json_t *log = egress_log(&r);
	assert_entry(log, "127.0.0.1", e->port, "http", true, "allow-cidr 127.0.0.1/32:");
	assert_entry(log, "localhost", e->port, "http", true, "allow-");
	assert_entry(log, "localhost", e->port, "connect", true, "allow-");
	assert_entry(log, "localhost", e->port, "socks", true, "allow-");
	json_t *c = egress_entry(log, "127.0.0.1", e->port, "http");
	assert_true(json_integer_value(json_object_get(c, "bytes_in")) > 0);
	assert_true(json_integer_value(json_object_get(c, "bytes_out")) > 0);
	assert_string_equal(json_string_value(json_object_get(c, "address")), "127.0.0.1");
	json_decref(log);
	aj_result_free(&r);
}

/* Each refusal the issue names, each with its reason in the log, and no
 * byte of any at the server. */
static void egress_refuses_with_reasons(void **state)
{
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import socket, ssl, urllib.request, urllib.error\n"
		 "T = '%s'\n"
		 "for url in ['http://unlisted.example/' + T, 'http://localhost:%d/port-' + T,\n"
		 "            'http://127.0.0.1:%d/otherport-' + T, 'http://10.1.2.3:%d/private-' + T]:\n"
		 "    try:\n"
		 "        urllib.request.urlopen(url, timeout=20)\n"
		 "        print('REACHED', url)\n"
		 "    except urllib.error.HTTPError as e:\n"
		 "        print('refused', e.code, e.read().decode().strip())\n"
		 "s = socket.create_connection(('127.0.0.1', %d), timeout=20)\n"
		 "s.sendall(b'CONNECT localhost:443 HTTP/1.1\\r\\nHost: localhost:443\\r\\n\\r\\n')\n"
		 "print(s.recv(200).split(b'\\r\\n')[0].decode())\n"
		 "try:\n"
		 "    ssl.create_default_context().wrap_socket(s, server_hostname='evil.example')\n"
		 "    print('TLS UP')\n"
		 "except (OSError, ssl.SSLError) as e:\n"
		 "    print('tls refused')\n"
		 "s = socket.create_connection(('127.0.0.1', %d), timeout=20)\n"
		 "s.sendall(b'\\x05\\x01\\x00')\n"
		 "s.recv(2)\n"
		 "s.sendall(b'\\x05\\x01\\x00\\x03\\x10unlisted.example' + (80).to_bytes(2, 'big'))\n"
		 "print('socks reply', s.recv(10)[1])\n",
		 f->token, e->port + 2, e->port + 1, e->port, CONTRACT_EGRESS_PORT,
		 CONTRACT_EGRESS_PORT);
	assert_status(&r, AJ_STATUS_OK);
	assert_false(contains(r.stdout_buf, "REACHED"));
	assert_false(contains(r.stdout_buf, "TLS UP"));
	assert_true(contains(r.stdout_buf, "refused 403 agentjail egress: no allow-host rule names "
					   "unlisted.example"));
	assert_true(contains(r.stdout_buf, "tls refused"));
	assert_true(contains(r.stdout_buf, "socks reply 2"));
	assert_int_equal(egress_server_connections(e->server), 0);
	json_t *log = egress_log(&r);
	assert_entry(log, "unlisted.example", 80, "http", false, "no allow-host rule names");
	assert_entry(log, "localhost", e->port + 2, "http", false, "is not among localhost's allowed ports");
	/* Only the port is wrong: the CIDR rule names the address on PORT. */
	assert_entry(log, "127.0.0.1", e->port + 1, "http", false,
		     "127.0.0.1: port ");
	assert_entry(log, "127.0.0.1", e->port + 1, "http", false,
		     "is not among allow-cidr 127.0.0.1/32:");
	assert_entry(log, "10.1.2.3", e->port, "http", false, "private address");
	assert_entry(log, "localhost", 443, "connect", false, "names 'evil.example', not localhost");
	assert_entry(log, "unlisted.example", 80, "socks", false, "no allow-host rule names");
	json_decref(log);
	aj_result_free(&r);
}

/* The attack table's bypass program (src/attack/programs.c): the allowed
 * request arrives, and nothing else does. */
static void egress_bypass_fails(void **state)
{
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	assert_int_equal(bind(udp, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(udp, (struct sockaddr *)&a, &len), 0);
	struct aj_result r;
	run_program(f, &r, HOSTILE_EGRESS_BYPASS,
		    (struct hostile_values){.port = e->port, .host_port = ntohs(a.sin_port)});
	char dgram[64];
	ssize_t got = recv(udp, dgram, sizeof dgram, 0);
	close(udp);
	assert_status(&r, AJ_STATUS_OK);
	char want[120];
	snprintf(want, sizeof want, "ALLOWED egress-ok /allowed-%s", f->token);
	if (!contains(r.stdout_buf, want))
		fail_msg("the allowed request failed: %s %s", r.stdout_buf, r.stderr_buf);
	if (contains(r.stdout_buf, "LEAK"))
		fail_msg("a bypass got through: %s", r.stdout_buf);
	assert_true(got < 0);
	assert_int_equal(egress_server_connections(e->server), 1);
	snprintf(want, sizeof want, "/direct-%s", f->token);
	assert_false(egress_server_saw(e->server, want));
	assert_true(contains(r.stdout_buf, "refused name 403"));
	assert_true(contains(r.stdout_buf, "socks reply 2"));
	json_t *log = egress_log(&r);
	char name[80];
	snprintf(name, sizeof name, "%s.example.com", f->token);
	/* Refused before any lookup: no answer for the name exists to leak. */
	assert_entry(log, name, 80, "http", false, "no allow-host rule names");
	assert_entry(log, name, 80, "socks", false, "no allow-host rule names");
	json_decref(log);
	aj_result_free(&r);
}

/* Each cap ends its transfer, and the log says which. */
static void egress_caps_end_transfers(void **state)
{
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	struct aj_result r;
	f->cfg.egress.in_mb = 1;
	f->cfg.egress.out_mb = 1;
	f->cfg.egress.connections = 3;
	run_code(&f->cfg, &r,
		 "import socket, urllib.request\n"
		 "def fetch(path, body=None):\n"
		 "    s = socket.create_connection(('127.0.0.1', %d), timeout=20)\n"
		 "    head = 'POST' if body else 'GET'\n"
		 "    req = ('%%s http://127.0.0.1:%d%%s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n' %% (head, path)).encode()\n"
		 "    if body:\n"
		 "        req += b'Content-Length: %%d\\r\\n' %% len(body)\n"
		 "    s.sendall(req + b'\\r\\n')\n"
		 "    try:\n"
		 "        if body:\n"
		 "            s.sendall(body)\n"
		 "    except OSError as e:\n"
		 "        print('send cut')\n"
		 "    n = 0\n"
		 "    while True:\n"
		 "        try:\n"
		 "            b = s.recv(65536)\n"
		 "        except OSError:\n"
		 "            break\n"
		 "        if not b:\n"
		 "            break\n"
		 "        n += len(b)\n"
		 "    return n\n"
		 "print('in', fetch('/big/3145728') < 3145728)\n"
		 "print('out', fetch('/upload', b'y' * 3145728))\n"
		 "print('third', fetch('/three'))\n"
		 "print('fourth', fetch('/four'))\n",
		 CONTRACT_EGRESS_PORT, e->port, e->port);
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "in True"));
	assert_false(contains(r.stdout_buf, "got 3145728"));
	assert_true(contains(r.stdout_buf, "fourth 0"));
	assert_false(egress_server_saw(e->server, "/four"));
	json_t *log = egress_log(&r);
	const char *limit = json_string_value(json_object_get(log, "limit"));
	if (!limit || !contains(limit, "in_mb"))
		fail_msg("the log's limit: %s", limit ? limit : "null");
	assert_true(json_integer_value(json_object_get(log, "bytes_in")) <= (1 << 20));
	assert_true(json_integer_value(json_object_get(log, "bytes_out")) <= (1 << 20));
	assert_entry(log, "(any)", 0, NULL, false, "the cap of 3 connections");
	json_decref(log);
	aj_result_free(&r);
}

/* Open for a call, then locked: a session drops its rules and the proxy
 * refuses what they allowed; it can never add one. */
static void egress_session_narrows(void **state)
{
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	if (aj_session_open(&f->cfg, &s, &err))
		fail_msg("aj_session_open: %s", err.message);
	struct aj_result r;
	char code[300];
	snprintf(code, sizeof code,
		 "import urllib.request, urllib.error\n"
		 "try:\n"
		 "    print(urllib.request.urlopen('http://127.0.0.1:%d/s-%s', timeout=20).read().decode())\n"
		 "except urllib.error.HTTPError as e:\n"
		 "    print('refused', e.code)\n",
		 e->port, f->token);
	assert_int_equal(aj_session_run(s, code, strlen(code), &r), 0);
	assert_true(contains(r.stdout_buf, "egress-ok"));
	json_t *log = egress_log(&r);
	assert_entry(log, "127.0.0.1", e->port, "http", true, "allow-cidr");
	json_decref(log);
	aj_result_free(&r);
	const char *wider[] = {"10.0.0.0/8"};
	assert_int_equal(aj_session_egress_keep(s, NULL, 0, wider, 1, &err), -EPERM);
	assert_true(contains(err.message, "never added"));
	const char *keep[] = {e->host};
	assert_int_equal(aj_session_egress_keep(s, keep, 1, NULL, 0, &err), 0);
	assert_int_equal(aj_session_run(s, code, strlen(code), &r), 0);
	assert_true(contains(r.stdout_buf, "refused 403"));
	log = egress_log(&r);
	assert_entry(log, "127.0.0.1", e->port, "http", false, "loopback address");
	json_decref(log);
	aj_result_free(&r);
	assert_int_equal(egress_server_connections(e->server), 1);
	aj_session_close(s);
}

/* A command holds to the rules exactly as a cell (docs/commands.md): curl
 * reaches the allowed server through the proxy, a host no rule names is
 * refused by it (403, logged), and curl told to go around the proxy
 * reaches nothing (the sandbox has no network of its own). */
static void egress_holds_for_commands(void **state)
{
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	if (aj_session_open(&f->cfg, &s, &err))
		fail_msg("aj_session_open: %s", err.message);
	char line[300];
	struct aj_result r;
	snprintf(line, sizeof line, "curl -sS -m 30 http://127.0.0.1:%d/c-%s", e->port, f->token);
	struct aj_exec x = {.command = line};
	assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), 0);
	if (r.status != AJ_STATUS_OK || !contains(r.stdout_buf, "egress-ok"))
		fail_msg("curl to the allowed server: %s: %s / %s", aj_status_name(r.status),
			 r.stdout_buf, r.stderr_buf);
	json_t *log = egress_log(&r);
	assert_entry(log, "127.0.0.1", e->port, "http", true, "allow-cidr");
	json_decref(log);
	aj_result_free(&r);
	x.command = "curl -s -m 30 -o /dev/null -w '%{http_code}' http://10.9.8.7:8080/";
	assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), 0);
	assert_string_equal(r.stdout_buf, "403");
	log = egress_log(&r);
	assert_entry(log, "10.9.8.7", 8080, "http", false, "");
	json_decref(log);
	aj_result_free(&r);
	snprintf(line, sizeof line, "curl -sS -m 10 --noproxy '*' http://127.0.0.1:%d/x", e->port);
	x.command = line;
	assert_int_equal(aj_session_exec(s, &x, NULL, NULL, &r), 0);
	if (r.status != AJ_STATUS_ERROR)
		fail_msg("curl around the proxy: %s: %s", aj_status_name(r.status), r.stderr_buf);
	aj_result_free(&r);
	assert_int_equal(egress_server_connections(e->server), 1);
	aj_session_close(s);
}

/* The run's first output, seen on its stream, cancels it: the run ends
 * mid-transfer at an event, not at a wall clock the program must beat. */
struct cancel_on_output {
	struct aj_cancel *cancel;
	bool fired;
};

static void cancel_at_first_output(void *arg, const struct aj_event *ev)
{
	struct cancel_on_output *c = arg;
	if (ev->kind == AJ_EVENT_STDOUT && !c->fired) {
		c->fired = true;
		aj_cancel_fire(c->cancel);
	}
}

/* A run ended mid-transfer takes its proxy with it: the server sees its
 * connection closed, and the host keeps no fd of it. */
static void egress_ends_with_the_run(void **state)
{
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	struct aj_result r;
	int fds = count_open_fds();
	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	if (aj_open(&f->cfg, &sb, &err))
		fail_msg("aj_open: %s", err.message);
	char code[512];
	snprintf(code, sizeof code,
		 "import urllib.request\n"
		 "body = urllib.request.urlopen('http://127.0.0.1:%d/slow', timeout=60)\n"
		 "print('streaming', flush=True)\n"
		 "while body.read(1024):\n"
		 "    pass\n",
		 e->port);
	struct cancel_on_output c = {0};
	assert_int_equal(aj_cancel_new(&c.cancel), 0);
	struct aj_stream stream = {.fn = cancel_at_first_output, .arg = &c};
	aj_run_streaming(sb, code, strlen(code), c.cancel, &stream, &r);
	aj_cancel_free(c.cancel);
	aj_close(sb);
	/* Stopped mid-transfer: its first output ("streaming") came on the
	 * stream, and the cancel it fired ended it. (The result's own stdout
	 * is not asked for: the microvm's cancelled result lacks it.) */
	assert_true(c.fired);
	assert_status(&r, AJ_STATUS_KILLED);
	/* The server's own end of the connection stays open until it stops. */
	assert_int_equal(count_open_fds(), fds + (int)egress_server_connections(e->server));
	/* The server notices within its 100 ms tick (waited for up to 30 s:
	 * only a hang fails). */
	for (int i = 0; i < 300 && egress_server_closed(e->server) < 1; i++)
		sleep_ms(100);
	assert_int_equal(egress_server_closed(e->server), 1);
	aj_result_free(&r);
}

/* HTTPS through the proxy (docs/egress.md, "HTTPS"): a loopback server
 * whose certificate a CA made for this case signed, allowed by a CIDR rule.
 * The view's own bundle is there (cert_store_stats counts its CAs) and does
 * not know that CA: the request fails verifying the certificate, which is
 * a TLS error after the server answered, not a network one. With trust_ca
 * naming the CA, the same request succeeds, in a run and in a session, and
 * the bundle holds one CA more. */
static const char https_program[] =
	"import os, ssl, urllib.error, urllib.request\n"
	"print('x509', ssl.create_default_context().cert_store_stats()['x509'])\n"
	"print('bundle', os.environ['SSL_CERT_FILE'], os.path.getsize(os.environ['SSL_CERT_FILE']) > 0)\n"
	"try:\n"
	"    r = urllib.request.urlopen('https://127.0.0.1:%d/tls-%s', timeout=30)\n"
	"    print('body', r.read().decode())\n"
	"except urllib.error.URLError as e:\n"
	"    print('failed', type(e.reason).__name__, e.reason)\n";

static long https_x509(const struct aj_result *r)
{
	const char *p = strstr(r->stdout_buf ? r->stdout_buf : "", "x509 ");
	if (!p)
		fail_msg("no CA count: stdout %s stderr %s message %s", r->stdout_buf, r->stderr_buf,
			 r->message ? r->message : "");
	return strtol(p + 5, NULL, 10);
}

static void egress_https_trusts_the_deployer_ca(void **state)
{
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	struct tls_server *t = &e->tls;
	if (tls_server_start(t))
		fail_msg("cannot make the CA or start the HTTPS server (openssl, python3)");
	char cidr[64], code[1024], want[128];
	snprintf(cidr, sizeof cidr, "127.0.0.1/32:%d", t->port);
	e->cidrs[2] = cidr;
	f->cfg.allow_cidr_count = 3;
	snprintf(code, sizeof code, https_program, t->port, f->token);
	snprintf(want, sizeof want, "body tls-ok /tls-%s", f->token);
	struct aj_result r;

	run_code(&f->cfg, &r, "%s", code);
	assert_status(&r, AJ_STATUS_OK);
	long image_cas = https_x509(&r);
	if (image_cas <= 0 || !contains(r.stdout_buf, "bundle " CONTRACT_CA_BUNDLE " True"))
		fail_msg("the view has no CA bundle: %s", r.stdout_buf);
	if (!contains(r.stdout_buf, "failed SSLCertVerificationError") ||
	    !contains(r.stdout_buf, "certificate verify failed"))
		fail_msg("without trust_ca: not a certificate error: %s %s", r.stdout_buf,
			 r.stderr_buf);
	json_t *log = egress_log(&r);
	assert_entry(log, "127.0.0.1", t->port, "connect", true, "allow-cidr 127.0.0.1/32:");
	json_decref(log);
	aj_result_free(&r);

	f->cfg.trust_ca = t->ca;
	run_code(&f->cfg, &r, "%s", code);
	assert_status(&r, AJ_STATUS_OK);
	if (!contains(r.stdout_buf, want))
		fail_msg("with trust_ca: %s %s", r.stdout_buf, r.stderr_buf);
	assert_int_equal(https_x509(&r), image_cas + 1);
	aj_result_free(&r);

	struct aj_session *s = NULL;
	struct aj_error err = {0};
	if (aj_session_open(&f->cfg, &s, &err))
		fail_msg("aj_session_open: %s", err.message);
	assert_int_equal(aj_session_run(s, code, strlen(code), &r), 0);
	if (!contains(r.stdout_buf, want))
		fail_msg("with trust_ca, in a session: %s %s", r.stdout_buf, r.stderr_buf);
	aj_result_free(&r);
	aj_session_close(s);
	f->cfg.trust_ca = NULL;
	tls_server_stop(t);
}

/* How many processes the program could start beside itself (each sleeps
 * until the count is done): its pids limit at work. */
static unsigned egress_fork_count(const struct aj_config *cfg)
{
	struct aj_result r;
	run_code(cfg, &r,
		 "import os, time\n"
		 "kids = []\n"
		 "while len(kids) < 200:\n"
		 "    try:\n"
		 "        pid = os.fork()\n"
		 "    except OSError:\n"
		 "        break\n"
		 "    if pid == 0:\n"
		 "        time.sleep(60)\n"
		 "        os._exit(0)\n"
		 "    kids.append(pid)\n"
		 "print('forked', len(kids))\n"
		 "for pid in kids:\n"
		 "    os.kill(pid, 9)\n");
	assert_status(&r, AJ_STATUS_OK);
	unsigned n = 0;
	if (sscanf(r.stdout_buf, "forked %u", &n) != 1)
		fail_msg("no count in what the program printed: %s", r.stdout_buf);
	aj_result_free(&r);
	return n;
}

/* The run's limits are the deployer's alone: with egress rules the program
 * starts exactly as many processes as without (boot.py's forwarder, a
 * thread of docker's and gvisor's PID 1, takes none of them). */
static void egress_leaves_the_pids_alone(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.pids = 16;
	struct aj_config without = f->cfg;
	without.allow_cidrs = without.allow_hosts = NULL;
	without.allow_cidr_count = without.allow_host_count = 0;
	unsigned plain = egress_fork_count(&without);
	unsigned ruled = egress_fork_count(&f->cfg);
	assert_true(plain > 0 && plain < 16);
	assert_int_equal(ruled, plain);
}

#define EGRESS_TEST(fn) cmocka_unit_test_setup_teardown(fn, egress_setup, egress_teardown)
#define EGRESS_SESSION_TEST(fn) {"session: " #fn, fn, egress_session_setup, egress_session_teardown, NULL}

static int egress_session_setup(void **state)
{
	harness_via_session = true;
	return egress_setup(state);
}

static int egress_session_teardown(void **state)
{
	harness_via_session = false;
	return egress_teardown(state);
}

#include "secret_cases.h"

#define EGRESS_TABLE                                                                         \
	EGRESS_TEST(egress_reaches_allowed), EGRESS_TEST(egress_refuses_with_reasons),        \
	EGRESS_TEST(egress_bypass_fails), EGRESS_TEST(egress_caps_end_transfers),             \
	EGRESS_TEST(egress_session_narrows), EGRESS_TEST(egress_ends_with_the_run),           \
	EGRESS_TEST(egress_https_trusts_the_deployer_ca),                                     \
	EGRESS_TEST(egress_leaves_the_pids_alone), EGRESS_TEST(egress_holds_for_commands),     \
	EGRESS_SESSION_TEST(egress_bypass_fails), EGRESS_SESSION_TEST(egress_reaches_allowed), \
	SECRET_TABLE

#endif
