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
    is EPERM there. Nothing changed."""


class ServeError(AgentjailError):
    """agentjail serve answered with an error (ServeClient): `status` the
    HTTP status (0: the connection failed), `code` serve's error code
    ("no_such_run", "queue_full", ...), `body` the whole answer (a run lost
    with its worker: "lost", "may_have_started", "retry_safe")."""

    def __init__(self, status, code, message, body=None):
        self.status, self.code, self.body = status, code, body or {}
        super().__init__(f"serve: {status} {code}: {message}" if status else
                         f"serve: {message}")
