"""Checkpoints, restores, forks and pauses through the binding: a pandas
DataFrame and an open matplotlib figure come back as they were, copies are
independent, a touched file is refused with a type of its own."""
import errno
import os

import pytest

from agentjail import (CheckpointError, CheckpointInfo, CheckpointKey, CheckpointRefused,
                       ConfigError)

SETUP = (
    "import pandas as pd, numpy as np\n"
    "import matplotlib.pyplot as plt\n"
    "df = pd.DataFrame({'a': np.arange(1000), 'b': np.arange(1000) * 0.5})\n"
    "fig, ax = plt.subplots()\n"
    "ax.plot(df.a[:10], df.b[:10])\n"
    "def total(col):\n"
    "    return float(df[col].sum())\n"
    "open('notes.txt', 'w').write('hello')\n"
)
CHECK = "print(total('b'), len(fig.axes), df.shape, open('notes.txt').read())"
WANT = "249750.0 1 (1000, 2) hello\n"


@pytest.fixture(params=["process", "container"])
def sandbox(request, sandbox_for):
    opts = {"image": "test-ds"} if request.param == "container" else {}
    return sandbox_for(request.param, **opts)


def test_checkpoint_and_restore(sandbox, tmp_path):
    key = CheckpointKey.load(tmp_path / "key", create=True)
    assert oct(os.stat(tmp_path / "key").st_mode & 0o777) == "0o600"
    with sandbox.session() as s:
        assert s.run(SETUP).ok
        info = s.checkpoint(tmp_path / "a.ckpt", key)
    assert isinstance(info, CheckpointInfo) and info.files >= 1 and info.note == ""
    restored, info = sandbox.restore(tmp_path / "a.ckpt", key)
    with restored:
        assert restored.run(CHECK).stdout == WANT
        # The function sees the restored session's own df.
        assert restored.run("df['b'] = 1.0\nprint(total('b'))").stdout == "1000.0\n"


def test_fork_and_pause(sandbox):
    with sandbox.session() as s:
        assert s.run(SETUP).ok
        copies = s.fork(2)
        try:
            for i, c in enumerate(copies):
                assert c.run(f"df['a'] += {i + 1}\nprint(int(df.a[0]))").stdout == f"{i + 1}\n"
            assert [c.run("print(int(df.a[0]))").stdout for c in copies] == ["1\n", "2\n"]
        finally:
            for c in copies:
                c.close()
        info = s.pause()
        assert s.paused and info.files >= 1
        assert s.run(CHECK).stdout == WANT and not s.paused
        with pytest.raises(ConfigError):
            s.fork(0)


def test_a_touched_checkpoint_is_refused(sandbox, tmp_path):
    key = CheckpointKey(os.urandom(32))
    with sandbox.session() as s:
        s.run("v = 1")
        s.checkpoint(tmp_path / "a.ckpt", key)
    data = bytearray((tmp_path / "a.ckpt").read_bytes())
    data[len(data) // 2] ^= 1
    (tmp_path / "b.ckpt").write_bytes(bytes(data))
    with pytest.raises(CheckpointRefused) as e:
        sandbox.restore(tmp_path / "b.ckpt", key)
    assert e.value.errno == errno.EBADMSG and isinstance(e.value, CheckpointError)
    with pytest.raises(CheckpointRefused):
        sandbox.restore(tmp_path / "a.ckpt", CheckpointKey(os.urandom(32)))
    with pytest.raises(CheckpointError) as e:
        sandbox.restore(tmp_path / "missing", key)
    assert e.value.errno == errno.ENOENT
    with pytest.raises(ValueError):
        CheckpointKey(b"short")
    assert "CheckpointKey" in repr(key) and key._bytes.hex() not in repr(key)


def test_pause_keep_sec_reaches_the_library(sandbox_for):
    """pause_keep_sec is the library's (its range checked there, so the
    field sits where the C struct has it); on the container tier a pause
    under it freezes the sandbox, and the resume finds a thread the state
    file could not have carried."""
    with pytest.raises(ConfigError) as e:
        sandbox_for("process", pause_keep_sec=-1)
    assert "pause-keep: -1 is out of range" in str(e.value)
    sb = sandbox_for("container", image="test-ds", pause_keep_sec=600)
    with sb.session() as s:
        assert s.run("import threading, time\n"
                     "threading.Thread(target=lambda: time.sleep(600), daemon=True).start()"
                     ).ok
        s.pause()
        assert s.paused
        assert s.run("print(threading.active_count())").stdout == "2\n"
