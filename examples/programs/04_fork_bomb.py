# Tries a fork bomb: every process forks as fast as it can, and its children fork too.
#
# Bounded so that it ends even outside a sandbox (never run it there anyway):
# each process forks at most MAX_FORKS_EACH times, each child gets a share of
# its parent's budget so the whole tree never exceeds TOTAL_BUDGET processes,
# every process sleeps SLEEP_SEC and exits, and a refused fork stops the one
# that asked. Every process reports on a pipe, so the first one can count
# what the whole tree made.
import os
import time

MAX_FORKS_EACH = 200
TOTAL_BUDGET = 1000
SLEEP_SEC = 3

report_r, report_w = os.pipe()
os.set_blocking(report_r, False)
first = os.getpid()


def bomb(budget):
    made = 0
    while budget > 0 and made < MAX_FORKS_EACH:
        share = (budget - 1) // 4
        try:
            pid = os.fork()
        except OSError as e:
            os.write(report_w, f"!{e.errno}\n".encode())
            return
        if pid == 0:
            # The child: a bomb of its own, with its share of the budget.
            budget, made = share, 0
            continue
        os.write(report_w, b"+\n")
        budget -= 1 + share
        made += 1


bomb(TOTAL_BUDGET)
time.sleep(SLEEP_SEC)
if os.getpid() != first:
    os._exit(0)  # a child: never runs the report below, never flushes a copied buffer

data = b""
try:
    while chunk := os.read(report_r, 65536):
        data += chunk
except BlockingIOError:
    pass
lines = data.decode().split()
made = lines.count("+")
refused = [int(x[1:]) for x in lines if x.startswith("!")]
if refused:
    print(f"forked {made} processes, then {len(refused)} forks were refused: "
          f"{os.strerror(refused[0])}")
else:
    print(f"forked {made} processes, none refused")
