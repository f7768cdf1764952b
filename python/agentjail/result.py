"""Execution, Image and FileInfo: a run's result as Python values."""
import base64
import enum
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional



class Status(str, enum.Enum):
    """How a run ended (docs/design.md rules S1-S8). A str, so `== "ok"` works."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT_LIMIT = "output_limit"
    KILLED = "killed"
    SANDBOX_ERROR = "sandbox_error"

    def __str__(self):
        return self.value


# enum aj_status's order (include/agentjail.h; tests/test_abi.py checks it
# against the library's own names).
_STATUSES = list(Status)


def _native():
    """(ffi, lib), loaded on first use: a remote-only install (no C library)
    never gets here for what it needs."""
    from ._native import ffi, lib
    return ffi, lib


def _native_or_none():
    try:
        return _native()
    except ImportError:
        return None


@dataclass(frozen=True)
class Image:
    """An image a session's call produced: a matplotlib figure it left
    open ("figure-1.png") or a new image under outputs/."""

    name: str
    mime: str
    data: bytes

    def __repr__(self):
        return f"Image(name={self.name!r}, mime={self.mime!r}, {len(self.data)} bytes)"


@dataclass(frozen=True)
class FileInfo:
    """An entry of a session's workspace directory."""

    name: str
    type: str  # "file", "directory", "symlink" or "other"
    size: int


@dataclass(frozen=True)
class Execution:
    """What a run printed and how it ended. Failures of the program are
    here, as a status, never raised."""

    status: Status
    exit_code: Optional[int]
    signal: Optional[int]
    stdout_bytes: bytes
    stderr_bytes: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    wall_ms: float
    cpu_ms: float
    memory_kb: int
    message: Optional[str]
    tier: str
    images: List[Image] = field(default_factory=list)
    images_dropped: int = 0
    # The egress proxy's decision log for this run or call (docs/egress.md):
    # {"connections": [{"host", "address", "port", "via", "allowed", "verdict",
    # "failure", "reason", "bytes_out", "bytes_in"}], "allowed", "denied", "failed", ...};
    # None without egress rules.
    egress: Optional[Dict[str, Any]] = None
    # A session's call: the pids of its background commands still running
    # when the call ended (Session.spawn, Session.pty).
    background: List[int] = field(default_factory=list)
    # A notebook cell's (serve's "value": true, aj_session_run_value): its
    # last bare expression's repr() and HTML, not printed; else None.
    value: Optional[str] = None
    value_html: Optional[str] = None
    # A remote run's: the contract object serve answered (to_json gives it
    # back as it came).
    source: Optional[Dict[str, Any]] = field(default=None, repr=False, compare=False)

    @property
    def ok(self):
        """True when the program exited 0."""
        return self.status is Status.OK

    @property
    def stdout(self):
        """stdout as text (invalid UTF-8 shown as U+FFFD)."""
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self):
        return self.stderr_bytes.decode("utf-8", "replace")

    def text(self):
        """The result as the text a model reads well: the same words the
        MCP server sends (the library's aj_result_text; without the library,
        as in a remote-only install, _text.py's copy of it, which
        tests/serve/test_remote_text.py holds to the library's words)."""
        native = _native_or_none()
        if native is None:
            from ._text import result_text
            return result_text(self)
        ffi, lib = native
        with _as_c_result(self) as res:
            return _take_string(lib.aj_result_text(res))

    def to_json(self):
        """One JSON object of the command-line contract (`agentjail run
        --json`), as a str. A remote run's is the object serve sent (with
        its run_id)."""
        if self.source is not None:
            return json.dumps(self.source)
        ffi, lib = _native()
        with _as_c_result(self) as res:
            tier = ffi.new("enum aj_tier *")
            if lib.aj_tier_parse(self.tier.encode(), tier):
                tier[0] = 0
            return _take_string(lib.aj_result_to_json(res, tier[0]))

    def __repr__(self):
        out = self.stdout
        if len(out) > 60:
            out = out[:57] + "..."
        return (f"Execution(status={self.status.value!r}, exit_code={self.exit_code!r}, "
                f"stdout={out!r}, wall_ms={self.wall_ms:.1f})")


def _take_string(p):
    ffi, lib = _native()
    if p == ffi.NULL:
        raise MemoryError("agentjail: out of memory")
    try:
        return ffi.string(p).decode("utf-8", "replace")
    finally:
        lib.aj_free(p)


class _as_c_result:
    """A C aj_result borrowing an Execution's bytes, for the library's own
    renderings of it; the buffers live as long as this object."""

    def __init__(self, ex):
        ffi, lib = _native()
        self._ffi = ffi
        self._keep = []
        res = ffi.new("struct aj_result *")
        res.status = _STATUSES.index(ex.status)
        res.has_exit_code = ex.exit_code is not None
        res.exit_code = ex.exit_code or 0
        res.signal = ex.signal or 0
        res.stdout_buf = self._buf(ex.stdout_bytes)
        res.stdout_len = len(ex.stdout_bytes)
        res.stdout_truncated = ex.stdout_truncated
        res.stderr_buf = self._buf(ex.stderr_bytes)
        res.stderr_len = len(ex.stderr_bytes)
        res.stderr_truncated = ex.stderr_truncated
        res.wall_ms = ex.wall_ms
        res.cpu_ms = ex.cpu_ms
        res.memory_kb = ex.memory_kb
        res.message = self._buf(ex.message.encode()) if ex.message is not None else ffi.NULL
        if ex.images:
            ims = ffi.new("struct aj_image[]", len(ex.images))
            self._keep.append(ims)
            for i, im in enumerate(ex.images):
                ims[i].name = self._buf(im.name.encode())
                ims[i].mime = self._buf(im.mime.encode())
                ims[i].data = ffi.cast("unsigned char *", self._buf(im.data))
                ims[i].len = len(im.data)
            res.images = ims
        res.image_count = len(ex.images)
        res.images_dropped = ex.images_dropped
        # to_json carries the log as `agentjail run --json` does.
        res.egress_log = (self._buf(json.dumps(ex.egress).encode())
                          if ex.egress is not None else ffi.NULL)
        if ex.background:
            pids = ffi.new("uint32_t[]", list(ex.background))
            self._keep.append(pids)
            res.background_pids = pids
        res.background_count = len(ex.background)
        if ex.value is not None:
            res.value_text = self._buf(ex.value.encode())
            if ex.value_html is not None:
                res.value_html = self._buf(ex.value_html.encode())
        self.res = res

    def _buf(self, b):
        c = self._ffi.new("char[]", b)  # NUL-terminated past len, as the library's own
        self._keep.append(c)
        return c

    def __enter__(self):
        return self.res

    def __exit__(self, *exc):
        self._keep.clear()
        return False


def execution_from_c(res, tier):
    """Copies a filled C aj_result into an Execution (the caller frees it)."""
    ffi, lib = _native()
    images = []
    for i in range(res.image_count):
        im = res.images[i]
        images.append(Image(ffi.string(im.name).decode("utf-8", "replace"),
                            ffi.string(im.mime).decode("utf-8", "replace"),
                            ffi.unpack(ffi.cast("char *", im.data), im.len)))
    return Execution(
        status=_STATUSES[res.status],
        exit_code=res.exit_code if res.has_exit_code else None,
        signal=res.signal or None,
        stdout_bytes=ffi.unpack(res.stdout_buf, res.stdout_len) if res.stdout_buf else b"",
        stderr_bytes=ffi.unpack(res.stderr_buf, res.stderr_len) if res.stderr_buf else b"",
        stdout_truncated=bool(res.stdout_truncated),
        stderr_truncated=bool(res.stderr_truncated),
        wall_ms=res.wall_ms,
        cpu_ms=res.cpu_ms,
        memory_kb=res.memory_kb,
        message=(ffi.string(res.message).decode("utf-8", "replace")
                 if res.message != ffi.NULL else None),
        tier=tier,
        images=images,
        images_dropped=res.images_dropped,
        egress=(json.loads(ffi.string(res.egress_log).decode("utf-8", "replace"))
                if res.egress_log != ffi.NULL else None),
        background=[int(res.background_pids[i]) for i in range(res.background_count)],
        value=(ffi.string(res.value_text).decode("utf-8", "replace")
               if res.value_text != ffi.NULL else None),
        value_html=(ffi.string(res.value_html).decode("utf-8", "replace")
                    if res.value_html != ffi.NULL else None),
    )


def execution_from_json(o, tier=None, keep_source=False):
    """An Execution from the contract object (`agentjail run --json`,
    serve's answer): stdout and stderr are its text (U+FFFD where the bytes
    were not UTF-8), their UTF-8 the bytes."""
    return Execution(
        status=Status(o["status"]),
        exit_code=o.get("exit_code"),
        signal=o.get("signal"),
        stdout_bytes=(o.get("stdout") or "").encode("utf-8"),
        stderr_bytes=(o.get("stderr") or "").encode("utf-8"),
        stdout_truncated=bool(o.get("stdout_truncated")),
        stderr_truncated=bool(o.get("stderr_truncated")),
        wall_ms=float(o.get("wall_ms") or 0),
        cpu_ms=float(o.get("cpu_ms") or 0),
        memory_kb=int(o.get("memory_kb") or 0),
        message=o.get("message"),
        tier=o.get("tier") or tier,
        images=[Image(i.get("name") or "", i.get("mime") or "", base64.b64decode(i.get("data") or ""))
                for i in o.get("images") or []],
        images_dropped=int(o.get("images_dropped") or 0),
        egress=o.get("egress"),
        background=[int(p) for p in o.get("background") or []],
        value=(o.get("value") or {}).get("text"),
        value_html=(o.get("value") or {}).get("html"),
        source=o if keep_source else None,
    )
