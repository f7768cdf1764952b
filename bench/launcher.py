#!/usr/bin/env python3
"""bench/launcher.py: what the launcher (src/core/launch.py, with
src/core/exit_rule.py in front, as the build makes build/gen/launch.inc)
costs beside bare Python, outside any sandbox. Figures only, never an
assertion.

Rows, interleaved round by round after warm-up (drift lands on each alike),
each a fresh interpreter started by this program with the sandbox's
environment (rule E1's PATH, LANG, HOME, TMPDIR, MALLOC_ARENA_MAX), in a
directory holding main.py = print(1):

  bare -c        python3 -I -c 'print(1)'   (agentjail bench's baseline)
  bare main.py   python3 -I -u main.py      (what the launcher stands for)
  launcher       python3 -I -u -c <launch_py>, as the process and container
                 tiers start a run

and the compile of the launcher's source alone, in this interpreter.
Medians in ms, and each row's ratio to bare -c.

    python3 bench/launcher.py [ROUNDS]      (default 100; make bench-launcher)
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PYTHON = "/usr/bin/python3"


def launcher_source():
    """launch_py as the build wrote it: the C string's pieces, joined and
    unescaped."""
    with open(os.path.join(ROOT, "build", "gen", "launch.inc")) as f:
        text = f.read()
    pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', text)
    return bytes("".join(pieces), "utf-8").decode("unicode_escape")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    launch = launcher_source()
    rows = {
        "bare -c": [PYTHON, "-I", "-c", "print(1)"],
        "bare main.py": [PYTHON, "-I", "-u", "main.py"],
        "launcher": [PYTHON, "-I", "-u", "-c", launch],
    }
    times = {name: [] for name in rows}
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "main.py"), "w") as f:
            f.write("print(1)\n")
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": work,
               "TMPDIR": work, "MALLOC_ARENA_MAX": "2"}
        for i in range(rounds + 5):
            for name, argv in rows.items():
                t0 = time.perf_counter()
                out = subprocess.run(argv, cwd=work, env=env, stdout=subprocess.PIPE).stdout
                ms = (time.perf_counter() - t0) * 1000
                if out != b"1\n":
                    sys.exit(f"{name}: printed {out!r}, not 1")
                if i >= 5:
                    times[name].append(ms)
    base = statistics.median(times["bare -c"])
    print(f"agentjail bench/launcher.py: {PYTHON}, {rounds} interleaved rounds after 5 warm-up")
    for name, v in times.items():
        med = statistics.median(v)
        print(f"  {name:<14} {med:7.2f} ms   {med / base:5.2f}x bare -c")
    compile_ms = timeit.timeit(lambda: compile(launch, "<string>", "exec"), number=200) / 200e-3
    print(f"  compiling the launcher's {len(launch)} characters: {compile_ms:.2f} ms "
          f"(in {sys.executable}, {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
