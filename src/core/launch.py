# The program's launcher on the tiers that start a fresh interpreter for a
# run (process and container: src/linux/jail.c; docker and gvisor:
# src/boot/boot.py), started as `python3 -I -u -c <this>` in the
# workspace. It runs main.py as `python3 -I -u main.py` would (the same
# __main__, argv, tracebacks and exit codes), with one difference: an
# uncaught MemoryError, or any subclass of it (numpy's _ArrayMemoryError),
# ends the interpreter with exit code 121 instead of 1. That code is the
# fact the status rules read (AJ_MEMORY_ERROR_EXIT, src/core/status.h): the
# interpreter knows the exception's class, where the last line of its
# traceback names only a subclass ("_ArrayMemoryError", "E"). The warm
# zygote, the microvm's zygote and the session interpreter end the same way.
# A program can exit 121 itself: it only labels its own run `memory`.
def _agentjail_run():
    import builtins
    import os
    import sys
    import types
    from importlib.machinery import SourceFileLoader

    memory_error_exit = 121
    program = os.path.join(os.getcwd(), "main.py")
    main = types.ModuleType("__main__")
    main.__file__ = program
    main.__cached__ = None
    main.__builtins__ = builtins
    main.__loader__ = SourceFileLoader("__main__", program)
    sys.modules["__main__"] = main
    sys.argv[:] = ["main.py"]
    sys.orig_argv[:] = [sys.orig_argv[0], "-I", "-u", "main.py"]
    # What `pip install` put in the workspace (PIP_TARGET, rule E1).
    if os.environ.get("PIP_TARGET"):
        sys.path.append(os.environ["PIP_TARGET"])
    try:
        with open(program, "rb") as f:
            source = f.read()
        exec(compile(source, program, "exec", dont_inherit=True), main.__dict__)
    except SystemExit:
        raise  # the interpreter's own handling: exit code, or message and 1
    except BaseException as e:  # noqa: B902 - an uncaught exception, as Python reports it
        # Without this file's frame: the traceback starts at main.py (and
        # a SyntaxError has none at all), as `python3 main.py` prints it.
        tb = e.__traceback__.tb_next
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
        code = memory_error_exit if isinstance(e, MemoryError) else 1
        interrupted = isinstance(e, KeyboardInterrupt)
        del e, tb
        if interrupted:
            # Python ends by SIGINT for an uncaught KeyboardInterrupt,
            # after its exit steps.
            import atexit
            import signal
            threading = sys.modules.get("threading")
            if threading is not None:
                threading._shutdown()
            atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:  # noqa: B902
                    pass
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        # The ordinary exit: threads joined, atexit handlers run, streams
        # flushed, as after any uncaught exception.
        sys.exit(code)


_agentjail_run()
