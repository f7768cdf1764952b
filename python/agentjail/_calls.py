"""The calls in progress on one sandbox or session, so that cancel() and
close() reach them from any thread, and the blocking C call itself.

Every run holds a cancel token (aj_cancel) from start to end. cancel()
fires the tokens of the runs in progress; close() fires them too and waits
for those runs to return before the C handle is freed, so no thread is left
inside a freed sandbox. A token is fired and freed under one lock: a late
timer or cancel() can never touch a freed one."""
import threading

from ._native import ffi, lib
from .errors import SandboxClosed


class Call:
    __slots__ = ("token", "by_deadline", "timer")

    def __init__(self, token):
        self.token = token
        self.by_deadline = False
        self.timer = None


class Calls:
    def __init__(self, what):
        self._what = what
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
                raise SandboxClosed(f"agentjail: the {self._what} is closed")
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


def blocking(call, fn, *args):
    """Calls fn (a C function; cffi releases the GIL around it). On the main
    thread it runs on a helper thread instead, so that Ctrl-C reaches the
    caller at once: the run is cancelled, waited for, and the
    KeyboardInterrupt raised, with nothing left behind in the sandbox."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    box = []
    worker = threading.Thread(target=lambda: box.append(fn(*args)),
                              name="agentjail-run", daemon=True)
    worker.start()
    try:
        worker.join()
    except BaseException:
        lib.aj_cancel_fire(call.token)
        while True:
            try:
                worker.join()
                break
            except KeyboardInterrupt:
                pass  # a second Ctrl-C: the run is already being stopped
        raise
    return box[0]
