"""A run's output as it happens: the C library's events (struct aj_event,
delivered on a thread of the library's own) made Python events, handed to
a sink.

Text: each stream's bytes go through an incremental UTF-8 decoder of its
own, so a character split between two chunks comes out whole in the
later one; invalid bytes become U+FFFD, as in Execution.stdout. The
bytes themselves stay in Execution.stdout_bytes."""
import codecs
from dataclasses import dataclass



@dataclass(frozen=True)
class OutputEvent:
    """A chunk of the program's stdout or stderr, as it wrote it."""

    stream: str  # "stdout" or "stderr"
    text: str
    id: int = 0  # the run's events are numbered from 1, in order


@dataclass(frozen=True)
class ImageEvent:
    """An image a session's call produced (sent at the end of the call)."""

    name: str
    mime: str
    data: bytes
    id: int = 0

    def __repr__(self):
        return f"ImageEvent(name={self.name!r}, mime={self.mime!r}, {len(self.data)} bytes)"


_STREAM_NAMES = ("stdout", "stderr")


class Listener:
    """One run's events to sink(event), one at a time, in order. sink runs
    on the library's delivery thread; whatever it raises is kept (the first
    one: error) and never reaches C. While sink blocks, the library's
    bounded buffer fills and then the program blocks in write():
    backpressure, with the run's wall clock still running."""

    def __init__(self, sink):
        self._sink = sink
        # The native library, loaded here and not at import: OutputEvent and
        # ImageEvent are the remote client's too.
        from ._native import ffi, lib
        self._ffi, self._lib = ffi, lib
        self._streams = {lib.AJ_EVENT_STDOUT: "stdout", lib.AJ_EVENT_STDERR: "stderr"}
        self._decoders = {name: codecs.getincrementaldecoder("utf-8")("replace")
                          for name in _STREAM_NAMES}
        self._next_id = 1
        self.error = None
        # Kept alive for as long as C may call it: until the run returns.
        self._fn = ffi.callback("aj_event_fn", self._on_event)
        self._c = ffi.new("struct aj_stream *")
        self._c.fn = self._fn
        self._c.arg = ffi.NULL
        self._c.buffer_kb = 0

    @property
    def c_stream(self):
        return self._c

    def _emit(self, make):
        event = make(self._next_id)
        self._next_id += 1
        try:
            self._sink(event)
        except BaseException as e:  # noqa: B902 -- C cannot take it; run() raises it
            if self.error is None:
                self.error = e

    def _on_event(self, arg, ev):
        ffi, lib = self._ffi, self._lib
        try:
            e = ev[0]
            if e.kind == lib.AJ_EVENT_IMAGE:
                name = ffi.string(e.name).decode("utf-8", "replace")
                mime = ffi.string(e.mime).decode("utf-8", "replace")
                data = ffi.unpack(e.data, e.len)
                self._emit(lambda i: ImageEvent(name, mime, data, i))
                return
            stream = self._streams.get(e.kind)
            if stream is None:
                return  # a kind of a later library: not this package's to show
            text = self._decoders[stream].decode(ffi.unpack(e.data, e.len))
            if text:
                self._emit(lambda i: OutputEvent(stream, text, i))
        except BaseException as e:  # noqa: B902 -- never into C
            if self.error is None:
                self.error = e

    def end(self):
        """After the run returned (no event comes later): what a decoder
        still holds (a character the output cut short, as U+FFFD)."""
        for stream, decoder in self._decoders.items():
            text = decoder.decode(b"", final=True)
            if text:
                self._emit(lambda i: OutputEvent(stream, text, i))


class Callbacks:
    """run()'s on_stdout(text), on_stderr(text), on_image(name, mime, data)
    as a Listener's sink. A callback that raises is not called again; the
    first exception is raised by run() once the run has ended."""

    def __init__(self, on_stdout=None, on_stderr=None, on_image=None):
        for name, fn in (("on_stdout", on_stdout), ("on_stderr", on_stderr),
                         ("on_image", on_image)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable, not {type(fn).__name__}")
        self._fns = {"stdout": on_stdout, "stderr": on_stderr, "image": on_image}

    @property
    def any(self):
        return any(fn is not None for fn in self._fns.values())

    def __call__(self, event):
        key = "image" if isinstance(event, ImageEvent) else event.stream
        fn = self._fns[key]
        if fn is None:
            return
        try:
            if key == "image":
                fn(event.name, event.mime, event.data)
            else:
                fn(event.text)
        except BaseException:
            self._fns[key] = None
            raise  # kept by the Listener, raised by run() at the end


class EventSink:
    """A Listener's contract without the C library: a remote run's events
    (already Python events, numbered by serve) to sink(event), one at a
    time, in order; the first exception sink raises is kept (error) and
    the run's caller raises it at the end."""

    def __init__(self, sink):
        self._sink = sink
        self.error = None

    def emit(self, event):
        try:
            self._sink(event)
        except BaseException as e:  # noqa: B902 -- run() raises it
            if self.error is None:
                self.error = e

    def end(self):
        """Nothing held back: serve decoded each chunk whole."""


def listener_for(on_stdout, on_stderr, on_image, make=Listener):
    """make(callbacks) (a Listener, or a remote run's EventSink) calling
    these, or None when no callback was given (the run then takes the
    plain call without streaming)."""
    cb = Callbacks(on_stdout, on_stderr, on_image)
    return make(cb) if cb.any else None
