"""A program's gate, for showing "before the end" by order alone: the code
below, put before a program, defines gate(), which waits (30 s at most)
for /mnt/gate/go, a host directory the test shows read-only there and
opens only once it has seen the program's first output. Output held until
the run's end would come after the program gave up, and it says 'no gate'."""
GATE = """import os, sys, time
def gate():
    for _ in range(600):
        if os.path.exists('/mnt/gate/go'):
            return 'saw the gate'
        time.sleep(0.05)
    return 'no gate'
"""
