"""The ways to watch a run as it goes, shared by Sandbox and Session
(RunMethods): stream() an iterator, submit() a handle, arun() and astream()
for asyncio. Each is one run on a thread of its own, through the owner's
_execute(code, timeout, listener, started)."""
import asyncio
import functools
import queue
import secrets
import threading

from ._closing import Closing
from ._listen import ImageEvent, Listener, OutputEvent, listener_for


class _Failure:
    """What the run raised, handed over in the event order."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


class _Run:
    """The Call of a run on another thread, once it exists, so that a
    consumer can cancel it (before it started: as soon as it does)."""

    def __init__(self, owner):
        self._owner = owner
        self._lock = threading.Lock()
        self._call = None
        self._cancelled = False

    def started(self, call):
        with self._lock:
            self._call = call
            if self._cancelled:
                self._owner._calls.fire(call)

    def cancel(self):
        with self._lock:
            self._cancelled = True
            if self._call is not None:
                self._owner._calls.fire(self._call)


def _nobody_reads(owner):
    """Whether a consumer can no longer come: its sandbox (or session) is
    closing, which waits for this run, or the main thread has ended (the
    interpreter is exiting, and joins this thread)."""
    return owner._calls.closed or not threading.main_thread().is_alive()


_END = object()  # the run has returned: its result is in _final
_WAIT = 0.2  # seconds between looks at whether anybody still reads


class RunStream(Closing):
    """Iterator of a run's events (OutputEvent, ImageEvent) as they happen,
    its last item the Execution. Between the run and the consumer is a
    queue of `size` events: while it is full, the library's buffer fills
    and the program waits in write() (backpressure). close() (or leaving a
    `with` block, or dropping the iterator) before the end cancels the run
    and waits until its sandbox is gone; so does closing the sandbox, and
    the iteration then ends with the run's Execution."""

    def __init__(self, owner, code, timeout=None, size=64):
        self._owner = owner
        self._queue = queue.Queue(size)
        self._closed = False
        self._done = False
        self._final = None
        self._run = _Run(owner)
        listener = owner._listener(self._put)
        self._thread = threading.Thread(target=self._work, name="agentjail-stream",
                                        args=(owner, code, timeout, listener))
        self._thread.start()

    def _put(self, item):
        """Waits while the consumer is behind; drops the item, and cancels
        the run, once nobody can read it (else a sandbox's close() would
        wait for a run that waits for a reader)."""
        while not self._closed:
            try:
                self._queue.put(item, timeout=_WAIT)
                return
            except queue.Full:
                if _nobody_reads(self._owner):
                    self._closed = True
                    self._run.cancel()

    def _work(self, owner, code, timeout, listener):
        try:
            self._final = owner._execute(code, timeout, listener, self._run.started)
        except BaseException as e:  # noqa: B902 -- the consumer's to see
            self._final = _Failure(e)
        self._put(_END)

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        while True:
            try:
                item = self._queue.get(timeout=_WAIT)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    item = _END  # dropped: nobody was to read it then
                    break
        if item is not _END:
            return item
        self._done = True
        self._thread.join()
        if isinstance(self._final, _Failure):
            raise self._final.error
        return self._final

    def close(self):
        """Cancels the run if it is still going and waits for its end."""
        if self._done:
            return
        self._closed = True
        self._run.cancel()
        while self._thread.is_alive():  # unblocks a put waiting for room
            try:
                self._queue.get(timeout=_WAIT)
            except queue.Empty:
                pass
        self._thread.join()
        self._done = True

    def __del__(self):
        if not getattr(self, "_done", True):
            self.close()


class AsyncRunStream:
    """RunStream for asyncio: `async for event in sandbox.astream(code)`.
    The run goes on a thread of the loop's default executor; its events
    reach the loop by call_soon_threadsafe, at most `size` not yet taken
    (then the run's delivery waits: backpressure). aclose() (or leaving an
    `async with` block) before the end cancels the run and waits for it."""

    def __init__(self, owner, code, timeout=None, size=64):
        self._owner, self._code, self._timeout = owner, code, timeout
        self._room = threading.Semaphore(size)
        self._closed = False
        self._done = False
        self._future = None
        self._run = _Run(owner)

    def _start(self):
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._future = self._loop.run_in_executor(None, self._work)

    def _put(self, event):
        while not self._room.acquire(timeout=_WAIT):
            if self._closed or _nobody_reads(self._owner):
                self._closed = True
                self._run.cancel()
                return
        if self._closed:
            self._room.release()  # the next put passes too
            return
        self._hand(event)

    def _hand(self, item):
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody will read
            self._closed = True
            self._run.cancel()

    def _work(self):
        try:
            item = self._owner._execute(self._code, self._timeout,
                                        self._owner._listener(self._put),
                                        self._run.started)
        except BaseException as e:  # noqa: B902 -- the consumer's to see
            item = _Failure(e)
        self._hand(item)

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._done:
            raise StopAsyncIteration
        if self._future is None:
            self._start()
        item = await self._queue.get()
        if isinstance(item, (OutputEvent, ImageEvent)):
            self._room.release()
            return item
        self._done = True
        await self._future
        if isinstance(item, _Failure):
            raise item.error
        return item

    async def aclose(self):
        """Cancels the run if it is still going and waits for its end."""
        if self._done:
            return
        self._done = True
        if self._future is None:
            return
        self._closed = True
        self._run.cancel()
        self._room.release()  # a put waiting for room goes on, and drops
        await self._future

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()
        return False


class RunHandle:
    """A run going on in the background of this process (submit()).
    id: 32 hex digits. wait(timeout) -> Execution; events(from_id) the
    events recorded so far and then as they come (ids from 1), the
    Execution last; cancel(); done(). The events are kept for the handle's
    life (at most the output caps' worth, and the session's images)."""

    def __init__(self, owner, code, timeout=None):
        self.id = secrets.token_hex(16)
        self._events = []
        self._cond = threading.Condition()
        self._result = None
        self._finished = False
        self._run = _Run(owner)
        self._thread = threading.Thread(target=self._work, name=f"agentjail-run-{self.id[:8]}",
                                        args=(owner, code, timeout))
        self._thread.start()

    def _record(self, event):
        with self._cond:
            self._events.append(event)
            self._cond.notify_all()

    def _work(self, owner, code, timeout):
        try:
            result = owner._execute(code, timeout, owner._listener(self._record),
                                   self._run.started)
        except BaseException as e:  # noqa: B902 -- wait() raises it
            result = _Failure(e)
        with self._cond:
            self._result = result
            self._finished = True
            self._cond.notify_all()

    def done(self):
        return self._finished

    def wait(self, timeout=None):
        """The Execution, once the run has ended (what it raised, raised
        here); TimeoutError when timeout seconds pass first."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._finished, timeout):
                raise TimeoutError(f"agentjail: run {self.id} still going after {timeout} s")
        if isinstance(self._result, _Failure):
            raise self._result.error
        return self._result

    def events(self, from_id=0):
        """The events after from_id, waiting for new ones until the run
        ends; then the Execution."""
        if isinstance(from_id, bool) or not isinstance(from_id, int) or from_id < 0:
            raise ValueError(f"from_id: {from_id!r} is not an event id (0 or more)")
        seen = from_id
        while True:
            with self._cond:
                self._cond.wait_for(lambda: len(self._events) > seen or self._finished)
                batch = self._events[seen:]
                finished = self._finished and len(self._events) == seen + len(batch)
            yield from batch
            seen += len(batch)
            if finished:
                yield self.wait()
                return

    def cancel(self):
        """Stops the run (status killed); wait() then gives its Execution."""
        self._run.cancel()

    def __repr__(self):
        return f"<RunHandle {self.id} {'done' if self._finished else 'running'}>"


class RunMethods:
    """run(code, on_stdout=, on_stderr=, on_image=), stream, submit, arun,
    astream, over the owner's _execute(code, timeout, listener, started,
    language) and _listener(sink): the local classes' over the C library,
    the remote ones' over serve (remote.py)."""

    # The events of a local run come from the C library.
    _listener = Listener

    def run(self, code, timeout=None, on_stdout=None, on_stderr=None, on_image=None,
            language="python"):
        """Runs code (str or bytes) and returns its Execution. timeout: a
        deadline of this call's own, shorter than the configured one;
        reaching it stops the run with status timeout.

        on_stdout(text), on_stderr(text): called with the output as the
        program writes it, before the run ends (str, decoded so that a
        character split between chunks comes whole; the bytes are in
        Execution.stdout_bytes). on_image(name, mime, data): each image a
        session's call made, at its end. They run on a thread of the
        library's, one at a time; a slow one slows the program (its output
        waits), never grows memory. One that raises is not called again,
        and run() raises its exception once the run has ended.

        language: "python" (the default), "javascript" ("js"): run by
        node, in a session by one node that keeps its state across calls,
        "typescript" ("ts"): the same once its types are stripped (not
        checked), or "bash", "sh" (docs/javascript.md); another name is a
        ValueError naming these."""
        return self._execute(code, timeout, listener_for(on_stdout, on_stderr, on_image,
                                                         self._listener),
                             language=language)

    def stream(self, code, timeout=None):
        """The run's events as they happen, then its Execution:

            with sandbox.stream(code) as events:
                for ev in events:   # OutputEvent, ImageEvent, ..., Execution

        Closing it early cancels the run (see RunStream)."""
        return RunStream(self, code, timeout)

    def submit(self, code, timeout=None):
        """Starts the run in the background of this process: a RunHandle."""
        return RunHandle(self, code, timeout)

    async def arun(self, code, timeout=None, on_stdout=None, on_stderr=None, on_image=None):
        """run() for asyncio: the run on a thread of the loop's executor,
        the callbacks called on the loop's thread, in order. Cancelling the
        task cancels the run (and waits for its end)."""
        loop = asyncio.get_running_loop()
        handed = [None if fn is None else _on_loop(loop, fn)
                  for fn in (on_stdout, on_stderr, on_image)]
        errors = [fn for fn in handed if fn is not None]
        run = _Run(self)
        future = loop.run_in_executor(None, functools.partial(
            self._execute, code, timeout, listener_for(*handed, make=self._listener),
            run.started))
        try:
            ex = await asyncio.shield(future)
        except asyncio.CancelledError:
            run.cancel()
            try:
                await future
            except BaseException:  # noqa: B902 -- the cancellation is what counts
                pass
            raise
        # The run's last events were queued on the loop before its end.
        await asyncio.sleep(0)
        for fn in errors:
            if fn.error is not None:
                raise fn.error
        return ex

    def astream(self, code, timeout=None):
        """stream() for asyncio: `async with sandbox.astream(code) as events:
        async for ev in events: ...`."""
        return AsyncRunStream(self, code, timeout)


class _on_loop:
    """A callback called on the event loop's thread rather than the
    library's; like run()'s, one that raised is not called again and its
    first exception is arun()'s."""

    def __init__(self, loop, fn):
        if not callable(fn):
            raise TypeError(f"callback must be callable, not {type(fn).__name__}")
        self._loop, self._fn, self.error = loop, fn, None

    def _call(self, *args):
        if self.error is not None:
            return
        try:
            self._fn(*args)
        except BaseException as e:  # noqa: B902 -- arun raises it
            self.error = e

    def __call__(self, *args):
        self._loop.call_soon_threadsafe(self._call, *args)
