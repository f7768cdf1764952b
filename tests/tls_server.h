/* An HTTPS server on 127.0.0.1 whose certificate is signed by a CA made for
 * it (tests/egress_cases.h, docs/egress.md "HTTPS"): the CA and the server's
 * key and certificate are made at start with the openssl command, in a
 * directory of the test's own; the server is a python3 process of the
 * test's (it dies with the test: PDEATHSIG), answering each request with
 * "tls-ok PATH" and going on after a handshake a client refused. Each
 * request's head is appended to DIR/heads.log, and a path starting /echo
 * is answered with that head as its body and its Authorization value in an
 * X-Echo-Auth header: what the secrets' cases judge (secret_cases.h). A
 * path starting /stream sends one event, and the next only once a request
 * for /release came. Each connection has a thread of its own. */
#ifndef AJ_TEST_TLS_SERVER_H
#define AJ_TEST_TLS_SERVER_H

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct tls_server {
	pid_t pid;
	int port;
	char dir[64];
	char ca[96]; /* the CA's certificate, PEM: what --trust-ca names */
};

static const char tls_server_py[] =
	"import socket, ssl, sys, threading\n"
	"d = sys.argv[1]\n"
	"ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
	"ctx.load_cert_chain(d + '/server.pem', d + '/server.key')\n"
	"ls = socket.socket()\n"
	"ls.bind(('127.0.0.1', 0))\n"
	"ls.listen(16)\n"
	"print(ls.getsockname()[1], flush=True)\n"
	"released = threading.Event()\n"
	"lock = threading.Lock()\n"
	"def serve(c):\n"
	"    c.settimeout(30)\n"
	"    try:\n"
	"        s = ctx.wrap_socket(c, server_side=True)\n"
	"        head = b''\n"
	"        while b'\\r\\n\\r\\n' not in head:\n"
	"            b = s.recv(4096)\n"
	"            if not b:\n"
	"                break\n"
	"            head += b\n"
	"        with lock, open(d + '/heads.log', 'ab') as log:\n"
	"            log.write(head + b'--\\n')\n"
	"        path = head.split(b' ')[1].decode() if head.count(b' ') >= 2 else '?'\n"
	"        if path.startswith('/echo'):\n"
	"            auth = [l for l in head.split(b'\\r\\n') if l.lower().startswith(b'authorization:')]\n"
	"            echo = auth[0].split(b':', 1)[1].strip() if auth else b'-'\n"
	"            s.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\nX-Echo-Auth: ' + echo + "
	"b'\\r\\nContent-Length: ' + str(len(head)).encode() + b'\\r\\n\\r\\n' + head)\n"
	"        elif path.startswith('/stream'):\n"
	"            # An event, then the next only once /release came.\n"
	"            s.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Type: text/event-stream\\r\\n\\r\\n"
	"data: one\\n\\n')\n"
	"            released.wait(60)\n"
	"            s.sendall(b'data: two\\n\\n')\n"
	"        else:\n"
	"            if path.startswith('/release'):\n"
	"                released.set()\n"
	"            s.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\n\\r\\ntls-ok ' + "
	"path.encode())\n"
	"        s.close()\n"
	"    except (OSError, ssl.SSLError):\n"
	"        c.close()\n"
	"while True:\n"
	"    c, _ = ls.accept()\n"
	"    threading.Thread(target=serve, args=(c,), daemon=True).start()\n";

/* The CA (CA:TRUE, keyCertSign) and a server certificate for 127.0.0.1
 * and localhost signed by it, EC keys (quick to make). */
static int tls_make_certificates(const char *d)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "set -e; cd %s; "
		 "printf 'basicConstraints=critical,CA:FALSE\\nkeyUsage=critical,digitalSignature\\n"
		 "extendedKeyUsage=serverAuth\\nsubjectAltName=IP:127.0.0.1,DNS:localhost\\n"
		 "subjectKeyIdentifier=hash\\nauthorityKeyIdentifier=keyid\\n' >server.ext; "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout ca.key -out ca.pem -days 2 -subj '/CN=agentjail test CA' "
		 "-addext basicConstraints=critical,CA:TRUE "
		 "-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null; "
		 "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null; "
		 "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
		 "-out server.pem -days 2 -extfile server.ext 2>/dev/null",
		 d);
	return system(cmd) == 0 ? 0 : -1;
}

static void tls_server_stop(struct tls_server *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
		t->pid = 0;
	}
	if (t->dir[0]) {
		static const char *const files[] = {"ca.key",	  "ca.pem",	 "ca.srl",
						    "server.key", "server.csr", "server.pem",
						    "server.ext", "heads.log"};
		char p[160];
		for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
			snprintf(p, sizeof p, "%s/%s", t->dir, files[i]);
			unlink(p);
		}
		rmdir(t->dir);
		t->dir[0] = '\0';
	}
}

/* 0 with t->port and t->ca, or -1 (and nothing left). */
static int tls_server_start(struct tls_server *t)
{
	memset(t, 0, sizeof *t);
	snprintf(t->dir, sizeof t->dir, "/tmp/aj-tls-XXXXXX");
	if (!mkdtemp(t->dir)) {
		t->dir[0] = '\0';
		return -1;
	}
	snprintf(t->ca, sizeof t->ca, "%s/ca.pem", t->dir);
	int out[2];
	if (tls_make_certificates(t->dir) || pipe2(out, O_CLOEXEC) < 0) {
		tls_server_stop(t);
		return -1;
	}
	t->pid = fork();
	if (t->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], 1);
		execl("/usr/bin/python3", "python3", "-I", "-c", tls_server_py, t->dir, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	/* Its port, once it listens: a generous bound that only catches a
	 * server that never starts. */
	char line[32] = "";
	size_t n = 0;
	struct pollfd p = {.fd = out[0], .events = POLLIN};
	while (t->pid > 0 && n < sizeof line - 1 && !strchr(line, '\n') && poll(&p, 1, 30000) > 0) {
		ssize_t r = read(out[0], line + n, sizeof line - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		line[n] = '\0';
	}
	close(out[0]);
	t->port = atoi(line);
	if (t->pid < 0 || t->port <= 0) {
		tls_server_stop(t);
		return -1;
	}
	return 0;
}

#endif
