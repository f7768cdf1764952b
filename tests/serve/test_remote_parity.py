"""One suite, two targets: every test here runs against the local library
(agentjail.Sandbox, process tier) and against agentjail.connect() to a real
serve of the same tier and limits that the module starts. What the agent's
code sees is the same either way: results, sessions, files, commands,
background commands, terminals, streaming, background runs, asyncio, the
tool, and the errors' types (the remote ones are also ServeError). The
differences are the ones docs/python.md#remote lists, tested apart at the
end."""
import asyncio
import errno
import os
import sys

import pytest

from conftest import ROOT, SLOTS, UID_BASE, Server, left_behind

sys.path.insert(0, os.path.join(ROOT, "python"))
import agentjail  # noqa: E402

# The local target's runs take a uid range of their own just past serve's
# (UID_BASE .. + SLOTS, which conftest's autouse check watches), never a
# uid a sandbox of serve's may hold; local_left_behind watches it the same
# way.
LOCAL_UIDS = UID_BASE + SLOTS
LOCAL_SLOTS = 16
LIMITS = dict(timeout=10, cpu_sec=5)


@pytest.fixture(autouse=True)
def local_left_behind():
    yield
    assert left_behind(LOCAL_UIDS, LOCAL_SLOTS) == [], "a local run's process outlived its test"


@pytest.fixture(scope="module")
def served():
    s = Server("--timeout", "10", "--cpu", "5", "--concurrency", "4", "--session-idle", "120")
    yield s
    assert s.stop() == 0


@pytest.fixture(params=["local", "remote"])
def sb(request, served):
    if request.param == "local":
        box = agentjail.Sandbox(tier="process", uid_base=LOCAL_UIDS, slots=LOCAL_SLOTS,
                                state_dir=f"/run/agentjail-parity-{LOCAL_UIDS}", **LIMITS)
    else:
        box = agentjail.connect(served.url, served.key)
    yield box
    box.close()


@pytest.fixture
def session(sb):
    s = sb.session()
    yield s
    s.close()


def test_a_run_prints_and_ends(sb):
    ex = sb.run("print(6 * 7)")
    assert (ex.status, ex.exit_code, ex.stdout, ex.stderr) == ("ok", 0, "42\n", "")
    assert ex.tier == "process"


def test_a_failing_program_is_a_result_not_an_exception(sb):
    ex = sb.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
    assert (ex.status, ex.exit_code, ex.stdout, ex.stderr) == ("error", 3, "out\n", "err\n")
    ex = sb.run("raise ValueError('boom')")
    assert ex.status == "error" and "ValueError: boom" in ex.stderr


def test_a_call_deadline_ends_the_run_with_timeout(sb):
    ex = sb.run("while True: pass", timeout=1)
    assert ex.status == "timeout"


def test_output_reaches_the_callback_before_the_run_ends(sb):
    seen = []
    # The program waits for nothing: each line goes out as it is printed,
    # and the callback has the first before the run's end is known.
    ex = sb.run("import sys\nfor i in range(3):\n    print(i, flush=True)",
                on_stdout=seen.append)
    assert "".join(seen) == "0\n1\n2\n" == ex.stdout


def test_a_stream_yields_events_then_the_execution(sb):
    with sb.stream("print('a', flush=True)\nprint('b')") as events:
        items = list(events)
    assert isinstance(items[-1], agentjail.Execution) and items[-1].stdout == "a\nb\n"
    assert "".join(e.text for e in items[:-1] if isinstance(e, agentjail.OutputEvent)) \
        == "a\nb\n"


def test_a_submitted_run_is_waited_for(sb):
    h = sb.submit("print('later')")
    assert h.wait(timeout=60).stdout == "later\n"
    evs = list(h.events())
    assert evs[-1].stdout == "later\n"


def test_asyncio_run_and_stream(sb):
    async def go():
        ex = await sb.arun("print('async')")
        async with sb.astream("print('as')") as events:
            items = [e async for e in events]
        return ex, items
    ex, items = asyncio.run(go())
    assert ex.stdout == "async\n" and items[-1].stdout == "as\n"


def test_javascript_runs_too(sb):
    ex = sb.run("console.log(6 * 7)", language="javascript")
    assert (ex.status, ex.stdout) == ("ok", "42\n")


def test_a_session_keeps_state_and_files(session):
    session.run("x = 21")
    assert session.run("print(x * 2)").stdout == "42\n"
    session.put_file("data/a.txt", "hello")
    assert session.get_file("data/a.txt") == b"hello"
    assert [(f.name, f.type, f.size) for f in session.list_files("data")] == \
        [("a.txt", "file", 5)]
    assert session.run("print(open('data/a.txt').read())").stdout == "hello\n"


def test_a_session_call_makes_a_chart(session):
    ex = session.run("import matplotlib\nmatplotlib.use('Agg')\n"
                     "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])")
    assert ex.status == "ok", ex.stderr
    assert [im.mime for im in ex.images] == ["image/png"]
    assert ex.images[0].data.startswith(b"\x89PNG")


def test_file_errors_are_file_transfer_errors(session):
    with pytest.raises(agentjail.FileTransferError) as e:
        session.get_file("missing.txt")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(agentjail.FileTransferError) as e:
        session.put_file("../escape.txt", b"x")
    assert e.value.errno == errno.EACCES


def test_exec_runs_commands_in_the_session(session):
    session.put_file("sub/f.txt", "x")
    ex = session.exec("echo out; echo err >&2; exit 4")
    assert (ex.status, ex.exit_code, ex.stdout, ex.stderr) == ("error", 4, "out\n", "err\n")
    assert session.exec(["ls"], cwd="sub").stdout == "f.txt\n"
    assert session.exec("cat", stdin="fed").stdout == "fed"
    assert session.exec("echo $GREETING", env={"GREETING": "hi"}).stdout == "hi\n"
    seen = []
    session.exec("echo streamed", on_stdout=seen.append)
    assert "".join(seen) == "streamed\n"
    with pytest.raises(agentjail.InvalidCommand):
        session.exec("true", cwd="../..")


def test_background_commands(session):
    p = session.spawn("read line; echo got $line", keep_stdin=True)
    assert (p.pid, True) in [(pid, running) for pid, _, running in session.processes()]
    p.send_stdin("one\n")
    p.close_stdin()
    seen = []
    ex = p.wait(on_stdout=seen.append)
    assert ex.stdout == "got one\n" == "".join(seen)
    q = session.spawn("sleep 60")
    q.kill()
    assert q.wait().status == "killed"
    with pytest.raises(agentjail.ProcessError) as e:
        session.process(999999).kill()
    assert e.value.errno == errno.ESRCH


def test_a_terminal_echoes_and_resizes(session):
    t = session.pty(80, 24, ["/bin/sh"])
    t.resize(100, 30)
    t.send_stdin("stty size; exit\n")
    ex = t.wait()
    assert "30 100" in ex.stdout


def test_a_closed_session_says_so(sb):
    s = sb.session()
    s.run("x = 1")
    s.close()
    with pytest.raises(agentjail.SessionClosed):
        s.run("print(x)")
    s.close()  # twice is fine


def test_egress_cannot_be_widened(session):
    with pytest.raises(agentjail.EgressError):
        session.egress_keep(hosts=["example.com:443"])


def test_the_tool_runs_and_answers_in_the_same_words(sb):
    tool = sb.tool()
    assert tool.name == "run_python" and "code" in tool.parameters["properties"]
    r = tool.call({"code": "print(6 * 7)"})
    assert not r.is_error and r.text.startswith("status: ok (exit code 0)")
    assert "--- stdout ---\n42\n" in r.text
    r = tool.call('{"code": 7}')
    assert r.is_error and r.execution is None
    assert r.text == ("Invalid arguments for run_python: 'code' must be a string holding "
                      "the Python program")
    anth = tool.handle_anthropic({"type": "tool_use", "id": "t1", "name": "run_python",
                                  "input": {"code": "print(1)"}})
    assert anth["tool_use_id"] == "t1" and anth["is_error"] is False


def test_a_session_tool_keeps_state(sb):
    with sb.tool(session=True) as tool:
        tool.call({"code": "y = 5"})
        assert "--- stdout ---\n5\n" in tool.call({"code": "print(y)"}).text
        assert "session" in tool.description


def test_pause_resume_and_fork_keep_the_state(session):
    session.run("x = [1]\ndef f():\n    return sum(x)")
    info = session.pause()
    assert isinstance(info, agentjail.CheckpointInfo) and info.note == ""
    with pytest.raises(agentjail.CheckpointError) as e:
        session.pause()
    assert e.value.errno == errno.EALREADY
    assert session.run("x.append(2)\nprint(f())").stdout == "3\n"  # resumed by the call
    session.pause()
    session.resume()
    copies = session.fork(2)
    try:
        for i, c in enumerate(copies):
            assert c.run(f"x.append({i})\nprint(f())").stdout == f"{3 + i}\n"
        assert session.run("print(x)").stdout == "[1, 2]\n"
    finally:
        for c in copies:
            c.close()
    with pytest.raises(agentjail.ConfigError):
        session.fork(0)


def test_a_notebook_cell_keeps_its_value_and_contexts_apart(session):
    session.run("x = 41")
    ex = session.cell("x + 1")
    assert (ex.stdout, ex.value, ex.value_html) == ("", "42", None)
    assert session.cell("print('p')\nNone").value is None
    # A context of its own: x is not there; fresh forgets what it set.
    assert session.cell("x = 'c'\nx", context="ctx").value == "'c'"
    assert session.cell("x").value == "41"
    ex = session.cell("x", context="ctx", fresh=True)
    assert ex.status == "error" and "NameError" in ex.stderr
    seen = []
    assert session.cell("print('s', flush=True)\n7", on_stdout=seen.append).value == "7"
    assert "".join(seen) == "s\n"
    with pytest.raises(agentjail.ConfigError, match="context"):
        session.cell("1", context="no such/name")
    with pytest.raises(agentjail.ConfigError):
        session.cell("1", language="javascript")  # a value apart is Python's only
