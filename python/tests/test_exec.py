"""Session.exec through the binding: a command in the session's sandbox,
beside its cells (the C suites run the same contract on every tier; this
checks the binding's arguments, errors and streaming)."""
import errno

import pytest

from agentjail import InvalidCommand, ProcessError, Status, Terminal


@pytest.fixture(params=["process", "container"])
def session(request, sandbox_for):
    s = sandbox_for(request.param).session()
    yield s
    s.close()


def test_shell_and_argv(session):
    ex = session.exec("echo out; echo err >&2; exit 3")
    assert (ex.status, ex.exit_code, ex.stdout, ex.stderr) == (Status.ERROR, 3, "out\n", "err\n")
    ex = session.exec(["python3", "-c", "import sys; print(sys.argv[1:])", "a b", "$X"])
    assert ex.ok and ex.stdout == "['a b', '$X']\n"


def test_beside_the_cells(session):
    session.run("import os\nos.mkdir('d')\nstate = 'kept'")
    session.put_file("d/in.txt", "from-file\n")
    ex = session.exec('read l < in.txt; echo "$l $GREETING"; echo made > out.txt', cwd="d",
                      env={"GREETING": "hi"}, stdin=b"unused")
    assert ex.ok and ex.stdout == "from-file hi\n"
    assert session.get_file("d/out.txt") == b"made\n"
    assert session.run("print(state)").stdout == "kept\n"


def test_stdin_and_streaming(session):
    seen = []
    ex = session.exec(["python3", "-c", "import sys\nfor l in sys.stdin: print(l.upper(), end='')"],
                      stdin="a\nb\n", on_stdout=seen.append)
    assert ex.stdout == "A\nB\n" and "".join(seen) == "A\nB\n"


def test_timeout_keeps_the_session(session):
    session.run("x = 1")
    ex = session.exec("python3 -c 'import time; time.sleep(30)'", timeout=1)
    assert ex.status is Status.TIMEOUT and "1 s" in ex.message
    assert session.run("print(x)").stdout == "1\n"


@pytest.mark.parametrize("kwargs, word", [
    ({"command": "pwd", "cwd": ".."}, "'..'"),
    ({"command": "pwd", "cwd": "/etc"}, "outside the workspace"),
    ({"command": "true", "env": {"LD_PRELOAD": "x"}}, "LD_PRELOAD"),
    ({"command": "true", "timeout": 1000}, "timeout"),
])
def test_refusals_name_the_problem(sandbox_for, kwargs, word):
    with sandbox_for("process").session() as s:
        with pytest.raises(InvalidCommand) as e:
            s.exec(kwargs.pop("command"), **kwargs)
        assert word in str(e.value)
        with pytest.raises(TypeError):
            s.exec(42)
        with pytest.raises(TypeError):
            s.exec(["ok", 3])


def test_background_process(session):
    p = session.spawn("read x; echo got $x; echo e >&2; exit 3", keep_stdin=True)
    assert (p.pid, p.command, True) in session.processes()
    assert session.run("print('meanwhile')").stdout == "meanwhile\n"
    p.send_stdin("hi\n")
    p.close_stdin()
    ex = p.wait()
    assert (ex.exit_code, ex.stdout, ex.stderr) == (3, "got hi\n", "e\n")
    seen = []
    again = session.process(p.pid).wait(on_stdout=seen.append)  # re-attached by pid
    assert again.stdout == "got hi\n" and "".join(seen) == "got hi\n"
    q = session.spawn(["python3", "-c", "import time; time.sleep(60)"])
    q.kill(15)
    assert q.wait().status is Status.KILLED


def test_background_errors(sandbox_for):
    with sandbox_for("process").session() as s:
        with pytest.raises(ProcessError) as e:
            s.process(99999).kill()
        assert e.value.errno == errno.ESRCH
        p = s.spawn("true")
        p.wait()
        with pytest.raises(ProcessError) as e:
            p.send_stdin("late")
        assert e.value.errno == errno.EPIPE
        with pytest.raises(InvalidCommand):
            s.spawn("true", timeout=10 ** 7)


def test_terminal(session):
    """Session.pty: a terminal of the size asked that follows a resize,
    typed keys reach it, what it shows streams; its end is a result."""
    import threading

    shown, seen = [], threading.Event()

    def on_out(text):
        shown.append(text)
        if "ready" in "".join(shown):
            seen.set()

    t = session.pty(100, 30, "stty size; echo ready; read x; stty size; echo \"got-$x\"")
    assert t.pid in [p for p, _, _ in session.processes()]
    assert session.run("1").background == [t.pid]  # a call says what runs on
    result = []
    waiter = threading.Thread(target=lambda: result.append(t.wait(on_stdout=on_out)))
    waiter.start()
    assert seen.wait(60)  # only catches a terminal that never shows it
    t.resize(132, 43)
    t.send_stdin("hi\n")
    waiter.join(60)
    ex = result[0]
    assert ex.ok, ex.message
    assert "30 100\r\n" in ex.stdout and "43 132\r\n" in ex.stdout and "got-hi\r\n" in ex.stdout
    assert "".join(shown) == ex.stdout
    with pytest.raises(ValueError):
        t.resize(0, 24)
    plain = session.spawn("sleep 30")
    with pytest.raises(ProcessError) as e:  # a plain command has no terminal to resize
        Terminal(session, plain.pid).resize(80, 24)
    assert e.value.errno == errno.ENOTTY and "no terminal" in str(e.value)
    plain.kill()


def test_shell_as_a_language(sandbox_for):
    """language="bash" / "sh": a one-shot run whose program is the shell,
    and in a session the same line as its command."""
    sb = sandbox_for("process")
    ex = sb.run('echo "$0"; exit 3', language="bash")
    assert (ex.status, ex.exit_code, ex.stdout) == (Status.ERROR, 3, "/bin/bash\n")
    with sb.session() as s:
        s.run("open('f.txt', 'w').write('from a cell')")
        assert s.run("cat f.txt", language="sh").stdout == "from a cell"
    with pytest.raises(ValueError, match="'bash', 'sh' or 'shell'"):
        sb.run("true", language="zsh")


def test_env_allow_list(sandbox_for):
    """exec_env_allow: the only names a command's env may set."""
    import agentjail

    sb = sandbox_for("process", exec_env_allow=["GREETING", "APP_*"])
    with sb.session() as s:
        assert s.exec('echo "$GREETING $APP_X"', env={"GREETING": "hi", "APP_X": "x"}).stdout \
            == "hi x\n"
        with pytest.raises(InvalidCommand, match="OTHER is not among the names"):
            s.exec("true", env={"OTHER": "1"})
    with pytest.raises(agentjail.ConfigError, match="exec_env_allow: 'no-dash'"):
        sandbox_for("process", exec_env_allow=["no-dash"])
