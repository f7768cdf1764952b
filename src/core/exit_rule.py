# The exit code a SystemExit gives, as `python3 main.py` ends with it:
# written once and put in front of the session interpreter (src/core/repl.py)
# and the warm zygote (src/warm/zygote.py) at build time (tools/c_string.py),
# which both end a program or a cell themselves instead of letting their
# interpreter exit. (src/core/launch.py and the microvm's zygote.py let the
# SystemExit end their interpreter: CPython applies the same rule there.)


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
