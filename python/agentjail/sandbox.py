"""Sandbox: run(code) -> Execution, the shape agent builders already write.

    with Sandbox(tier="container", timeout=5) as sb:
        ex = sb.run("print(6 * 7)")
        ex.stdout, ex.status, ex.exit_code

Each run is a fresh sandbox of the tier; nothing persists between runs (for
that, sandbox.session()). One Sandbox may run from many threads at once,
each run isolated from the others; the GIL is released while a run is in
progress.

Output as it happens (docs/python.md): run(code, on_stdout=print),
stream(code), submit(code) -> RunHandle, and arun / astream for asyncio."""
import os

from ._calls import Calls, Handle
from ._native import ffi, lib
from ._runs import execute, in_language
from ._streams import RunMethods
from .config import Config
from .errors import ConfigError, SandboxClosed, SandboxUnavailable
from .session import Session
from .tools import RunPythonTool


class Sandbox(RunMethods, Handle):
    """A sandbox of one tier with the deployer's limits.

    tier: "process", "container", "microvm", "docker" or "gvisor".
    timeout (wall-clock seconds, 10), cpu_sec (10), memory_mb (256), pids
    (64), file_size_mb (16), disk_mb (64), output_kb (1024 per stream),
    open_files (256); image (container/microvm/docker: a name under
    $AGENTJAIL_IMAGES or /var/lib/agentjail/images, or a path); accel
    (microvm: "kvm", "tcg", or None to probe; gvisor: "kvm", "ptrace" or None);
    vm_pool (microvm, gvisor: sandboxes ready ahead); docker_socket,
    docker_image; warm (process, container: each run a fork of an
    interpreter started ahead, False) and preload (the modules it imports
    first: "numpy,pandas" or ["numpy", "pandas"]; needs warm=True); ro_bind
    (process, container, gvisor, docker: host paths every run sees
    read-only, "HOST" or "HOST:SANDBOX", or a list of them); uid_base,
    slots, state_dir, cgroup_root, python; and the session limits
    session_idle_sec, session_lifetime_sec, session_cpu_sec, max_sessions,
    transfer_mb, max_images, image_kb; egress (docs/egress.md): allow_hosts
    ("pypi.org", "*.pythonhosted.org:443") and allow_cidrs
    ("10.1.0.0/16:5432"), each a rule or a list of them, the CLI's
    --allow-host and --allow-cidr (none: no network at all), and the caps
    egress_out_mb, egress_in_mb, egress_connections, egress_kbps;
    trust_ca (a PEM file of CA certificates HTTPS in the sandbox trusts
    beside the image's bundle, the CLI's --trust-ca); env ({"TZ": "UTC"}:
    variables the code gets beside the sandbox's own, the CLI's --env;
    LD_*, the proxy variables, PATH, HOME and the PYTHON* that change what
    runs are refused with ConfigError naming why); secrets (docs/secrets.md:
    credentials the code can use but never see, a list of dicts
    {"name": "GH", "value": "...", "hosts": ["api.github.com:443"],
    "header": "Authorization", "format": "Bearer {value}"} or {"name",
    "value", "hosts", "placeholder": True}, with optional "plain_http" and
    "requests"; they need allow_hosts) and egress_ca (a PEM file of CAs the
    egress proxy trusts for those hosts' servers). Secrets are write-only:
    no attribute or getter gives a value back (limit("secrets") is their
    names), repr shows none, and a refusal names the field, never the
    value. A session has its sandbox's. None means the library's default.

    Raises ConfigError for a value out of range and SandboxUnavailable
    when the tier cannot run here (with `agentjail check`'s reason)."""

    tier_name = None  # the aliases fix it
    _tool_target = "sandbox"  # what RunPythonTool runs on (see agentjail.tools)

    def __init__(self, tier=None, **options):
        tier = tier or self.tier_name or "process"
        if self.tier_name and tier != self.tier_name:
            raise TypeError(f"{type(self).__name__} is the {self.tier_name} tier, not {tier!r}")
        self._config = Config(tier, options)
        if self._config.secrets is not None:
            # Held once, write-only (session(env=) opens with them again).
            options["secrets"] = self._config.secrets
        self._options = options
        self._calls = Calls(lambda: SandboxClosed("agentjail: the sandbox is closed"))
        out = ffi.new("struct aj_sandbox **")
        err = ffi.new("struct aj_error *")
        if lib.aj_open(self._config.c, out, err):
            message, reason = self._config.open_failure(err)
            raise SandboxUnavailable(tier, reason,
                                     f"the {tier} tier cannot start: {message}"
                                     + ("" if reason == message else f" (check: {reason})"))
        self._handle = out[0]

    @property
    def tier(self):
        return self._config.tier

    @property
    def timeout(self):
        return self._config.c.limits.wall_sec

    def limit(self, name):
        """A configured value by its keyword ("memory_mb")."""
        return self._config.value(name)

    # run(code, timeout=None, on_stdout=, on_stderr=, on_image=), stream,
    # submit, arun, astream: RunMethods, over this.
    def _execute(self, code, timeout, listener=None, started=None, language="python"):
        plain, streaming = in_language(language, lib.aj_run_cancellable, lib.aj_run_streaming,
                                       lib.aj_run_lang)
        return execute(self, plain, streaming, code, timeout, listener, started)

    def cancel(self):
        """Stops every run in progress on this sandbox (from any thread):
        each ends with status killed, "cancelled by the caller". Returns how
        many were stopped; later runs are not affected."""
        return self._calls.cancel()

    def session(self, env=None):
        """A session of this sandbox's tier and limits: an interpreter that
        keeps its state, files and imports across calls. env: variables
        for this session's code, over the sandbox's own (checked as the
        sandbox's are)."""
        if self.closed:
            raise SandboxClosed("agentjail: the sandbox is closed")
        if env is None:
            return Session(self._config)
        if not isinstance(env, dict):
            raise ConfigError(f"env: must be a dict of names to values, "
                              f"not {type(env).__name__}")
        merged = {**(self._options.get("env") or {}), **env}
        return Session(Config(self.tier, dict(self._options, env=merged)))

    def restore(self, path, key):
        """A new session of this sandbox's tier and limits (today's: not
        the checkpoint's) with the state of the checkpoint at path, whose
        tag is checked under key first (CheckpointRefused: changed, cut
        short, another key's). Returns (session, CheckpointInfo)."""
        if self.closed:
            raise SandboxClosed("agentjail: the sandbox is closed")
        from .checkpoint import checkpoint_error, info_of, key_of
        k = key_of(key)._c()
        out = ffi.new("struct aj_session **")
        info = ffi.new("struct aj_checkpoint_info *")
        err = ffi.new("struct aj_error *")
        rc = lib.aj_session_restore(self._config.c, k, os.fsencode(path), out, info, err)
        if rc:
            raise checkpoint_error(-rc, ffi.string(err.message).decode("utf-8", "replace"))
        return Session(self._config, _handle=out[0]), info_of(info)

    def tool(self, session=False):
        """The run_python tool for a model (see agentjail.tools)."""
        return RunPythonTool(self, session=session)

    # close() (Handle): stops runs in progress, waits for them, and frees
    # the sandbox. Idempotent; later runs raise SandboxClosed.
    _free = staticmethod(lib.aj_close)

    @property
    def closed(self):
        return self._calls.closed

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return f"<{type(self).__name__} tier={self.tier} timeout={self.timeout:g}s {state}>"


class ProcessSandbox(Sandbox):
    """A restricted subprocess: rlimits, namespaces, no network."""
    tier_name = "process"


class ContainerSandbox(Sandbox):
    """Namespaces, a read-only image root, cgroup limits, seccomp."""
    tier_name = "container"


class MicrovmSandbox(Sandbox):
    """Its own kernel in a QEMU microVM (KVM where it works, else TCG)."""
    tier_name = "microvm"


class DockerSandbox(Sandbox):
    """A Docker Engine container with hardened settings."""
    tier_name = "docker"


class GvisorSandbox(Sandbox):
    """gVisor's user-space kernel (Debian's runsc), no hypervisor needed."""
    tier_name = "gvisor"
