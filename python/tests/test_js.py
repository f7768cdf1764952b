"""JavaScript through the binding: Session.run and Sandbox.run with
language="javascript" (the C suites run the contract on every tier,
tests/js_cases.h; this checks the binding's argument, its errors and
streaming)."""
import pytest

from agentjail import SandboxError, Status


@pytest.fixture
def session(sandbox_for):
    s = sandbox_for("process").session()
    yield s
    s.close()


def test_state_across_calls(session):
    assert session.run("let x = 41\nfunction inc(v) { return v + 1 }",
                       language="javascript").stdout == ""
    ex = session.run("inc(x)", language="js")
    assert ex.ok and ex.stdout == "42\n"
    ex = session.run("throw new Error('boom')", language="javascript")
    assert (ex.status, ex.exit_code) == (Status.ERROR, 1) and "Error: boom" in ex.stderr
    assert session.run("x").status == Status.ERROR  # Python has no x
    assert session.run("x", language="javascript").stdout == "41\n"


def test_streams_and_await(session):
    seen = []
    ex = session.run("console.log('a'); await new Promise(r => setTimeout(r, 10)); "
                     "console.log('b')", language="javascript", on_stdout=seen.append)
    assert ex.ok and ex.stdout == "a\nb\n" and "".join(seen) == "a\nb\n"


def test_one_shot_run(sb):
    ex = sb.run("console.log(6 * 7); process.exitCode = 2", language="javascript")
    assert (ex.status, ex.exit_code, ex.stdout) == (Status.ERROR, 2, "42\n")
    assert sb.run("print(1)").stdout == "1\n"  # Python stays the default


@pytest.mark.parametrize("bad", ["ruby", "", None, 1])
def test_bad_language_is_named(session, sb, bad):
    for owner in (session, sb):
        with pytest.raises(ValueError, match="'python'.*'javascript' or 'js'.*'typescript' or 'ts'"):
            owner.run("1", language=bad)


def test_typescript(session, sb):
    """TypeScript: its types stripped (not checked), in the session's node
    beside JavaScript's state; one-shot too."""
    try:
        ex = session.run("let n: number = 20\nfunction twice<T extends number>(v: T): number "
                         "{ return v * 2 }", language="typescript")
    except SandboxError as e:
        assert str(e) == ("typescript: this sandbox's image has no TypeScript compiler "
                          "(Debian package node-typescript)")
        return
    assert ex.ok and ex.stdout == ""
    assert session.run("twice(n) + 2", language="js").stdout == "42\n"
    ex = session.run("let bad: = 1", language="ts")
    assert (ex.status, ex.exit_code) == (Status.ERROR, 1)
    assert ".ts:1:10 - error TS1110: Type expected." in ex.stderr
    ex = sb.run("const s: string = 'typed'; console.log(s)", language="typescript")
    assert (ex.status, ex.stdout) == (Status.OK, "typed\n")
