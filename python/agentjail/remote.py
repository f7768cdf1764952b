"""agentjail.connect(): the local API over an `agentjail serve`, in pure
Python (no C library, no root), for an agent that runs on another machine
than its sandboxes.

    sb = agentjail.connect("https://sandbox.example:8910", key)   # or $AGENTJAIL_URL/_KEY
    ex = sb.run("print(6 * 7)")                 # an Execution, as locally
    with sb.session() as s:                     # state, files, commands
        s.put_file("data.csv", b"a,b\\n1,2\\n")
        s.run("import pandas as pd; df = pd.read_csv('data.csv')")
        p = s.spawn("python3 -m http.server 8000")
        s.exec("ls").stdout

run, stream, submit, arun and astream are the local RunMethods over serve's
event streams; sessions, files, commands, background commands and terminals
are serve's /v1/sessions routes. serve's refusals raise the local types
(SessionClosed, FileTransferError, ProcessError, InvalidCommand, ...) as
classes that are also ServeError, with the HTTP status and code.
Differences from the local API are in docs/python.md#remote."""
import base64
import errno as _errno
import os
import threading
import urllib.parse

from ._closing import Closing
from ._listen import EventSink, listener_for
from ._streams import RunMethods
from .errors import (ConfigError, RemoteCheckpointError, RemoteCheckpointRefused,
                     RemoteConfigError, RemoteEgressError,
                     RemoteFileTransferError, RemoteInvalidCode, RemoteInvalidCommand,
                     RemoteProcessError, RemoteSessionClosed, RemoteSessionLimit,
                     SandboxClosed, ServeError)
from ._secrets import Secrets
from .result import FileInfo
from .serve_client import RemoteRunHandle, ServeClient, _execution, _RunEvents


def connect(url=None, key=None, *, timeout=60, retries=5, ca=None, secrets=None):
    """A RemoteSandbox on the serve at url (default $AGENTJAIL_URL) with key
    (default $AGENTJAIL_KEY). ca: a PEM file of the CAs that sign an
    https:// serve's certificate (default $AGENTJAIL_CA, else the system's);
    an untrusted certificate is refused. timeout: seconds a read may wait;
    retries: tries after a 503 that ran nothing, and reconnections of a
    broken event stream. secrets: credentials the code can use but never
    see (docs/secrets.md, the local Sandbox's shape: a list of dicts), sent
    as "secrets" with every run and every session that gives none of its
    own; write-only, as locally. Nothing is sent until the first call."""
    url = url or os.environ.get("AGENTJAIL_URL")
    if not url:
        raise ConfigError("connect: no url given and AGENTJAIL_URL is not set")
    key = key if key is not None else os.environ.get("AGENTJAIL_KEY")
    ca = ca if ca is not None else os.environ.get("AGENTJAIL_CA") or None
    try:
        client = ServeClient(url, key, timeout=timeout, retries=retries, ca=ca)
    except ValueError as e:
        raise ConfigError(f"connect: {e}") from None
    return RemoteSandbox(client, secrets=secrets)


class _Calls:
    """The remote runs in progress of one sandbox or session, by run id, so
    that cancel() and close() reach them (DELETE /v1/runs/ID): the shape of
    the local _calls that RunMethods' streams use."""

    def __init__(self, client):
        self._client = client
        self._lock = threading.Lock()
        self._ids = set()
        self.closed = False

    def begin(self, run_id):
        with self._lock:
            self._ids.add(run_id)
            return not self.closed

    def end(self, run_id):
        with self._lock:
            self._ids.discard(run_id)

    def fire(self, run_id):
        try:
            RemoteRunHandle(self._client, run_id).cancel()
        except ServeError:
            pass  # ended or gone: nothing left to stop

    def cancel(self):
        with self._lock:
            ids = list(self._ids)
        for i in ids:
            self.fire(i)
        return len(ids)

    def close(self):
        with self._lock:
            self.closed = True
        self.cancel()


def _code_error(status, code, message, body, after):
    if status == 400 and code in ("bad_limits", "bad_env", "bad_egress", "bad_language",
                                  "bad_secrets"):
        return RemoteConfigError(status, code, message, body, after)
    if status == 400 and (message.startswith("code:") or code == "bad_request"):
        return RemoteInvalidCode(status, code, message, body, after)
    if status == 413 and message.startswith("code"):
        return RemoteInvalidCode(status, code, message, body, after)
    return None


class _Runner(RunMethods):
    """What RemoteSandbox and RemoteSession share: RunMethods over serve.
    Subclasses give _run_path, _body_extra and _what."""

    _listener = EventSink

    def _execute(self, code, timeout, listener=None, started=None, language="python"):
        if self._calls.closed:
            raise self._closed_error()
        body = self._run_body(code, timeout, language)
        if listener is None and started is None:
            status, answer = self._client._json("POST", self._run_path, body, self._what)
            return _execution(answer)
        ids = []

        def on_id(run_id):
            ids.append(run_id)
            if not self._calls.begin(run_id):
                self._calls.fire(run_id)  # closed meanwhile
            if started is not None:
                started(run_id)
        events = _RunEvents(self._client, post=body, post_path=self._run_path, on_id=on_id,
                            what=self._what)
        try:
            for ev in events:
                if hasattr(ev, "status"):
                    ex = ev
                    break
                if listener is not None:
                    listener.emit(ev)
            else:
                raise ServeError(0, "no_result", "the event stream ended without a result")
        finally:
            events.close()
            for i in ids:
                self._calls.end(i)
        if listener is not None and listener.error is not None:
            raise listener.error
        return ex

    def _run_body(self, code, timeout, language):
        if isinstance(code, bytes):
            code = code.decode("utf-8")
        if not isinstance(code, str):
            raise TypeError(f"code must be str or bytes, not {type(code).__name__}")
        body = {"code": code}
        if language != "python":
            body["language"] = language
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                    or not timeout > 0:
                raise ValueError(f"timeout: {timeout!r} is not a positive number of seconds")
            body["limits"] = {"timeout_sec": float(timeout)}
        return body

    def cancel(self):
        """Stops this object's runs in progress that serve records (a
        streamed run, one with callbacks, submit(), arun, astream); a plain
        run() is one request serve answers at its end, and is not reached.
        Returns how many were asked to stop."""
        return self._calls.cancel()


class RemoteSandbox(_Runner, Closing):
    """The local Sandbox's API over serve: each run a fresh sandbox of the
    tier and limits the deployer gave serve. The tier is serve's (.tier
    asks /v1/health once)."""

    _run_path = "/v1/runs"
    _tool_target = "sandbox"

    def __init__(self, client, secrets=None):
        self._client = client
        self._calls = _Calls(client)
        self._tier = None
        # Write-only: sent in bodies, never shown (Secrets' repr is names).
        self._secrets = _secrets(secrets)

    @property
    def url(self):
        return self._client.url

    @property
    def tier(self):
        if self._tier is None:
            self._tier = self._client._json("GET", "/v1/health")[1].get("tier")
        return self._tier

    @staticmethod
    def _what(status, code, message, body, after):
        return _code_error(status, code, message, body, after)

    def _closed_error(self):
        return SandboxClosed("agentjail: the sandbox is closed")

    def _run_body(self, code, timeout, language):
        body = super()._run_body(code, timeout, language)
        if self._secrets is not None:
            body["secrets"] = self._secrets.items()
        return body

    def session(self, env=None, limits=None, allow_hosts=None, allow_cidrs=None,
                secrets=None):
        """A RemoteSession (POST /v1/sessions): an interpreter that keeps its
        state, files and imports across calls, in the tier serve runs. env:
        variables for its code; limits: narrower than serve's
        ({"memory_mb": 128}); allow_hosts / allow_cidrs: egress rules, a
        subset of serve's; secrets: the session's own (docs/secrets.md),
        else connect()'s."""
        body = self._session_body(env, limits, allow_hosts, allow_cidrs, secrets)
        status, answer = self._client._json("POST", "/v1/sessions", body, _session_open_error)
        return RemoteSession(self._client, answer["id"], answer)

    def _session_body(self, env, limits, allow_hosts, allow_cidrs, secrets=None):
        if self._calls.closed:
            raise self._closed_error()
        body = {}
        for name, v in (("env", env), ("limits", limits)):
            if v is not None:
                if not isinstance(v, dict):
                    raise ConfigError(f"{name}: must be a dict, not {type(v).__name__}")
                body[name] = {str(k): (str(x) if name == "env" else x) for k, x in v.items()}
        for name, v in (("allow_hosts", allow_hosts), ("allow_cidrs", allow_cidrs)):
            if v is not None:
                body[name] = [v] if isinstance(v, str) else list(v)
        held = _secrets(secrets) if secrets is not None else self._secrets
        if held is not None:
            body["secrets"] = held.items()
        return body

    def restore(self, checkpoint_id, env=None, limits=None, allow_hosts=None,
                allow_cidrs=None, secrets=None):
        """A RemoteSession with the state of the key's checkpoint
        checkpoint_id (POST /v1/sessions with "from_checkpoint"), under
        these terms (as session()) and serve's limits today. A checkpoint
        the key does not hold raises RemoteCheckpointError (ENOENT); one
        whose file fails its tag, RemoteCheckpointRefused."""
        body = self._session_body(env, limits, allow_hosts, allow_cidrs, secrets)
        body["from_checkpoint"] = str(checkpoint_id)
        status, answer = self._client._json("POST", "/v1/sessions", body, _checkpoint_error)
        return RemoteSession(self._client, answer["id"], answer)

    def checkpoints(self):
        """The key's checkpoints on serve, newest first: [StoredCheckpoint]."""
        from .checkpoint import StoredCheckpoint
        status, answer = self._client._json("GET", "/v1/checkpoints", None, _checkpoint_error)
        return [StoredCheckpoint._of(c) for c in answer.get("checkpoints") or []]

    def delete_checkpoint(self, checkpoint_id):
        """Deletes one of the key's checkpoints: True, or False when it
        holds none of that id."""
        def what(status, code, message, body, after):
            return None if status == 404 else _checkpoint_error(status, code, message, body,
                                                                 after)
        try:
            self._client._json("DELETE", "/v1/checkpoints/" +
                               urllib.parse.quote(str(checkpoint_id), safe=""), None, what)
        except ServeError as e:
            if e.status == 404:
                return False
            raise
        return True

    def submit(self, code, timeout=None, webhook=None):
        """A background run recorded on serve: its RemoteRunHandle (wait,
        events, cancel, state; reachable by id from any process with the
        key). webhook: a URL serve POSTs the finished run to."""
        body = self._run_body(code, timeout, "python")
        body["background"] = True
        if webhook is not None:
            body["webhook"] = webhook
        status, answer = self._client._json("POST", "/v1/runs", body, self._what)
        return RemoteRunHandle(self._client, answer["id"])

    def handle(self, run_id):
        """The RemoteRunHandle of a run this key started."""
        return self._client.handle(run_id)

    def runs(self, limit=20, before=None):
        """This key's recorded runs, newest first: ([info], next or None)."""
        return self._client.runs(limit, before)

    def tool(self, session=False):
        """The run_python tool for a model, over this sandbox (a fresh
        sandbox per call) or, session=True, a session opened at the first
        call (see agentjail.remote_tools)."""
        from .remote_tools import RemoteRunPythonTool
        return RemoteRunPythonTool(self, session=session)

    def close(self):
        """Stops the recorded runs in progress and closes the connections.
        Sessions opened from it are not closed (each is its own)."""
        self._calls.close()
        self._client.close()

    @property
    def closed(self):
        return self._calls.closed

    def __repr__(self):
        return f"<RemoteSandbox {self._client.url}{' closed' if self.closed else ''}>"


def _secrets(value):
    """A Secrets of a list of dicts (checked for shape here; serve judges
    the fields), or None."""
    return value if value is None or isinstance(value, Secrets) else Secrets(value)


def _session_open_error(status, code, message, body, after):
    if status in (429, 503) and code == "session_limit":
        return RemoteSessionLimit(status, code, message, body, after)
    return _code_error(status, code, message, body, after)


def _checkpoint_error(status, code, message, body, after):
    """serve's refusals of its checkpoints, as the local library's errnos."""
    if status == 422:
        return RemoteCheckpointRefused(status, code, message, body, after,
                                       errno=_errno.EBADMSG)
    numbers = {404: _errno.ENOENT, 507: _errno.EDQUOT, 501: _errno.ENOTSUP,
               503: _errno.EAGAIN if code == "checkpoints_unavailable" else None}
    if numbers.get(status):
        return RemoteCheckpointError(status, code, message, body, after, errno=numbers[status])
    return _session_open_error(status, code, message, body, after)


class RemoteSession(_Runner, Closing):
    """The local Session's API over serve's /v1/sessions/ID routes."""

    _tool_target = "session"

    def __init__(self, client, session_id, info=None):
        self._client = client
        self._calls = _Calls(client)
        self.id = session_id
        self.info = info or {}
        self._base = "/v1/sessions/" + urllib.parse.quote(session_id, safe="")
        self._run_path = self._base + "/runs"
        self._closed_reason = None

    @property
    def url(self):
        return self._client.url

    # ---- errors ----

    def _gone(self, status, code, message, body, after):
        # serve's words for a session it does not have (deleted, or
        # another key's): "no such session" (a worker's adds its name).
        if status == 410 or (status == 404 and message.startswith("no such session")):
            self._closed_reason = message
            return RemoteSessionClosed(status, code, message, body, after)
        return None

    def _what(self, status, code, message, body, after):
        return self._gone(status, code, message, body, after) or \
            _code_error(status, code, message, body, after)

    def _closed_error(self):
        return RemoteSessionClosed(0, "closed", self._closed_reason or "closed by the caller")

    @property
    def closed_reason(self):
        """None while the session is open, as far as this client knows;
        else why it closed."""
        return self._closed_reason

    @property
    def closed(self):
        return self._calls.closed or self._closed_reason is not None

    def _json(self, method, sub, body=None, what=None):
        if self._calls.closed:
            raise self._closed_error()
        return self._client._json(method, self._base + sub, body, what or self._what)[1]

    def cell(self, code, *, value=True, context=None, fresh=False, timeout=None,
             on_stdout=None, on_stderr=None, language="python"):
        """Session.cell over serve (the run body's "value", "context",
        "fresh"): a notebook cell; its Execution, with .value."""
        body = self._run_body(code, timeout, language)
        body.update({k: v for k, v in (("value", bool(value) or None),
                                       ("context", context),
                                       ("fresh", bool(fresh) or None)) if v is not None})

        def what(status, code_, message, body_, after):
            gone = self._gone(status, code_, message, body_, after)
            if gone is None and status == 400:
                return RemoteConfigError(status, code_, message, body_, after)
            return gone
        listener = listener_for(on_stdout, on_stderr, None, EventSink)
        if listener is None:
            return _execution(self._json("POST", "/runs", body, what))
        return _drain(_RunEvents(self._client, post=body, post_path=self._run_path, what=what),
                      listener)

    # ---- commands ----

    @staticmethod
    def _command_body(command, cwd, env, stdin, timeout):
        body = {}
        if isinstance(command, str):
            body["command"] = command
        elif isinstance(command, (list, tuple)) and command:
            if not all(isinstance(a, str) for a in command):
                raise TypeError("command: an argv list holds only str")
            body["argv"] = list(command)
        else:
            raise TypeError(f"command must be a str (for /bin/sh -c) or a non-empty list "
                            f"(argv), not {command!r}")
        if cwd is not None:
            body["cwd"] = str(cwd)
        if env:
            if not isinstance(env, dict):
                raise TypeError(f"env must be a dict of names to values, "
                                f"not {type(env).__name__}")
            body["env"] = {str(k): str(v) for k, v in env.items()}
        if stdin is not None:
            data = stdin.encode("utf-8") if isinstance(stdin, str) else bytes(stdin)
            body["stdin"] = base64.b64encode(data).decode()
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                    or not timeout > 0:
                raise ValueError(f"timeout: {timeout!r} is not a positive number of seconds")
            body["timeout"] = float(timeout)
        return body

    def _command_error(self, status, code, message, body, after):
        gone = self._gone(status, code, message, body, after)
        if gone is not None:
            return gone
        if status == 400:
            return RemoteInvalidCommand(status, code, message, body, after)
        return None

    def exec(self, command, *, cwd=None, env=None, stdin=None, timeout=None,
             on_stdout=None, on_stderr=None):
        """Session.exec over POST .../exec: a command in the session's
        sandbox; its Execution. Callbacks stream its output."""
        body = self._command_body(command, cwd, env, stdin, timeout)
        listener = listener_for(on_stdout, on_stderr, None, EventSink)
        if listener is None:
            return _execution(self._json("POST", "/exec", body, self._command_error))
        return _drain(_RunEvents(self._client, post=body, post_path=self._base + "/exec",
                                 what=self._command_error), listener)

    def _proc_error(self, status, code, message, body, after):
        gone = self._gone(status, code, message, body, after)
        if gone is not None:
            return gone
        n = {404: _errno.ESRCH, 501: _errno.EOPNOTSUPP}.get(status)
        if status == 409:
            n = {"stdin_closed": _errno.EPIPE, "no_stdin": _errno.EBADF,
                 "not_a_terminal": _errno.ENOTTY}.get(code, _errno.EINVAL)
        if status in (400, 413):
            n = _errno.EINVAL if status == 400 else _errno.EFBIG
        if n is not None:
            return RemoteProcessError(status, code, message, body, after, errno=n)
        return None

    def _start_error(self, status, code, message, body, after):
        if status == 400:
            return self._command_error(status, code, message, body, after)
        return self._proc_error(status, code, message, body, after)

    def spawn(self, command, *, cwd=None, env=None, stdin=None, timeout=None,
              keep_stdin=False):
        """A background command (POST .../processes): its RemoteProcess."""
        body = self._command_body(command, cwd, env, None, timeout)
        if keep_stdin:
            if stdin is not None:
                raise ValueError("stdin with keep_stdin: send it with send_stdin()")
            body["stdin"] = True
        elif stdin is not None:
            data = stdin.encode("utf-8") if isinstance(stdin, str) else bytes(stdin)
            body["stdin"] = base64.b64encode(data).decode()
        answer = self._json("POST", "/processes", body, self._start_error)
        return RemoteProcess(self, int(answer["pid"]), _command_text(command))

    def pty(self, cols=80, rows=24, command=None, *, cwd=None, env=None, timeout=None):
        """A command (None: /bin/bash) on a terminal of the session's own:
        its RemoteTerminal."""
        command = ["/bin/bash"] if command is None else command
        body = self._command_body(command, cwd, env, None, timeout)
        body["pty"] = {"cols": _side(cols, "cols"), "rows": _side(rows, "rows")}
        answer = self._json("POST", "/processes", body, self._start_error)
        return RemoteTerminal(self, int(answer["pid"]), _command_text(command))

    def processes(self):
        """[(pid, command, running)]."""
        answer = self._json("GET", "/processes", None, self._proc_error)
        return [(int(p["pid"]), p.get("command") or "", bool(p.get("running")))
                for p in answer.get("processes") or []]

    def process(self, pid):
        return RemoteProcess(self, int(pid))

    # ---- files ----

    def _file_error(self, status, code, message, body, after):
        gone = self._gone(status, code, message, body, after)
        if gone is not None:
            return gone
        # The library's errno, by the name serve sends (older serves: by
        # the status).
        name = (body.get("error") or {}).get("errno") if isinstance(body, dict) else None
        n = getattr(_errno, name, None) if isinstance(name, str) and name.isupper() else None
        n = n or {404: _errno.ENOENT, 413: _errno.EFBIG, 400: _errno.EINVAL,
                  507: _errno.ENOSPC}.get(status)
        if n is not None:
            return RemoteFileTransferError(status, code, message, body, after, errno=n)
        return None

    def _file_path(self, path):
        path = os.fsdecode(path)
        if "\0" in path:
            raise RemoteFileTransferError(0, "bad_path", f"{path!r}: holds a NUL byte",
                                          errno=_errno.EINVAL)
        return self._base + "/files/" + urllib.parse.quote(path, safe="/")

    def put_file(self, path, data):
        """Writes a workspace file (PUT .../files/PATH)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if self._calls.closed:
            raise self._closed_error()
        t = self._client._t
        t.exchange("PUT", self._file_path(path), bytes(data),
                   t.headers(content_type="application/octet-stream"), self._file_error)

    def get_file(self, path):
        """The bytes of a workspace file (GET .../files/PATH, streamed)."""
        if self._calls.closed:
            raise self._closed_error()
        t = self._client._t
        with t.stream("GET", self._file_path(path), None,
                      t.headers({"Accept": "application/octet-stream"}),
                      self._file_error) as r:
            return r.read()

    def list_files(self, directory=""):
        """The entries of a workspace directory."""
        q = "?" + urllib.parse.urlencode({"dir": directory}) if directory else ""
        answer = self._json("GET", "/files" + q, None, self._file_error)
        return [FileInfo(e["name"], e.get("type") or "other", int(e.get("size") or 0))
                for e in answer.get("entries") or []]

    def egress_keep(self, hosts=(), cidrs=()):
        """Narrows the session's egress rules to these (POST .../egress)."""
        hosts = [hosts] if isinstance(hosts, str) else list(hosts)
        cidrs = [cidrs] if isinstance(cidrs, str) else list(cidrs)
        self._json("POST", "/egress", {"allow_hosts": hosts, "allow_cidrs": cidrs},
                   self._narrow_error)

    def _narrow_error(self, status, code, message, body, after):
        """A narrowing's refusal (400: not the session's) is EPERM."""
        gone = self._gone(status, code, message, body, after)
        if gone is None and status == 400:
            return RemoteEgressError(status, code, message, body, after, errno=_errno.EPERM)
        return gone

    def secrets_keep(self, names=()):
        """Narrows the session's secrets to these names (POST .../egress
        with {"secrets": [names]}); a name the session does not have is
        RemoteEgressError (errno EPERM), and nothing changes."""
        names = [names] if isinstance(names, str) else list(names)
        if not all(isinstance(n, str) for n in names):
            raise ConfigError("names: every secret's name must be a string")
        self._json("POST", "/egress", {"secrets": names}, self._narrow_error)

    def pause(self):
        """Session.pause over serve (POST .../pause): its sandbox freed,
        its state kept until the next call or resume(). A CheckpointInfo."""
        from .checkpoint import CheckpointInfo
        a = self._json("POST", "/pause", None, self._state_error)
        return CheckpointInfo(int(a.get("bytes") or 0), int(a.get("files") or 0),
                              int(a.get("left_out") or 0), a.get("note") or "")

    def checkpoint(self, name=None):
        """The session's state kept on serve under an id of the key's (POST
        .../checkpoint; a paused session stays paused): a StoredCheckpoint,
        whose id RemoteSandbox.restore opens. name: a label to list it by.
        Past the key's quota: RemoteCheckpointError (EDQUOT)."""
        from .checkpoint import StoredCheckpoint

        def what(status, code, message, body, after):
            return self._gone(status, code, message, body, after) or \
                (_checkpoint_error(status, code, message, body, after)
                 if status in (507, 501, 503) else
                 self._state_error(status, code, message, body, after))
        body = {} if name is None else {"name": name}
        return StoredCheckpoint._of(self._json("POST", "/checkpoint", body, what))

    def resume(self):
        """Brings a paused session back now (POST .../resume)."""
        self._json("POST", "/resume", None, self._state_error)

    def fork(self, n=1):
        """n RemoteSessions (POST .../fork), each with this one's state,
        independent; all or none (RemoteSessionLimit past the key's)."""
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 100:
            raise RemoteConfigError(0, "bad_request", f"fork: n must be an int within 1 to "
                                    f"100, not {n!r}")
        a = self._json("POST", "/fork", {"count": n}, self._state_error)
        return [RemoteSession(self._client, sid) for sid in a.get("sessions") or []]

    def _state_error(self, status, code, message, body, after):
        gone = self._gone(status, code, message, body, after)
        if gone is not None:
            return gone
        if status == 409:
            return RemoteCheckpointError(status, code, message, body, after,
                                         errno=_errno.EALREADY)
        if status in (500, 501, 413):
            return RemoteCheckpointError(status, code, message, body, after,
                                         errno=_errno.EFBIG if status == 413 else
                                         _errno.ENOTSUP if status == 501 else _errno.EIO)
        return _code_error(status, code, message, body, after)

    def tool(self):
        """The run_python tool bound to this session."""
        from .remote_tools import RemoteRunPythonTool
        return RemoteRunPythonTool(self, session=True)

    def close(self):
        """Deletes the session (DELETE /v1/sessions/ID): its sandbox is
        destroyed. Idempotent."""
        if self._calls.closed:
            return
        self._calls.close()
        try:
            self._client._json("DELETE", self._base)
        except ServeError as e:
            if e.status not in (404, 410):
                raise
        if self._closed_reason is None:
            self._closed_reason = "closed by the caller"

    def __repr__(self):
        return f"<RemoteSession {self.id}{' closed' if self.closed else ''}>"


def _drain(events, listener):
    """A stream's events to listener (None: none) until its Execution;
    what the listener's sink raised, raised at the end."""
    with events:
        for ev in events:
            if hasattr(ev, "status"):
                if listener is not None and listener.error is not None:
                    raise listener.error
                return ev
            if listener is not None:
                listener.emit(ev)
    raise ServeError(0, "no_result", "the event stream ended without a result")


def _command_text(command):
    return command if isinstance(command, str) else " ".join(command)


def _side(n, what):
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 4096:
        raise ValueError(f"{what}: {n!r} is not a terminal side (1 to 4096)")
    return n


class RemoteProcess:
    """A background command of a remote session, by pid: wait() streams its
    output from the start (GET .../events, resumed where it broke off),
    send_stdin, close_stdin, kill(signal)."""

    def __init__(self, session, pid, command=None):
        self.session, self.pid, self.command = session, pid, command
        self._path = f"/processes/{pid}"

    def wait(self, on_stdout=None, on_stderr=None):
        """Its end, as an Execution, with its output to the callbacks as it
        comes."""
        s = self.session
        return _drain(_RunEvents(s._client, run_id=str(self.pid), after="0-0",
                                 events_path=s._base + self._path + "/events",
                                 what=s._proc_error),
                      listener_for(on_stdout, on_stderr, None, EventSink))

    def poll(self):
        """None while it runs; its Execution once it has ended."""
        info = self.session._json("GET", self._path, None, self.session._proc_error)
        return None if info.get("running") else _execution(info)

    def send_stdin(self, data):
        data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        self.session._json("POST", self._path + "/stdin",
                           {"data": base64.b64encode(data).decode()},
                           self.session._proc_error)

    def close_stdin(self):
        self.session._json("POST", self._path + "/stdin", {"close": True},
                           self.session._proc_error)

    def kill(self, signal=9):
        """Sends signal (default SIGKILL) to its process group."""
        if isinstance(signal, bool) or not isinstance(signal, int):
            raise ValueError(f"signal: {signal!r} is not a signal number")
        self.session._json("POST", self._path + "/signal", {"signal": int(signal)},
                           self.session._proc_error)

    def __repr__(self):
        return f"<RemoteProcess {self.pid} {self.command!r}>"


class RemoteTerminal(RemoteProcess):
    """A command on a remote session's terminal: wait()'s on_stdout is its
    screen, send_stdin types, resize(cols, rows)."""

    def resize(self, cols, rows):
        self.session._json("POST", self._path + "/resize",
                           {"cols": _side(cols, "cols"), "rows": _side(rows, "rows")},
                           self.session._proc_error)

    def __repr__(self):
        return f"<RemoteTerminal {self.pid} {self.command!r}>"
