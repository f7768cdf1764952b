# The program's launcher on the tiers that start a fresh interpreter for a
# run (process and container: src/linux/jail_plan.c; docker and gvisor:
# src/boot/boot.py), started as `python3 -I -u -c <this>` in the
# workspace. It runs main.py as `python3 -I -u main.py` would (the same
# __main__, argv, tracebacks and exit codes), and says one thing more: when
# an uncaught MemoryError, or any subclass of it (numpy's
# _ArrayMemoryError), ends the program, it writes one byte on fd 3 (the
# verdict pipe, AJ_VERDICT_FD in src/core/status.h) before it exits with
# Python's own 1. The sandbox's init reads that pipe and carries the fact
# in its report; the status rules read it (rule S7 of docs/design.md). The
# interpreter knows the exception's class, where the last line of its
# traceback names only a subclass ("_ArrayMemoryError", "E"). The warm
# zygote and the microvm's zygote do the same; a session's interpreter says
# it in its reply. fd 3 is this process's, so the program can write it too:
# it can only label its own run `memory`.
#
# Every run pays for this file, so it imports nothing the interpreter has
# not already loaded at start (os, _imp, _warnings and importlib's frozen
# _frozen_importlib_external), what only an uncaught exception needs is in
# a function compiled only then, and main.py is compiled the way
# `python3 main.py` compiles it (_agentjail_compile). The build drops this
# file's comments (tools/c_string.py --strip-comments).
def _agentjail_compile(source, program):
    # main.py's code, as compile(source, program, "exec", dont_inherit=True)
    # makes it, but compiled by exec() and caught at its first trace event,
    # before its first line runs. The builtin compile() first builds the
    # ast module's hundred-odd classes (CPython 3.11: a fifth of bare
    # Python's start, the most of what this launcher cost), which exec() of
    # a string and `python3 main.py` never do. exec() names the code
    # "<string>": _imp._fix_co_filename (what the import system does for a
    # moved .pyc) gives it and every function in it main.py's path. None
    # when anything is not as expected (a warning while compiling, which
    # must name main.py; a SyntaxError; a CPython without these parts):
    # the caller then compiles it with compile(), as Python would.
    import _imp
    import _warnings
    import sys

    mutated = getattr(_warnings, "_filters_mutated", None)
    fix = getattr(_imp, "_fix_co_filename", None)
    if mutated is None or fix is None:
        return None
    here = sys._getframe()
    caught = []

    def first_event(frame, event, arg):
        # Only main.py's module frame, which exec() starts right under
        # this one (a codec that a coding cookie imports is not it).
        if frame.f_back is here:
            caught.append(frame.f_code)
            raise RuntimeError  # before its first line
        return None

    # Every warning an error while compiling: it ends this attempt, and
    # compile() then shows it under main.py's name.
    error = ("error", None, Warning, None, 0)
    _warnings.filters.insert(0, error)
    mutated()
    sys.settrace(first_event)
    try:
        exec(source, {})
    except BaseException:  # noqa: B902 - the caught code, or compile() below
        pass
    finally:
        sys.settrace(None)
        _warnings.filters.remove(error)
        mutated()
    if not caught:
        return None
    code = caught[0]
    fix(code, program)
    return code


def _agentjail_run():
    import os
    import sys

    program = os.getcwd() + "/main.py"
    # Run as a compiled file on a descriptor (/dev/fd/4: the process tier's
    # launcher compiled ahead, src/linux/jail_run.c), the interpreter has
    # read it: the descriptor is not the program's to inherit.
    if sys.argv[0].startswith("/dev/fd/"):
        try:
            os.close(int(sys.argv[0][8:]))
        except (OSError, ValueError):
            pass
        if sys.path and sys.path[0] == "/dev/fd":
            del sys.path[0]  # a script's directory, where -I does not imply -P
    # The verdict pipe is the launcher's, not something a child inherits.
    try:
        os.set_inheritable(3, False)
    except OSError:
        pass  # no pipe (run by hand): nothing to say
    # __main__ as `python3 main.py` makes it, its names in the same order.
    main = type(sys)("__main__")
    main.__loader__ = sys.modules["_frozen_importlib_external"].SourceFileLoader(
        "__main__", program)
    main.__annotations__ = {}
    main.__builtins__ = __builtins__
    main.__file__ = program
    main.__cached__ = None
    sys.modules["__main__"] = main
    sys.argv[:] = ["main.py"]
    sys.orig_argv[:] = [sys.orig_argv[0], "-I", "-u", "main.py"]
    # What `pip install` put in the workspace (PIP_TARGET, rule E1).
    if os.environ.get("PIP_TARGET"):
        sys.path.append(os.environ["PIP_TARGET"])
    # What the interpreter made at start stays for good: the collection
    # at the program's end (finish) then looks at the program's objects
    # alone, as the warm zygote's runs do.
    import gc
    gc.freeze()
    status = 0
    try:
        with open(program, "rb") as f:
            source = f.read()
        code = _agentjail_compile(source, program)
        if code is None:
            code = compile(source, program, "exec", dont_inherit=True)
        del source
        exec(code, main.__dict__)
    except SystemExit as e:
        status = system_exit_code(e)  # its code, or its message and 1
    except BaseException as e:  # noqa: B902 - an uncaught exception, as Python reports it
        status = _agentjail_uncaught(e, e.__traceback__.tb_next)
    # Python's exit steps, then the end (src/core/exit_rule.py).
    finish(status, main)


_AGENTJAIL_UNCAUGHT = r'''
def _agentjail_uncaught(e, tb):
    import os
    import sys

    # Without the launcher's frame: the traceback starts at main.py (and
    # a SyntaxError has none at all), as `python3 main.py` prints it.
    try:
        sys.excepthook(type(e), e.with_traceback(tb), tb)
    except BaseException as hook_error:  # noqa: B902
        # What CPython prints when the hook itself fails (as the warm
        # zygote's report_uncaught does): the hook's error from the
        # hook's own frame, then the original.
        try:
            import traceback
            sys.stderr.write("Error in sys.excepthook:\n")
            traceback.print_exception(type(hook_error), hook_error,
                                      hook_error.__traceback__.tb_next, chain=False)
            sys.stderr.write("\nOriginal exception was:\n")
            traceback.print_exception(type(e), e, tb)
        except BaseException:  # noqa: B902
            pass
        del hook_error
    if isinstance(e, MemoryError):
        # The verdict, on the pipe the sandbox's init reads; the exit
        # code stays Python's 1.
        try:
            os.write(3, b"M")
        except OSError:
            pass
    # Python ends by SIGINT for an uncaught KeyboardInterrupt, after its
    # exit steps (finish's negative code); after any other, with 1.
    if isinstance(e, KeyboardInterrupt):
        import signal
        return -signal.SIGINT
    return 1
'''


def _agentjail_uncaught(e, tb):
    # Compiled on first use: a run that ends well never pays for it. The
    # names are the launcher's, as main.py's globals are its own module's.
    scope = {"__builtins__": __builtins__}
    exec(_AGENTJAIL_UNCAUGHT, scope)
    return scope["_agentjail_uncaught"](e, tb)


_agentjail_run()
