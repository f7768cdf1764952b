#!/usr/bin/env python3
"""bench/echo.py: typed input's way back, per tier (issue 36): a line sent
to a background `cat` in a session (send_stdin) until the wait's on_stdout
sees it come back, 20 times one after another; the median and every figure.
Where the tier wakes the read in flight (process, container, docker), the
line comes back at once; elsewhere it waits for a short read (docs/commands.md,
"Background commands"). Figures only, never an assertion.

    python3 bench/echo.py TIER [IMAGE_DIR] [DOCKER_IMAGE]
"""
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import agentjail  # noqa: E402

tier = sys.argv[1] if len(sys.argv) > 1 else "process"
image = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build", "images", "test")
kw = {"docker_image": sys.argv[3] if len(sys.argv) > 3 else "agentjail/test"} \
    if tier == "docker" else {"image": image}
base = int(os.environ.get("AJ_PYTEST_UID_BASE", "2110000000")) + 3000000
sb = agentjail.Sandbox(tier=tier, uid_base=min(base, 2147480000), **kw)
s = sb.session()
p = s.spawn(["cat"], keep_stdin=True)
got, cond = [], threading.Condition()


def on_out(ev):
    with cond:
        got.append(ev)
        cond.notify_all()


threading.Thread(target=lambda: p.wait(on_stdout=on_out), daemon=True).start()
time.sleep(1)
lat = []
for _ in range(20):
    with cond:
        n = len(got)
    t0 = time.perf_counter()
    p.send_stdin(b"x\n")
    with cond:
        while len(got) == n:
            cond.wait(5)
    lat.append((time.perf_counter() - t0) * 1000)
lat.sort()
print(f"{tier}: a line into a background cat and back, 20 one after another: "
      f"p50 {lat[len(lat) // 2]:.2f} ms ({' '.join(f'{x:.1f}' for x in lat)}) "
      f"(load {os.getloadavg()[0]:.1f})")
p.kill()
s.close()
