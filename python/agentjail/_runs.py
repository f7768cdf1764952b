"""What a run of a Sandbox and of a Session share: the code as bytes, the
caller's own deadline, the call itself (streaming or not), and the C result
made an Execution. Below both, so that neither imports the other."""
import dataclasses

from ._calls import blocking
from ._native import ffi, lib
from .errors import InvalidCode, SandboxError
from .result import Status, execution_from_c


def code_bytes(code):
    if isinstance(code, str):
        try:
            return code.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidCode(f"code: not encodable as UTF-8 ({e.reason} at {e.start})") from None
    if isinstance(code, (bytes, bytearray, memoryview)):
        return bytes(code)
    raise TypeError(f"code must be str or bytes, not {type(code).__name__}")


def check_deadline(timeout, configured):
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout: {timeout!r} is not a positive number of seconds")
    # The sandbox's own wall clock stops the run at the configured limit;
    # a longer deadline could only be a mistake, never a wider limit.
    return float(timeout) if timeout < configured else None


def finish(call, res, tier, deadline):
    """The C result as an Execution (res freed), with the caller's deadline
    named when it was what stopped the run."""
    try:
        ex = execution_from_c(res, tier)
    finally:
        lib.aj_result_free(res)
    if call.by_deadline and ex.status is Status.KILLED:
        ex = dataclasses.replace(
            ex, status=Status.TIMEOUT,
            message=f"the call's timeout of {deadline:g} s passed; the run was stopped")
    if ex.status is Status.SANDBOX_ERROR:
        if ex.message and ex.message.startswith("code:"):
            raise InvalidCode(ex.message)
        raise SandboxError(ex)
    return ex


def language_number(language):
    """The library's number for a language's name ("python", "javascript"
    or "js", "typescript" or "ts", ..., as aj_language_parse reads it);
    ValueError naming the ones there are."""
    if isinstance(language, str):
        out = ffi.new("int *")
        if lib.aj_language_parse(language.encode("utf-8", "replace"), out) == 0:
            return out[0]
    raise ValueError(f"language: {language!r} is not one the sandbox runs: "
                     "'python' (the default), 'javascript' or 'js', 'typescript' or 'ts', "
                     "'bash', 'sh' or 'shell'")


def in_language(language, plain_fn, stream_fn, lang_fn):
    """plain_fn and stream_fn (a run's or a session call's) for language:
    as they are for Python, else lang_fn (aj_run_lang, aj_session_run_lang)
    in their shapes."""
    number = language_number(language)
    if number == 0:
        return plain_fn, stream_fn
    return ((lambda h, c, n, token, res: lang_fn(h, number, c, n, token, ffi.NULL, res)),
            (lambda h, c, n, token, stream, res: lang_fn(h, number, c, n, token, stream, res)))


def execute(owner, plain_fn, stream_fn, code, timeout, listener=None, started=None,
            check_rc=None):
    """One run of owner (a Sandbox or a Session: its _calls, _handle, tier
    and configured wall clock): plain_fn without a listener, stream_fn
    (the library's *_streaming call) with one. started(call), when given,
    learns the run's Call as soon as it exists (to cancel it from another
    thread). check_rc(rc, res) may raise on the call's return code. After
    the run: the listener's end (a split character's remains), and the
    first exception its sink raised, raised here."""
    data = code_bytes(code)
    deadline = check_deadline(timeout, owner._config.c.limits.wall_sec)

    def fn(token, stream, res):
        if stream is None:
            return plain_fn(owner._handle, data, len(data), token, res)
        return stream_fn(owner._handle, data, len(data), token, stream, res)

    return result_call(owner, fn, deadline, listener, started, check_rc)


def result_call(owner, fn, deadline, listener, started=None, check_rc=None):
    """A call of owner whose answer is a result (a run, a session's
    command, a background command's wait): fn(token, stream, res), stream
    the listener's (None without one). started and check_rc as execute's.
    After the call: the listener's end, and the first exception its sink
    raised."""
    call = owner._calls.begin(deadline)
    try:
        if started is not None:
            started(call)
        res = ffi.new("struct aj_result *")
        rc = blocking(call, fn, call.token,
                      listener.c_stream if listener is not None else None, res)
        if check_rc is not None:
            check_rc(rc, res)
        ex = finish(call, res, owner.tier, deadline)
    finally:
        owner._calls.end(call)
    if listener is not None:
        listener.end()
        if listener.error is not None:
            raise listener.error
    return ex
