#!/usr/bin/env python3
"""bench/checkpoints.py: what a session's checkpoint, restore, pause,
resume and fork cost (docs/checkpoints.md), for a session with pandas
imported and a 50 MB DataFrame (625,000 x 10 float64). Figures only, never
an assertion.

Per tier (ROUNDS rounds, medians):
  build       the baseline: a new session, then `import pandas` and the
              DataFrame made again (what an agent pays without a checkpoint)
  checkpoint  Session.checkpoint to a file, and the file's size
  restore     Sandbox.restore of that file, until it returns (the state
              loaded), and its ratio to build
  pause       Session.pause (the state out, the sandbox ended)
  resume      Session.resume (a new sandbox, the state in)
  fork x4     Session.fork(4), until all four hold the state
  kept pause, kept resume
              the same pause and resume with pause_keep_sec (a sandbox
              frozen, not ended: --pause-keep), on the tiers that freeze
  rss/copy    each forked copy's interpreter's resident memory (VmRSS):
              the copies share no pages (each is a sandbox of its own)

    AJ_PYTEST_UID_BASE=... python3 bench/checkpoints.py [ROUNDS] [TIER ...]
    (default: 3 rounds; process container)
"""
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("AGENTJAIL_IMAGES", os.path.join(ROOT, "build", "images"))
import agentjail  # noqa: E402

UID_BASE = int(os.environ.get("AJ_PYTEST_UID_BASE", "2110000000"))
SETUP = ("import pandas as pd, numpy as np\n"
         "df = pd.DataFrame(np.random.default_rng(1).random((625000, 10)))\n"
         "def total():\n"
         "    return float(df.values.sum())\n")
RSS = "print(int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]))"


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def sandbox(tier, keep=0):
    opts = dict(pause_keep_sec=keep, uid_base=UID_BASE, slots=16, state_dir=f"/run/agentjail-bench-{UID_BASE}",
                memory_mb=1024, disk_mb=1024, file_size_mb=512, timeout=120, cpu_sec=120, max_sessions=16)
    if tier in ("container", "gvisor", "microvm"):
        opts["image"] = "test-ds"
    if tier == "docker":
        opts["docker_image"] = "agentjail/test-ds"
    return agentjail.Sandbox(tier=tier, **opts)


def must(ex):
    if not ex.ok:
        raise SystemExit(f"bench: a cell failed: {ex.status} {ex.message} {ex.stderr[-400:]}")
    return ex


def one_round(sb, key, path):
    figures = {}

    def build():
        s = sb.session()
        must(s.run(SETUP))
        return s

    figures["build"], s = timed(build)
    try:
        figures["checkpoint"], info = timed(lambda: s.checkpoint(path, key))
        figures["size_mb"] = os.path.getsize(path) / 1e6
        figures["pause"], _ = timed(s.pause)
        figures["resume"], _ = timed(s.resume)
        must(s.run("assert total() > 0"))
        figures["fork4"], copies = timed(lambda: s.fork(4))
        try:
            rss = [int(must(c.run(RSS)).stdout) / 1024 for c in copies]
            figures["rss_copy_mb"] = statistics.median(rss)
        finally:
            for c in copies:
                c.close()
    finally:
        s.close()
    figures["restore"], (r, _) = timed(lambda: sb.restore(path, key))
    with r:
        must(r.run("assert total() > 0"))
    return figures


def kept_round(sb):
    s = sb.session()
    try:
        must(s.run(SETUP))
        pause, _ = timed(s.pause)
        resume, _ = timed(s.resume)
        must(s.run("assert total() > 0"))
        return {"kpause": pause, "kresume": resume}
    finally:
        s.close()


def main():
    args = sys.argv[1:]
    rounds = int(args.pop(0)) if args and args[0].isdigit() else 3
    tiers = args or ["process", "container"]
    key = agentjail.CheckpointKey(os.urandom(32))
    print(f"checkpoints: pandas and a 50 MB DataFrame, {rounds} rounds, medians (ms)")
    print(f"{'tier':10} {'build':>8} {'ckpt':>8} {'MB':>6} {'restore':>8} {'ratio':>6} "
          f"{'pause':>8} {'resume':>8} {'fork x4':>8} {'rss/copy':>9} {'kpause':>8} "
          f"{'kresume':>8}")
    for tier in tiers:
        with tempfile.TemporaryDirectory() as d, sandbox(tier) as sb:
            path = os.path.join(d, "bench.ckpt")
            one_round(sb, key, path)  # warm the image's pages and the caches
            runs = [one_round(sb, key, path) for _ in range(rounds)]
        with sandbox(tier, keep=600) as kb:
            kept_round(kb)
            for r in runs:
                r.update(kept_round(kb))
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"{tier:10} {med['build']:8.0f} {med['checkpoint']:8.0f} {med['size_mb']:6.1f} "
              f"{med['restore']:8.0f} {med['restore'] / med['build']:6.2f} {med['pause']:8.0f} "
              f"{med['resume']:8.0f} {med['fork4']:8.0f} {med['rss_copy_mb']:8.0f}M "
              f"{med['kpause']:8.0f} {med['kresume']:8.1f}",
              flush=True)


if __name__ == "__main__":
    main()
