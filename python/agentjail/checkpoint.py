"""Checkpoints, pauses and forks of a session (docs/checkpoints.md).

    key = CheckpointKey.load("/var/lib/agentjail/checkpoint.key", create=True)
    info = session.checkpoint("/var/lib/agentjail/ckpt/a.ckpt", key)
    later = sandbox.restore("/var/lib/agentjail/ckpt/a.ckpt", key)
    a, b = session.fork(2)
    session.pause()      # its sandbox freed; the next call brings it back

A checkpoint file is authenticated under the key (HMAC-SHA256): one that
was changed, cut short or made under another key raises CheckpointRefused
before any of it is used."""
import errno
import os
from dataclasses import dataclass

from .errors import CheckpointError, CheckpointRefused

KEY_BYTES = 32
MAX_FORK = 100  # AJ_MAX_FORK
__all__ = ["CheckpointError", "CheckpointInfo", "CheckpointKey", "CheckpointRefused",
           "StoredCheckpoint"]


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint carried: its state's size, the workspace's files,
    how many variables could not be written, and in words what was not
    carried ("" when nothing): those variables by name and why, background
    commands (never restarted), the JavaScript state."""
    bytes: int
    files: int
    left_out: int
    note: str


@dataclass(frozen=True)
class StoredCheckpoint:
    """A checkpoint serve keeps for the key (POST .../checkpoint): its id
    (for RemoteSandbox.restore), the session it was made of, its name (or
    None), when it was made and expires (Unix seconds), and what it
    carried."""
    id: str
    session: str
    name: object
    created: int
    expires: int
    bytes: int
    files: int
    left_out: int
    note: str

    @classmethod
    def _of(cls, rec):
        return cls(rec["id"], rec.get("session") or "", rec.get("name"),
                   int(rec.get("created") or 0), int(rec.get("expires") or 0),
                   int(rec.get("bytes") or 0), int(rec.get("files") or 0),
                   int(rec.get("left_out") or 0), rec.get("note") or "")


class CheckpointKey:
    """The host's key for checkpoint files: 32 bytes, from a file of this
    user's with mode 0600 (CheckpointKey.load), or given (CheckpointKey(b))."""

    def __init__(self, key):
        key = bytes(key)
        if len(key) != KEY_BYTES:
            raise ValueError(f"a checkpoint key is {KEY_BYTES} bytes, not {len(key)}")
        self._bytes = key

    @classmethod
    def load(cls, path, create=False):
        """The key in path; with create, one is made there first (random,
        mode 0600) if there is none. A file another user could read or
        change is refused (CheckpointError, EPERM)."""
        from ._native import ffi, lib
        key = ffi.new("struct aj_checkpoint_key *")
        err = ffi.new("struct aj_error *")
        rc = lib.aj_checkpoint_key_load(os.fsencode(path), bool(create), key, err)
        if rc:
            raise CheckpointError(-rc, ffi.string(err.message).decode("utf-8", "replace"))
        # Item by item: the same under cffi and the ctypes fallback.
        return cls(bytes(key.bytes[i] for i in range(KEY_BYTES)))

    def _c(self):
        from ._native import ffi
        key = ffi.new("struct aj_checkpoint_key *")
        for i, b in enumerate(self._bytes):
            key.bytes[i] = b
        return key

    def __repr__(self):
        return "<CheckpointKey>"  # never the bytes


def key_of(key):
    if isinstance(key, CheckpointKey):
        return key
    if isinstance(key, (bytes, bytearray, memoryview)):
        return CheckpointKey(key)
    raise TypeError("key: a CheckpointKey (CheckpointKey.load(path)) or 32 bytes, "
                    f"not {type(key).__name__}")


def info_of(c):
    from ._native import ffi
    return CheckpointInfo(int(c.bytes), int(c.files), int(c.left_out),
                          ffi.string(c.note).decode("utf-8", "replace"))


def checkpoint_error(number, message):
    """The error for a failed checkpoint call's errno: CheckpointRefused
    for a file that is not the key's own writing (EBADMSG)."""
    return (CheckpointRefused if number == errno.EBADMSG else CheckpointError)(number, message)
