# A one-shot JavaScript run, as the Python program every tier's launcher
# runs unchanged (src/api/language.c puts the call of run_js, with the
# JavaScript in base64 and the run's memory limit, after this file,
# node_flags.py and TS_STRIP_JS, src/core/ts_strip.js as a string). It
# writes the JavaScript to a file in /tmp, outside the workspace, and
# replaces itself with node on it: the exit code, stdout and stderr are
# node's, under the run's limits, which were set from outside before this
# started. TypeScript (ts) is first made JavaScript by a node of its own on
# ts_strip.js: its syntax errors (exit 1) or the words for an image without
# a TypeScript compiler (exit 127) end the run before the program starts.


def strip_types(path, flags, source):
    """Writes source's JavaScript to /tmp/.agentjail-main.js, or exits as
    the node that strips its types did."""
    import os
    import subprocess
    import sys

    ts = "/tmp/.agentjail-main.ts"
    write_private(ts, source)
    call = "\nstripFile(%r, '/tmp/.agentjail-main.js', %r)\n" % (ts, ts)
    rc = subprocess.call([path] + flags + ["-e", TS_STRIP_JS + call], env=node_environment())
    if rc < 0:
        # Its signal is the run's (SIGXCPU: the CPU limit), as node's own.
        import signal

        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    if rc:
        sys.exit(rc if rc > 0 else 128 - rc)
    os.unlink(ts)


def write_private(path, data):
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def run_js(source_b64, memory_mb, ts=False):
    import base64
    import os
    import sys

    path = node_path()
    if not path:
        sys.stderr.write(NODE_NOT_INSTALLED + "\n")
        sys.exit(127)  # as a shell says "not found"
    try:
        flags = node_flags(memory_mb)
    except RuntimeError as e:
        sys.stderr.write("%s\n" % e)
        sys.exit(125)  # as the sandbox's own failure (docs/design.md, X4)
    program = "/tmp/.agentjail-main.js"
    if ts:
        strip_types(path, flags, base64.b64decode(source_b64))
        # Its stack names the TypeScript's lines (the inline source map).
        flags = flags + ["--enable-source-maps"]
    else:
        write_private(program, base64.b64decode(source_b64))
    sys.stdout.flush()
    os.execve(path, [path] + flags + [program], node_environment())
