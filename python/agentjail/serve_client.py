"""ServeClient: runs on an `agentjail serve` over HTTP (docs/serve.md), with
the standard library alone (_http.py: http.client, kept-alive connections).

    client = ServeClient("http://127.0.0.1:8080", key)
    ex = client.run("print(1)", on_stdout=print)      # output as it happens
    for ev in client.stream(code): ...                 # events, then the Execution
    h = client.submit(code)                            # a background run
    h = RemoteRunHandle(client, h.id)                  # later, in any process
    h.wait(), h.events(from_id), h.cancel(), h.state()

Streamed answers are Server-Sent Events, each with an id; a connection that
drops mid-run is reopened at GET /v1/runs/ID/events with Last-Event-ID, so
the events a caller sees have no gap and no duplicate. A POST is never
sent twice (agent code is not idempotent)."""
import base64
import codecs
import http.client
import json
import time
import urllib.parse

from ._closing import Closing
from ._http import Transport
from ._listen import ImageEvent, OutputEvent
from ._secrets import Secrets
from .errors import RunLost, SandboxError, ServeError
from .result import Status, execution_from_json

_SSE = "text/event-stream"


class ServeClient:
    """A client of one serve. url: its base ("http://host:port"); key: the
    bearer key (`agentjail keys add` made it). timeout: seconds a read may
    wait (serve sends a keep-alive every 10 s while a run is quiet).
    retries: reconnections in a row an event stream may take before
    ServeError, and tries after a 503 that ran nothing. ca: a PEM file of
    CAs for an https:// serve (None: the system's). Connections are kept
    alive between calls (close() ends them)."""

    def __init__(self, url, key=None, timeout=60, retries=5, ca=None):
        self._t = Transport(url, key, timeout, retries, ca)
        self.url = self._t.url
        self.key = key
        self.timeout = timeout
        self.retries = retries

    # ---- HTTP ---------------------------------------------------------

    def _open(self, method, path, body=None, headers=None, what=None):
        """An open streamed answer (closed by the caller)."""
        hdrs = self._t.headers(headers, "application/json" if body is not None else None)
        data = None if body is None else json.dumps(body).encode()
        return self._t.stream(method, path, data, hdrs, what)

    def _json(self, method, path, body=None, what=None):
        return self._t.json(method, path, body, what)

    def close(self):
        """Closes the kept-alive connections (a later call opens new ones)."""
        self._t.close()

    @staticmethod
    def _body(code, limits, env=None, **more):
        if isinstance(code, bytes):
            code = code.decode("utf-8")
        if not isinstance(code, str):
            raise TypeError(f"code must be str or bytes, not {type(code).__name__}")
        body = {"code": code}
        if limits:
            body["limits"] = dict(limits)
        if env:
            # Names and values as strings: serve says which names it refuses.
            body["env"] = {str(k): str(v) for k, v in dict(env).items()}
        secrets = more.pop("secrets", None)
        if secrets is not None:
            # Checked for shape as locally; write-only (docs/secrets.md).
            body["secrets"] = (secrets if isinstance(secrets, Secrets)
                               else Secrets(secrets)).items()
        body.update({k: v for k, v in more.items() if v is not None})
        return body

    # ---- runs ---------------------------------------------------------

    def run(self, code, on_stdout=None, on_stderr=None, on_image=None, limits=None, env=None,
            secrets=None):
        """Runs code and returns its Execution. env: variables beside the
        deployer's ({"NAME": "VALUE"}; a name serve refuses is ServeError
        bad_env naming it). With a callback, the run is
        streamed and on_stdout(text) / on_stderr(text) / on_image(name,
        mime, data) are called as its events arrive, on this thread; one
        that raises cancels the run and its exception comes out of run() at
        once. Without a callback, it is serve's plain POST, answered at the
        end. secrets: the run's (docs/secrets.md, a list of dicts)."""
        if on_stdout is None and on_stderr is None and on_image is None:
            status, body = self._json("POST", "/v1/runs",
                                      self._body(code, limits, env, secrets=secrets))
            return _execution(body)
        fns = {"stdout": on_stdout, "stderr": on_stderr}
        with self.stream(code, limits, env, secrets) as events:
            for ev in events:
                if isinstance(ev, OutputEvent):
                    if fns[ev.stream] is not None:
                        fns[ev.stream](ev.text)
                elif isinstance(ev, ImageEvent):
                    if on_image is not None:
                        on_image(ev.name, ev.mime, ev.data)
                else:
                    return ev
        raise ServeError(0, "no_result", "the event stream ended without a result")

    def stream(self, code, limits=None, env=None, secrets=None):
        """The run's events as they happen (OutputEvent, ImageEvent), then
        its Execution. The run is recorded on the server: `run_id` on the
        iterator, once the answer has begun. close() (or leaving a `with`
        block) before the end cancels the run, as a local stream's does;
        RemoteRunHandle.events() only reads."""
        return _RunEvents(self, post=self._body(code, limits, env, secrets=secrets))

    def submit(self, code, webhook=None, limits=None, env=None, secrets=None):
        """Starts a background run; its RemoteRunHandle. webhook: a URL the
        server POSTs the finished run to (it must be on its allow-list)."""
        status, body = self._json("POST", "/v1/runs",
                                  self._body(code, limits, env, background=True,
                                             webhook=webhook, secrets=secrets))
        return RemoteRunHandle(self, body["id"])

    def handle(self, run_id):
        """The handle of a run this key started, from its id."""
        return RemoteRunHandle.open(self, run_id)

    def runs(self, limit=20, before=None):
        """This key's runs, newest first: ([run info], next id or None)."""
        q = {"limit": str(limit)}
        if before:
            q["before"] = before
        status, body = self._json("GET", "/v1/runs?" + urllib.parse.urlencode(q))
        return body["runs"], body.get("next")


class RemoteRunHandle:
    """A run recorded on a serve, by id: made by ServeClient.submit, or
    RemoteRunHandle(client, id) / RemoteRunHandle.open(client, id) in any
    process that holds the same key (another key's id is "no such run")."""

    def __init__(self, client, run_id):
        self.client = client
        self.id = run_id

    @classmethod
    def open(cls, client, run_id):
        """The handle, after checking that the server knows the run
        (ServeError no_such_run if not)."""
        h = cls(client, run_id)
        h.state()
        return h

    def info(self):
        """GET /v1/runs/ID: {"id", "state", "created", "ended", "background",
        "result"}."""
        return self.client._json("GET", f"/v1/runs/{self.id}")[1]

    def state(self):
        """"queued", "running" or "done"."""
        return self.info()["state"]

    def done(self):
        return self.state() == "done"

    def events(self, from_id=0):
        """The run's events after from_id (0: all), waiting for new ones,
        then its Execution."""
        if isinstance(from_id, bool) or not isinstance(from_id, int) or from_id < 0:
            raise ValueError(f"from_id: {from_id!r} is not an event id (0 or more)")
        return _RunEvents(self.client, run_id=self.id, after=from_id)

    def wait(self, timeout=None):
        """The Execution once the run has ended; TimeoutError when timeout
        seconds pass first. Polls the run's state (a dropped connection
        costs nothing)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.02
        while True:
            info = self.info()
            if info["state"] == "done":
                return _execution(info.get("result") or {})
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"agentjail: run {self.id} is {info['state']} after "
                                   f"{timeout} s")
            wait = pause if deadline is None else min(pause, max(deadline - time.monotonic(), 0))
            time.sleep(wait)
            pause = min(pause * 2, 1.0)

    def cancel(self):
        """Asks the server to stop the run; its state then ("done" when it
        had already ended)."""
        return self.client._json("DELETE", f"/v1/runs/{self.id}")[1]["state"]

    def __repr__(self):
        return f"<RemoteRunHandle {self.id} at {self.client.url}>"


class _RunEvents(Closing):
    """Iterator over a run's SSE events: the POST's own answer, or GET
    /v1/runs/ID/events; reopened after the last id seen when the
    connection drops, up to client.retries times in a row."""

    def __init__(self, client, post=None, run_id=None, after=0, post_path="/v1/runs",
                 on_id=None, what=None, events_path=None):
        self._client = client
        self._events_path = events_path
        self._post = post
        self._post_path = post_path
        self._on_id = on_id
        self._what = what
        self._owns = post is not None  # its close() cancels the run
        self._finished = False
        self.run_id = run_id
        self._after = after
        self._decoders = {s: codecs.getincrementaldecoder("utf-8")("replace")
                          for s in ("stdout", "stderr")}
        self._gen = self._follow()

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._gen)

    def close(self):
        self._gen.close()
        if self._owns and not self._finished and self.run_id:
            self._finished = True
            try:
                RemoteRunHandle(self._client, self.run_id).cancel()
            except ServeError:
                pass  # gone already: nothing left to stop

    def __del__(self):
        if getattr(self, "_owns", False) and not self._finished:
            self.close()

    def _connect(self):
        headers = {"Accept": _SSE}
        if self._post is not None:
            body, self._post = self._post, None  # never sent twice
            r = self._client._open("POST", self._post_path, body, headers, self._what)
            self.run_id = r.headers.get("X-Run-Id")
            if r.status != 200 or not self.run_id:
                r.close()
                raise ServeError(r.status, "not_a_stream",
                                 f"POST {self._post_path} did not answer an event stream "
                                 f"with its id")
            if self._on_id is not None:
                self._on_id(self.run_id)
            return r
        headers["Last-Event-ID"] = str(self._after)
        return self._client._open("GET", self._events_path or f"/v1/runs/{self.run_id}/events",
                                  None, headers, self._what)

    def _follow(self):
        failures = 0
        while True:
            try:
                with self._connect() as r:
                    for ev_id, kind, data in _sse_events(r):
                        failures = 0
                        if ev_id is not None:
                            self._after = ev_id
                        item = self._event(ev_id, kind, data)
                        if item is not None:
                            yield item
                        if kind == "result":
                            self._finished = True
                            return
            except ServeError:
                raise
            except (OSError, http.client.HTTPException, ValueError) as e:
                if self.run_id is None:
                    raise ServeError(0, "connection", f"POST {self._post_path}: {e}") from None
                error = e
            else:
                error = "the stream ended before the run's result"
            failures += 1
            if failures > self._client.retries:
                raise ServeError(0, "connection",
                                 f"the events of run {self.run_id} broke off {failures} times "
                                 f"in a row (last: {error})")
            time.sleep(min(0.05 * 2 ** failures, 2.0))

    def _event(self, ev_id, kind, data):
        if kind in ("stdout", "stderr"):
            raw = (data["text"].encode("utf-8") if "text" in data
                   else base64.b64decode(data.get("base64") or ""))
            text = self._decoders[kind].decode(raw)
            return OutputEvent(kind, text, ev_id or 0) if text else None
        if kind == "image":
            # "data", as in a result's images (a serve before 2026-12-04 said
            # "base64").
            return ImageEvent(data.get("name") or "", data.get("mime") or "",
                              base64.b64decode(data.get("data", data.get("base64")) or ""),
                              ev_id or 0)
        if kind == "result":
            return _execution(data)
        return None  # an event of a later serve


def _sse_events(r):
    """(id, event, data as JSON) of each event of an SSE body."""
    ev_id, kind, data = None, "message", []
    while True:
        line = r.readline()
        if not line:
            return
        line = line.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield ev_id, kind, json.loads("\n".join(data))
            ev_id, kind, data = None, "message", []
            continue
        if line.startswith(":"):
            continue  # a keep-alive
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            # A run's events count from 1; a background command's are
            # "OUT-ERR", its place in each stream.
            ev_id = int(value) if value.isdigit() else value
        elif field == "event":
            kind = value
        elif field == "data":
            data.append(value)


def _execution(body):
    """The contract object as an Execution; a run serve could not finish
    ({"error": ...}, a lost worker's answer) as ServeError, and a sandbox
    failure as SandboxError, as a local run raises them."""
    if "error" in body or "status" not in body:
        err = body.get("error") or {}
        cls = RunLost if body.get("lost") else ServeError
        raise cls(200, err.get("code", "no_result"),
                  err.get("message", "the run has no result"), body)
    ex = execution_from_json(body, keep_source=True)
    if ex.status is Status.SANDBOX_ERROR:
        raise SandboxError(ex)
    return ex
