"""What every test of the binding shares: the package from this source tree,
the test images `make test` builds, a uid range and lock directory of the
suite's own, and after every test the host's check that the run left
nothing behind (no process of the sandbox uids, no mount, no cgroup)."""
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
# The images `make test` builds (--from-host): "test", and "test-ds" with
# numpy, pandas and matplotlib.
os.environ.setdefault("AGENTJAIL_IMAGES", os.path.join(ROOT, "build", "images"))

import agentjail  # noqa: E402

# The C suites take 2100000000 (or $AJ_TEST_UID_BASE); this one a range of
# its own, so a leftover is always this suite's.
UID_BASE = int(os.environ.get("AJ_PYTEST_UID_BASE", "2110000000"))
SLOTS = 64
STATE_DIR = f"/run/agentjail-pytest-{UID_BASE}"
TIERS = ["process", "container", "microvm", "docker", "gvisor"]
# The tiers with a warm mode, as "TIER-warm": sandbox_for opens TIER with
# warm=True (each run a fork of a zygote).
WARM_TIERS = ["process-warm", "container-warm"]


def tier_options(tier, **extra):
    """Sandbox keyword arguments for a tier in this suite."""
    opts = dict(uid_base=UID_BASE, slots=SLOTS, state_dir=STATE_DIR, timeout=10, cpu_sec=5)
    if tier in ("container", "microvm", "gvisor"):
        opts["image"] = "test"
    if tier == "docker":
        opts["docker_image"] = "agentjail/test"
    opts.update(extra)
    return opts


@pytest.fixture
def sandbox_for():
    """sandbox_for(tier, **limits) -> an open Sandbox, closed after the test."""
    made = []

    def make(tier="process", **extra):
        if tier.endswith("-warm"):
            tier = tier[: -len("-warm")]
            extra.setdefault("warm", True)
        sb = agentjail.Sandbox(tier=tier, **tier_options(tier, **extra))
        made.append(sb)
        return sb
    yield make
    for sb in made:
        sb.close()


@pytest.fixture
def sb(sandbox_for):
    return sandbox_for("process")


def processes_with_uids(lo, hi):
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if lo <= int(line.split()[1]) < hi:
                            n += 1
                        break
        except OSError:
            pass
    return n


def mounts():
    with open("/proc/self/mountinfo") as f:
        # The engine's own overlays come and go with its containers.
        return {" ".join(line.split()[3:]) for line in f
                if " /var/lib/docker/" not in line and " /run/docker/" not in line}


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("PPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def zygotes():
    """This process's warm-mode zygotes (their command line says so; their
    parent is their sandbox's init, whose parent is this process)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read(200)
        except OSError:
            continue
        if b"# The agentjail zygote" in cmd and parent_of(parent_of(pid)) == os.getpid():
            n += 1
    return n


def run_cgroups():
    mine = f"run-{os.getpid()}-"
    n = 0
    for parent in ("/sys/fs/cgroup/agentjail", "/sys/fs/cgroup/memory/agentjail",
                   "/sys/fs/cgroup/pids/agentjail", "/sys/fs/cgroup/cpu/agentjail"):
        try:
            n += sum(1 for d in os.listdir(parent) if d.startswith(mine))
        except OSError:
            pass
    return n


@pytest.fixture(autouse=True)
def leaves_nothing_behind():
    before = mounts()
    yield
    # A VM's QEMU ends a moment after its run returns: a grace of up to
    # 30 s, which only a process really left behind outlasts on a busy
    # machine.
    left = 0
    for _ in range(300):
        left = processes_with_uids(UID_BASE, UID_BASE + SLOTS)
        if not left:
            break
        time.sleep(0.1)
    assert left == 0, f"{left} process(es) of the sandbox uids left behind"
    assert mounts() == before, "the host's mount table changed"
    assert run_cgroups() == 0, "a run's cgroup was left behind"
    left = 0
    for _ in range(300):
        left = zygotes()
        if not left:
            break
        time.sleep(0.1)
    assert left == 0, f"{left} warm-mode zygote process(es) left behind"
    # gVisor's runsc, gofer and sentry are not the sandbox uid's: their
    # run directories (named in their command lines) must be gone too.
    gvisor_runs = STATE_DIR + "-gvisor"
    left = os.listdir(gvisor_runs) if os.path.isdir(gvisor_runs) else []
    assert not left, f"gvisor run directories left behind: {left}"
