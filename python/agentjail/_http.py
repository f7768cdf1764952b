"""HTTP to an `agentjail serve`, with the standard library alone: kept-alive
connections (a pool, one request on a connection at a time), TLS verified
against the system's CAs or a CA file the caller names, the key as a bearer
token, serve's errors as typed exceptions, and a 503 (nothing ran: no run
slot, no worker, a sandbox that could not start) retried with backoff up to
a bound.

A request is sent again only when it cannot have been acted on: a 503, or
a kept-alive connection the server had closed before the request went out
(the server answers every request it reads). A dropped answer to a request
that was read is never retried: agent code is not idempotent."""
import http.client
import json
import ssl
import threading
import time
import urllib.parse

from .errors import RateLimited, RunLost, ServeError, Unauthorized, Unavailable

# The 503s that say nothing ran and a later try may be admitted.
_RETRY_503 = {"queue_timeout", "no_worker", "sandbox_unavailable", "session_unavailable",
              "session_limit", "body_budget", "runs_unavailable", "queue_unavailable"}
# What a stale kept-alive connection raises on its next use.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
          ConnectionAbortedError)


class Transport:
    """url: "http://host:port" or "https://..."; key: the bearer key;
    timeout: seconds a read may wait; retries: tries after a 503 (and
    reconnections of a broken event stream); ca: a PEM file of the CAs to
    trust for https (None: the system's); backoff_max: the longest wait
    between two tries, in seconds."""

    def __init__(self, url, key=None, timeout=60, retries=5, ca=None, backoff_max=2.0):
        parsed = urllib.parse.urlsplit(url or "")
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"url: {url!r} is not an http:// or https:// address")
        if parsed.path not in ("", "/") or parsed.query:
            raise ValueError(f"url: {url!r}: give the server's base, without a path")
        self.url = url.rstrip("/")
        self.key = key
        self.timeout = timeout
        self.retries = retries
        self.backoff_max = backoff_max
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port or (443 if self._https else 80)
        self._ssl = None
        if self._https:
            self._ssl = ssl.create_default_context(cafile=ca)
        elif ca is not None:
            raise ValueError(f"ca: given for {url!r}, which is not https")
        self._idle = []
        self._lock = threading.Lock()
        self._closed = False

    # ---- connections ----

    def _new(self):
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout,
                                               context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def _take(self):
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self._new(), False

    def _give(self, conn):
        with self._lock:
            if not self._closed and len(self._idle) < 8:
                self._idle.append(conn)
                return
        conn.close()

    def close(self):
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def headers(self, extra=None, content_type=None):
        h = {"Accept": "application/json"}
        if self.key:
            h["Authorization"] = f"Bearer {self.key}"
        if content_type:
            h["Content-Type"] = content_type
        h.update(extra or {})
        return h

    # ---- one exchange ----

    def _send(self, method, path, data, headers):
        """(status, headers, body bytes) of one exchange on a pooled
        connection; a stale one is replaced once, before any answer."""
        for attempt in (0, 1):
            conn, reused = self._take()
            try:
                conn.request(method, path, body=data, headers=headers)
                r = conn.getresponse()
                body = r.read()
            except _STALE:
                conn.close()
                if reused and attempt == 0:
                    continue  # closed while idle: the request never reached it
                raise
            except BaseException:
                conn.close()
                raise
            if r.will_close:
                conn.close()
            else:
                self._give(conn)
            return r.status, r.headers, body
        raise AssertionError("unreachable")

    def exchange(self, method, path, data=None, headers=None, what=None):
        """(status, headers, body) of a request, a 503 that ran nothing
        retried; an error status raised as error_for() makes it."""
        hdrs = headers if headers is not None else self.headers()
        tries = 0
        while True:
            try:
                status, rh, body = self._send(method, path, data, hdrs)
            except (OSError, http.client.HTTPException) as e:
                raise ServeError(0, "connection", f"{method} {path}: {_reason(e)}") from None
            if status == 503 and tries < self.retries and _code(body) in _RETRY_503:
                tries += 1
                time.sleep(self._pause(tries, rh))
                continue
            if status >= 400:
                raise error_for(status, body, rh, what)
            return status, rh, body

    def json(self, method, path, body=None, what=None):
        """(status, decoded JSON) of a JSON request."""
        data = None if body is None else json.dumps(body).encode()
        status, _, raw = self.exchange(method, path, data,
                                       self.headers(content_type="application/json"
                                                    if data is not None else None), what)
        try:
            return status, json.loads(raw or b"null")
        except ValueError:
            raise ServeError(status, "bad_answer",
                             f"{method} {path}: the answer is not JSON") from None

    def stream(self, method, path, data=None, headers=None, what=None):
        """An open response (an event stream, a download) on a connection of
        its own, closed with it; the caller reads and closes it."""
        hdrs = headers if headers is not None else self.headers()
        tries = 0
        while True:
            conn = self._new()
            try:
                conn.request(method, path, body=data, headers=hdrs)
                r = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise ServeError(0, "connection", f"{method} {path}: {_reason(e)}") from None
            if r.status < 400:
                return _Owned(r, conn)
            body = r.read()
            conn.close()
            if r.status == 503 and tries < self.retries and _code(body) in _RETRY_503:
                tries += 1
                time.sleep(self._pause(tries, r.headers))
                continue
            raise error_for(r.status, body, r.headers, what)

    def _pause(self, tries, headers):
        after = _retry_after(headers)
        if after is not None:
            return min(after, self.backoff_max)
        return min(0.05 * 2 ** tries, self.backoff_max)


class _Owned:
    """A response that closes its connection with it."""

    def __init__(self, r, conn):
        self._r, self._conn = r, conn
        self.status, self.headers = r.status, r.headers

    def read(self, n=-1):
        return self._r.read() if n is None or n < 0 else self._r.read(n)

    def readline(self):
        return self._r.readline()

    def close(self):
        self._r.close()
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _reason(e):
    if isinstance(e, ssl.SSLCertVerificationError):
        return (f"the server's certificate is not trusted ({e.verify_message}); give its CA "
                f"with ca=PATH (AGENTJAIL_CA)")
    return str(e) or type(e).__name__


def _code(raw):
    try:
        return (json.loads(raw).get("error") or {}).get("code")
    except (ValueError, AttributeError):
        return None


def _retry_after(headers):
    v = headers.get("Retry-After") if headers is not None else None
    try:
        return max(float(v), 0.0) if v is not None else None
    except ValueError:
        return None


def error_for(status, raw, headers=None, what=None):
    """serve's error answer as an exception: what(status, code, message,
    body, retry_after) when the caller maps it to a type of the local
    library's (and it returns one), else by status."""
    try:
        body = json.loads(raw)
        err = body.get("error") or {}
        code, message = err.get("code", "error"), err.get("message", "")
    except (ValueError, AttributeError):
        body, code = {}, "error"
        message = raw[:200].decode("utf-8", "replace")
    after = _retry_after(headers)
    if what is not None:
        e = what(status, code, message, body, after)
        if e is not None:
            return e
    if body.get("lost"):
        return RunLost(status, code, message, body, after)
    if status in (401, 403):
        return Unauthorized(status, code, message, body, after)
    if status == 429:
        return RateLimited(status, code, message, body, after)
    if status == 503:
        return Unavailable(status, code, message, body, after)
    return ServeError(status, code, message, body, after)
