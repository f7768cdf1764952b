"""What the package raises. A program's own failure (an exception, a
non-zero exit, a timeout, a limit) is never one of these: it is an
Execution with a status. These are for the sandbox and the caller."""


class AgentjailError(Exception):
    """Base of every error the package raises."""


class ConfigError(AgentjailError, ValueError):
    """A limit or option out of range; the message names it and its range."""


class SandboxUnavailable(AgentjailError):
    """The tier cannot run here. `reason` is `agentjail check`'s reason
    ("network namespace: unshare: EPERM"); `tier` the tier asked for."""

    def __init__(self, tier, reason, message=None):
        self.tier = tier
        self.reason = reason
        super().__init__(message or f"the {tier} tier cannot run here: {reason}")


class SessionLimitReached(AgentjailError):
    """A session cannot open because `max_sessions` sessions are open in
    this process already (`limit`): the tier itself can run; close a
    session, or raise the cap."""

    def __init__(self, limit, message):
        self.limit = limit
        super().__init__(message)


class SandboxError(AgentjailError):
    """The sandbox itself failed during a run (status sandbox_error): never
    the code's fault. `execution` holds the result, message included."""

    def __init__(self, execution):
        self.execution = execution
        super().__init__(execution.message or "the sandbox failed")


class InvalidCode(AgentjailError, ValueError):
    """Code the sandbox refuses before starting anything: a NUL byte, or
    more than the library accepts."""


class InvalidCommand(AgentjailError, ValueError):
    """A command Session.exec refuses before it starts: both or neither of
    a shell line and an argv, a cwd outside the workspace or through a
    symlink, an environment variable the sandbox's rules refuse, a
    timeout past the sandbox's; the message names which."""


class ProcessError(AgentjailError, OSError):
    """A background command's call refused: no such command in the session
    (errno ESRCH), its stdin closed (EPIPE), a bad signal (EINVAL)."""


class SandboxClosed(AgentjailError, ValueError):
    """The sandbox (or session) was closed; like I/O on a closed file."""


class SessionClosed(SandboxClosed):
    """The session ended (its idle timeout, its lifetime, its CPU budget, or
    close()); `reason` says which. Its files and state are gone."""

    def __init__(self, reason):
        self.reason = reason
        super().__init__(f"the session is closed: {reason}")


class FileTransferError(AgentjailError, OSError):
    """A put, get or list refused or failed; `errno` says how (ENOENT,
    EFBIG, EINVAL for a path outside the workspace...)."""


class EgressError(AgentjailError, OSError):
    """Session.egress_keep refused: a rule the session does not have (a
    call may only drop rules, never add one), named in the message; errno
    is EPERM there. Nothing changed. Session.secrets_keep of a secret the
    session does not have is the same."""


class CheckpointError(AgentjailError, OSError):
    """A checkpoint, restore, fork or pause failed; `errno` says how
    (EALREADY: paused already; EFBIG: the state passed the sandbox's file
    or disk limit; ENOTSUP: not offered here)."""


class CheckpointRefused(CheckpointError):
    """The checkpoint file is not the key's own writing (changed, cut
    short, another key's, or no checkpoint at all): nothing of it was used."""


class ServeError(AgentjailError):
    """agentjail serve answered with an error (ServeClient, connect()):
    `status` the HTTP status (0: the connection failed), `code` serve's
    error code ("no_such_run", "queue_full", ...), `body` the whole answer,
    `retry_after` the seconds its Retry-After header asked for (None
    without one). Where the local library raises a type of its own for the
    same refusal (SessionClosed, FileTransferError, ProcessError, ...), the
    remote client raises a class that is both (see remote_error)."""

    def __init__(self, status, code, message, body=None, retry_after=None):
        self.status, self.code, self.body = status, code, body or {}
        self.retry_after = retry_after
        self.message = message
        AgentjailError.__init__(self, f"serve: {status} {code}: {message}" if status else
                                f"serve: {message}")


class Unauthorized(ServeError):
    """401: no key, or one serve does not hold; 403: the key may not do
    this (a --metrics key's /metrics, an origin refused)."""


class RateLimited(ServeError):
    """429: the key's runs per minute, the server's queue, a key's
    sessions or body budget; `retry_after` says when to try again."""


class RunLost(ServeError):
    """A run whose worker was lost (502 run_lost, or a result event that
    says so): `retry_safe` is True when the run never started, so sending it
    again cannot run the code twice; `may_have_started` when it may have."""

    @property
    def retry_safe(self):
        return bool(self.body.get("retry_safe"))

    @property
    def may_have_started(self):
        return bool(self.body.get("may_have_started"))


class Unavailable(ServeError):
    """503 after the client's retries (queue_timeout, no_worker,
    shutting_down, sandbox_unavailable): nothing ran."""


class RemoteSessionClosed(ServeError, SessionClosed):
    """410 session_closed, or 404 for a session serve no longer has."""

    def __init__(self, status, code, message, body=None, retry_after=None):
        ServeError.__init__(self, status, code, f"the session is closed: {message}", body,
                            retry_after)
        self.reason = message


class RemoteSessionLimit(ServeError, SessionLimitReached):
    """429 session_limit: the key (or the server) has its most sessions."""

    def __init__(self, status, code, message, body=None, retry_after=None):
        ServeError.__init__(self, status, code, message, body, retry_after)
        self.limit = None


def _with_errno(base):
    class _Remote(ServeError, base):
        def __init__(self, status, code, message, body=None, retry_after=None, errno=None):
            ServeError.__init__(self, status, code, message, body, retry_after)
            self.errno, self.strerror = errno, message

        def __str__(self):
            return ServeError.__str__(self)
    _Remote.__name__ = _Remote.__qualname__ = "Remote" + base.__name__
    _Remote.__doc__ = f"serve's refusal of what the local library raises as {base.__name__}."
    return _Remote


RemoteFileTransferError = _with_errno(FileTransferError)
RemoteProcessError = _with_errno(ProcessError)
RemoteEgressError = _with_errno(EgressError)
RemoteCheckpointError = _with_errno(CheckpointError)
RemoteCheckpointRefused = _with_errno(CheckpointRefused)


class RemoteInvalidCommand(ServeError, InvalidCommand):
    """400 for a command serve refuses before it starts."""


class RemoteInvalidCode(ServeError, InvalidCode):
    """400 for code serve refuses before it starts (a NUL byte, too long)."""


class RemoteConfigError(ServeError, ConfigError):
    """400 for a limit, variable or rule serve refuses (bad_limits, bad_env,
    bad_egress at a session's opening, bad_language)."""
