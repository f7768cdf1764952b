# How a program ends, as `python3 main.py` ends: the exit code a SystemExit
# gives, and the exit itself. Written once and put in front of the launcher
# (src/core/launch.py), the session interpreter (src/core/repl.py) and the
# warm zygote (src/warm/zygote.py) at build time (tools/c_string.py), which
# end a program or a cell themselves instead of letting their interpreter
# exit. (The microvm's zygote.py lets the SystemExit end its interpreter:
# CPython applies the same rule there.)


def system_exit_code(e):
    """None is 0, an int its low byte (what the kernel keeps of it),
    anything else is printed on stderr and is 1."""
    import sys

    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:  # noqa: BLE001 - a stderr that is gone changes nothing
        pass
    return 1


def finish(code, main):
    """Python's exit as far as a run can tell, then the process's end:
    threads joined, atexit handlers run, what the program's __main__ (the
    module main) holds released (a file it left open is flushed and closed,
    a __del__ runs, a cycle is collected), streams flushed (120 if stdout
    cannot be, as CPython); then the status (a negative code: that signal,
    as Python ends for SIGINT). The interpreter itself is not torn down
    (os._exit): its sandbox is discarded whole, and the teardown is a
    millisecond and more of every run. CPython never promised a __del__ for
    what other modules still hold at exit; this runs none of those."""
    import atexit
    import gc
    import os
    import sys

    threading = sys.modules.get("threading")
    try:
        try:
            if threading is not None:
                threading._shutdown()  # waits for non-daemon threads, as at exit
        except KeyboardInterrupt:
            pass
        atexit._run_exitfuncs()
        globals_ = main.__dict__
        builtins_ = globals_.get("__builtins__")
        globals_.clear()
        globals_["__builtins__"] = builtins_
        gc.collect()
    finally:
        try:
            sys.stdout.flush()
        except Exception:  # noqa: BLE001
            if code >= 0:
                code = 120
        try:
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
        if code < 0:
            import signal

            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code & 0xFF)
