"""The calls in progress on one sandbox or session, so that cancel() and
close() reach them from any thread, and the blocking C call itself.

Every run holds a cancel token (aj_cancel) from start to end. cancel()
fires the tokens of the runs in progress; close() fires them too and waits
for those runs to return before the C handle is freed, so no thread is left
inside a freed sandbox. A token is fired and freed under one lock: a late
timer or cancel() can never touch a freed one."""
import os
import queue
import threading

from ._closing import Closing
from ._native import ffi, lib


class Call:
    __slots__ = ("token", "by_deadline", "timer")

    def __init__(self, token):
        self.token = token
        self.by_deadline = False
        self.timer = None


class Calls:
    def __init__(self, closed_error):
        self._closed_error = closed_error
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._calls = set()
        self._closed = False

    def begin(self, deadline=None):
        pp = ffi.new("struct aj_cancel **")
        rc = lib.aj_cancel_new(pp)
        if rc:
            raise OSError(-rc, "agentjail: cannot make a cancel token")
        call = Call(pp[0])
        with self._lock:
            if self._closed:
                lib.aj_cancel_free(call.token)
                raise self._closed_error()
            self._calls.add(call)
        if deadline is not None:
            # The caller's own, shorter deadline: a timer that cancels the
            # run (only runs given one pay for the thread).
            call.timer = threading.Timer(deadline, self._expire, (call,))
            call.timer.daemon = True
            call.timer.start()
        return call

    def _expire(self, call):
        with self._lock:
            if call in self._calls:
                call.by_deadline = True
                lib.aj_cancel_fire(call.token)

    def fire(self, call):
        """Cancels one run, if it is still in progress."""
        with self._lock:
            if call in self._calls:
                lib.aj_cancel_fire(call.token)

    def end(self, call):
        if call.timer is not None:
            call.timer.cancel()
        with self._lock:
            self._calls.discard(call)
            lib.aj_cancel_free(call.token)
            call.token = None
            if not self._calls:
                self._idle.notify_all()

    def cancel(self):
        """Fires every run in progress; returns how many."""
        with self._lock:
            for call in self._calls:
                lib.aj_cancel_fire(call.token)
            return len(self._calls)

    def close(self):
        """Refuses new runs, cancels those in progress and waits for them.
        True the first time (the caller then frees the C handle)."""
        with self._lock:
            first = not self._closed
            self._closed = True
            for call in self._calls:
                lib.aj_cancel_fire(call.token)
            while self._calls:
                self._idle.wait()
            return first

    @property
    def closed(self):
        return self._closed


class _MainThreadRunner:
    """The thread that makes the main thread's C calls, so that Ctrl-C
    reaches the caller at once: the main thread waits on a lock, which a
    signal interrupts, while the call runs here. One thread for the whole
    process, started at first use (a thread per call cost 0.2 ms median,
    3.7 ms p95 here); the main thread makes one call at a time, so one is
    enough. The sandboxes it starts are tied to its life (a parent-death
    signal), which is the process's."""

    def __init__(self):
        self._jobs = queue.SimpleQueue()
        self._thread = None
        self._start_lock = threading.Lock()

    def _main(self):
        while True:
            fn, args, box, done = self._jobs.get()
            try:
                box.append(fn(*args))
            except BaseException as e:  # handed to the caller, not lost here
                box.append(e)
            done.release()

    def call(self, call, fn, args):
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._main, name="agentjail-main-runs",
                                                daemon=True)
                self._thread.start()
        box, done = [], threading.Lock()
        done.acquire()
        self._jobs.put((fn, args, box, done))
        try:
            done.acquire()
        except BaseException:
            lib.aj_cancel_fire(call.token)
            while True:
                try:
                    done.acquire()
                    break
                except KeyboardInterrupt:
                    pass  # a second Ctrl-C: the run is already being stopped
            raise
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def forget(self):
        """In a forked child the thread does not exist: start afresh."""
        self.__init__()


_main_runner = _MainThreadRunner()
os.register_at_fork(after_in_child=_main_runner.forget)


def blocking(call, fn, *args):
    """Calls fn (a C function; cffi releases the GIL around it). On the main
    thread the call is made by _MainThreadRunner, so that Ctrl-C cancels the
    run, waits for it, and raises KeyboardInterrupt with nothing left
    behind in the sandbox."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    return _main_runner.call(call, fn, args)


class Handle(Closing):
    """What Sandbox and Session share: a C handle (self._handle) freed by
    self._free once close() has stopped and waited for the calls in
    progress; a context manager; freed when dropped without close()."""

    _handle = ffi.NULL

    def close(self):
        if self._calls.close() and self._handle != ffi.NULL:
            self._free(self._handle)
            self._handle = ffi.NULL

    def __del__(self):
        # Dropped without close(): no call holds it (a call holds self).
        if getattr(self, "_calls", None) is not None and self._handle != ffi.NULL:
            self.close()
