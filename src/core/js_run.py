# A one-shot JavaScript run, as the Python program every tier's launcher
# runs unchanged (src/api/language.c puts the call of run_js, with the
# JavaScript in base64 and the run's memory limit, after this file and
# node_flags.py). It writes the JavaScript to a file in /tmp, outside the
# workspace, and replaces itself with node on it: the exit code, stdout
# and stderr are node's, under the run's limits, which were set from
# outside before this started.


def run_js(source_b64, memory_mb):
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
    fd = os.open(program, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(base64.b64decode(source_b64))
    sys.stdout.flush()
    os.execve(path, [path] + flags + [program], node_environment())
