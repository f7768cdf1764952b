"""Sessions through the binding: state across calls, files in and out,
charts back as bytes, and the session's end as a typed error."""
import errno
import time

import pytest

from agentjail import (FileTransferError, SandboxUnavailable, SessionClosed, SessionLimitReached,
                       Status)


@pytest.fixture(params=["process", "container"])
def session(request, sandbox_for):
    s = sandbox_for(request.param).session()
    yield s
    s.close()


def test_state_persists(session):
    assert session.run("import math\nx = 41").ok
    ex = session.run("x + 1")  # the last expression is shown, as at a prompt
    assert ex.stdout == "42\n"
    assert session.run("print(math.pi > 3)").stdout == "True\n"
    assert len(session.id) == 32 and session.closed_reason is None


def test_files_in_and_out(session):
    session.put_file("data/in.csv", "a,b\n1,2\n")
    session.put_file("blob.bin", bytes(range(256)))
    ex = session.run("import os\n"
                     "rows = open('data/in.csv').read().split()\n"
                     "open('out.txt', 'w').write(str(len(rows)))\n"
                     "print(os.path.getsize('blob.bin'))\n")
    assert ex.stdout == "256\n"
    assert session.get_file("out.txt") == b"2"
    assert session.get_file("blob.bin") == bytes(range(256))
    names = {f.name: f for f in session.list_files()}
    assert names["data"].type == "directory"
    assert names["blob.bin"].type == "file" and names["blob.bin"].size == 256
    assert [f.name for f in session.list_files("data")] == ["in.csv"]


def test_file_errors_are_typed(session):
    with pytest.raises(FileTransferError) as e:
        session.get_file("missing.txt")
    assert e.value.errno == errno.ENOENT and isinstance(e.value, OSError)
    with pytest.raises(FileTransferError) as e:
        session.put_file("../escape", b"x")
    assert "escape" in str(e.value) or ".." in str(e.value)
    session.run("import os\nos.symlink('/etc/passwd', 'link')")
    with pytest.raises(FileTransferError):
        session.get_file("link")


def test_a_crash_loses_state_not_files(session):
    session.put_file("keep.txt", b"kept")
    session.run("y = 5")
    ex = session.run("import os\nos._exit(9)")
    assert ex.status is Status.ERROR and ex.exit_code == 9
    ex = session.run("print('y' in globals(), open('keep.txt').read())")
    assert ex.stdout == "False kept\n"
    assert "interpreter was restarted" in ex.message


def test_charts_come_back_as_bytes(sandbox_for):
    # The process tier runs the host's Python, which has Debian's matplotlib.
    # Its first import builds the font cache: seconds of CPU, more on a
    # busy machine than the suite's 10 s wall and 5 s CPU (it failed there).
    # These limits only catch a hang.
    with sandbox_for("process", timeout=120, cpu_sec=100, memory_mb=512).session() as s:
        ex = s.run("import matplotlib.pyplot as plt\n"
                   "plt.plot([1, 2, 3], [4, 1, 9])\n"
                   "plt.title('x')\n")
        assert ex.ok, ex.stderr
        assert len(ex.images) == 1
        im = ex.images[0]
        assert im.mime == "image/png" and im.data.startswith(b"\x89PNG\r\n\x1a\n")
        assert "figure" in im.name
        # Closed once returned: the next call brings no image back.
        assert s.run("print(1)").images == []


def test_idle_session_closes_with_its_reason(sandbox_for):
    s = sandbox_for("process", session_idle_sec=1).session()
    assert s.run("print(1)").ok
    deadline = time.monotonic() + 10
    while s.closed_reason is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "idle" in s.closed_reason
    with pytest.raises(SessionClosed) as e:
        s.run("print(1)")
    assert "idle" in e.value.reason
    with pytest.raises(SessionClosed):
        s.get_file("x")
    s.close()


def test_closed_session_refuses_calls(sb):
    s = sb.session()
    s.close()
    assert s.closed
    with pytest.raises(SessionClosed):
        s.run("print(1)")


def test_max_sessions_is_its_own_error_naming_the_cap(sandbox_for):
    """The cap on open sessions is not "this tier cannot run here"
    (SandboxUnavailable, which it once raised): a SessionLimitReached that
    names the cap, and closing one lets the next open."""
    sb = sandbox_for("process", max_sessions=1)
    first = sb.session()
    with pytest.raises(SessionLimitReached) as e:
        sb.session()
    assert not isinstance(e.value, SandboxUnavailable)
    assert e.value.limit == 1
    assert "1 sessions are open already" in str(e.value) and "max-sessions" in str(e.value)
    first.close()
    second = sb.session()
    assert second.run("print(2)").stdout == "2\n"
    second.close()
