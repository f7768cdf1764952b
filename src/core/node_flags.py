# How Node is started in a sandbox, for a session's JavaScript (repl.py)
# and a one-shot JavaScript run (js_run.py) alike: which node, and the flags
# its memory limit calls for. Put in front of both at build time
# (tools/c_string.py).
#
# On the process and gvisor tiers the memory limit is RLIMIT_AS, the
# address space of each process, and V8 reserves address space it may
# never use: with its JIT, a 512 MiB code range at start (node 20 on this
# host, in the process tier's sandbox: 704 MiB of RLIMIT_AS is the least it
# starts under, 640 is not), without it (--jitless, a 16 MiB heap) 112 MiB
# (96 is not: a thread of its own finds no room for its stack; docs/javascript.md
# has the figures). So under an address-space limit below NODE_JIT_AS_MB node runs
# --jitless (no JIT: slower on hot loops, no WebAssembly), and its heap
# (--max-old-space-size) is what the limit leaves past what node reserves
# besides it. Where the limit is a cgroup's (container, docker, microvm: no
# RLIMIT_AS), the heap is three quarters of the session's memory, so V8
# collects its garbage before the cgroup's OOM killer would end it. Not a
# protection: the rlimit and the cgroup are, set from outside.
NODE_NOT_INSTALLED = ("javascript: node is not installed in this sandbox's image "
                      "(Debian package nodejs)")
NODE_JIT_AS_MB = 1024    # an address-space limit from which node keeps its JIT
NODE_JIT_BASE_MB = 704   # what node with its JIT reserves besides its heap
NODE_BASE_MB = 96        # the same, --jitless
NODE_HEAP_MIN_MB = 16    # the least heap worth starting with


def node_path():
    import shutil

    return shutil.which("node") or shutil.which("nodejs")


def node_flags(memory_mb):
    """node's flags for a sandbox whose memory limit is memory_mb (MiB),
    or raises RuntimeError saying why node cannot start under it."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        heap = max(NODE_HEAP_MIN_MB, int(memory_mb or 256) * 3 // 4)
        return ["--max-old-space-size=%d" % heap]
    limit = soft >> 20
    jit = limit >= NODE_JIT_AS_MB
    heap = (limit - (NODE_JIT_BASE_MB if jit else NODE_BASE_MB)) * 3 // 4
    if heap < NODE_HEAP_MIN_MB:
        raise RuntimeError(
            "javascript: node cannot start under this sandbox's memory limit of %d MiB (an "
            "address-space limit on this tier: node needs at least %d MiB; raise --memory)"
            % (limit, NODE_BASE_MB + NODE_HEAP_MIN_MB * 4 // 3 + 1))
    # --v8-pool-size: V8's worker threads, each a stack of address space.
    flags = ["--max-old-space-size=%d" % heap, "--max-semi-space-size=2", "--v8-pool-size=1"]
    if not jit:
        flags += ["--jitless", "--no-expose-wasm"]
    return flags


def node_environment():
    """The environment node starts with: the sandbox's, with libuv's
    thread pool at two threads (each a stack of address space)."""
    import os

    env = dict(os.environ)
    env.setdefault("UV_THREADPOOL_SIZE", "2")
    return env
