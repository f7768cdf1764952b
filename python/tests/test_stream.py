"""Output as it happens (docs/python.md, "Output as it happens"): run()'s
callbacks, stream(), submit() and the asyncio forms, on both bindings.

"Before the end" is shown by order, never by a clock: the program prints,
then waits at a gate (a host directory shown read-only at /mnt/gate) that
only the test's callback opens. Output held until the run's end would come
after the program gave up waiting, and the program says so."""
import asyncio
import json
import os
import re
import subprocess
import sys
import threading

import pytest

import agentjail
from agentjail import OutputEvent, Status
from conftest import ROOT, tier_options
from gate import GATE


@pytest.fixture
def gated(sandbox_for, tmp_path):
    """(sandbox, open_gate): a process-tier sandbox that shows tmp_path at
    /mnt/gate, and the call that opens the gate."""
    tmp_path.chmod(0o755)
    sb = sandbox_for("process", ro_bind=f"{tmp_path}:/mnt/gate")

    def open_gate():
        (tmp_path / "go").touch()
    return sb, open_gate


def test_callbacks_get_the_output_before_the_run_ends(gated):
    sb, open_gate = gated
    out, err, returned = [], [], [False]

    def on_stdout(text):
        if not out:
            # run() has not returned: the program is still at its gate.
            assert not returned[0]
            open_gate()
        out.append(text)

    ex = sb.run(GATE + "print('first', flush=True)\nprint(gate())\n"
                "print('to err', file=sys.stderr)\n",
                on_stdout=on_stdout, on_stderr=err.append)
    returned[0] = True
    assert ex.status is Status.OK
    assert "".join(out) == ex.stdout == "first\nsaw the gate\n"
    assert "".join(err) == ex.stderr == "to err\n"


def test_a_character_split_between_chunks_comes_whole(gated):
    sb, open_gate = gated
    chunks = []

    def on_stdout(text):
        chunks.append(text)
        open_gate()

    # b"caf\xc3" goes out alone (the program waits for the gate), then
    # b"\xa9\n": one character in two reads.
    ex = sb.run(GATE + "sys.stdout.buffer.write(b'caf\\xc3'); sys.stdout.flush()\n"
                "gate()\nsys.stdout.buffer.write(b'\\xa9\\n')\n", on_stdout=on_stdout)
    assert ex.stdout_bytes == "café\n".encode()
    assert chunks == ["caf", "é\n"]


def test_a_cut_character_ends_as_a_replacement():
    # Not a run: the decoder's end, which a run ends with.
    from agentjail._listen import Listener
    got = []
    listener = Listener(got.append)
    listener._decoders["stdout"].decode(b"ok\xe2\x82")
    listener.end()
    assert got == [OutputEvent("stdout", "\ufffd", 1)]


def test_a_callback_that_raises_is_raised_after_the_run(sb):
    calls, err = [], []

    def on_stdout(text):
        calls.append(text)
        raise ValueError("the caller's bug")

    with pytest.raises(ValueError, match="the caller's bug"):
        sb.run("import sys, time\nprint('a', flush=True)\ntime.sleep(0.2)\nprint('b')\n"
               "print('e', file=sys.stderr)\n", on_stdout=on_stdout, on_stderr=err.append)
    assert len(calls) == 1 and calls[0].startswith("a")  # not called again
    assert "".join(err) == "e\n"  # the others still are
    assert sb.run("print(1)").stdout == "1\n"


def test_a_callback_must_be_callable(sb):
    with pytest.raises(TypeError, match="on_stdout must be callable"):
        sb.run("print(1)", on_stdout="print")


def test_stream_yields_events_then_the_execution(gated):
    sb, open_gate = gated
    items = []
    with sb.stream(GATE + "print('first', flush=True)\nprint(gate())\n") as events:
        for ev in events:
            if not items:
                open_gate()
            items.append(ev)
    ex = items[-1]
    assert isinstance(ex, agentjail.Execution) and ex.ok
    assert all(isinstance(e, OutputEvent) for e in items[:-1])
    assert [e.id for e in items[:-1]] == list(range(1, len(items)))
    assert "".join(e.text for e in items[:-1]) == ex.stdout == "first\nsaw the gate\n"


def test_closing_a_stream_early_cancels_the_run(sb):
    events = sb.stream("import time\nfor i in range(10**6):\n"
                       "    print(i, flush=True)\n    time.sleep(0.01)\n")
    first = next(events)
    assert isinstance(first, OutputEvent) and first.text.startswith("0")
    events.close()
    assert not events._thread.is_alive()
    with pytest.raises(StopIteration):
        next(events)
    # The sandbox runs on; the fixture checks nothing was left behind.
    assert sb.run("print(2)").stdout == "2\n"


def held_back(sandbox_for):
    """(sandbox, stream) once the stream's queue is full: nobody reads, so
    the queue fills to its bound, then the library's buffer, then the
    program waits in write(). 12 MiB is more than all of them hold (64
    events of at most one 64 KiB read, 1 MiB), so the program cannot end
    on its own."""
    sb = sandbox_for("process", output_kb=16384, timeout=120, cpu_sec=60)
    events = sb.stream("import sys\nfor i in range(12 * 1024):\n"
                       "    sys.stdout.write('x' * 1023 + '\\n'); sys.stdout.flush()\n")
    for _ in range(1200):  # waits for a state, asserts no time
        if events._queue.full():
            break
        threading.Event().wait(0.05)
    assert events._queue.full() and events._thread.is_alive()
    return sb, events


def test_a_stream_not_read_holds_the_program_back(sandbox_for):
    sb, events = held_back(sandbox_for)
    events._run.cancel()
    items = list(events)
    assert items[-1].status is Status.KILLED  # cancelled: it had not ended
    assert len(items[-1].stdout_bytes) < 12 * 1024 * 1024


def test_closing_the_sandbox_ends_a_stream_nobody_reads(sandbox_for):
    # close() waits for the runs in progress; one held back by a consumer
    # that stopped reading is cancelled and ends, rather than waiting for
    # that consumer for ever.
    sb, events = held_back(sandbox_for)
    sb.close()
    assert list(events)[-1].status is Status.KILLED


def test_session_callbacks_and_images(sandbox_for):
    sb = sandbox_for("process")
    images, out = [], []
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
    with sb.session() as s:
        s.run("x = 5")
        ex = s.run(f"import os\nos.makedirs('outputs', exist_ok=True)\n"
                   f"open('outputs/chart.png', 'wb').write({png!r})\nprint(x)\n",
                   on_stdout=out.append, on_image=lambda *a: images.append(a))
        assert ex.stdout == "5\n" and "".join(out) == "5\n"
        assert images == [(im.name, im.mime, im.data) for im in ex.images]
        assert images == [("outputs/chart.png", "image/png", png)]
        items = list(s.stream("print(x * 2)"))
        assert items[0].id == 1 and items[-1].stdout == "10\n"
        assert "".join(e.text for e in items[:-1]) == "10\n"


def test_submit_wait_events_and_cancel(gated):
    sb, open_gate = gated
    h = sb.submit(GATE + "print('first', flush=True)\nprint(gate())\n")
    assert re.fullmatch(r"[0-9a-f]{32}", h.id)
    events = h.events()
    first = next(events)
    assert first.id == 1 and first.text.startswith("first")
    assert not h.done()  # the program waits at its gate
    with pytest.raises(TimeoutError):
        h.wait(timeout=0.01)
    open_gate()
    rest = list(events)
    ex = h.wait()
    assert h.done() and rest[-1] is ex and ex.stdout == "first\nsaw the gate\n"
    assert "".join(e.text for e in [first] + rest[:-1]) == ex.stdout
    # From an id: the events after it, then the Execution.
    again = list(h.events(from_id=1))
    assert again == rest
    with pytest.raises(ValueError):
        list(h.events(from_id=-1))

    h = sb.submit("import time\nprint('go', flush=True)\ntime.sleep(60)\n")
    assert next(h.events()).text.startswith("go")
    h.cancel()
    ex = h.wait()
    assert ex.status is Status.KILLED


def test_close_waits_for_a_submitted_run(sandbox_for):
    sb = sandbox_for("process")
    h = sb.submit("import time\nprint('go', flush=True)\ntime.sleep(60)\n")
    next(h.events())
    sb.close()
    assert h.done() and h.wait().status is Status.KILLED


def test_arun_calls_back_on_the_loop(gated):
    sb, open_gate = gated

    async def main():
        loop_thread = threading.get_ident()
        seen = []

        def on_stdout(text):
            assert threading.get_ident() == loop_thread
            if not seen:
                open_gate()
            seen.append(text)
        ex = await sb.arun(GATE + "print('first', flush=True)\nprint(gate())\n",
                           on_stdout=on_stdout)
        return seen, ex
    seen, ex = asyncio.run(main())
    assert "".join(seen) == ex.stdout == "first\nsaw the gate\n"


def test_arun_raises_a_callbacks_exception_and_cancels_with_its_task(sb):
    async def raising():
        def bad(text):
            raise KeyError(text)
        await sb.arun("print('x')", on_stdout=bad)

    with pytest.raises(KeyError):
        asyncio.run(raising())

    async def cancelled():
        started = asyncio.Event()
        task = asyncio.ensure_future(sb.arun(
            "import time\nprint('go', flush=True)\ntime.sleep(60)\n",
            on_stdout=lambda t: started.set()))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(cancelled())


def test_astream_events_and_early_close(gated):
    sb, open_gate = gated

    async def main():
        items = []
        async with sb.astream(GATE + "print('first', flush=True)\nprint(gate())\n") as evs:
            async for ev in evs:
                if not items:
                    open_gate()
                items.append(ev)
        async with sb.astream("import time\nfor i in range(10**6):\n"
                              "    print(i, flush=True)\n    time.sleep(0.01)\n") as evs:
            async for ev in evs:
                first = ev
                break
        return items, first
    items, first = asyncio.run(main())
    assert items[-1].ok and "".join(e.text for e in items[:-1]) == "first\nsaw the gate\n"
    assert first.text.startswith("0")


CTYPES_SCRIPT = r'''
import json, os, sys
import agentjail
from agentjail import _native
opts, gate_dir = json.loads(sys.argv[1]), sys.argv[2]
out = {"binding": _native.BINDING}
GATE = sys.argv[3]
with agentjail.Sandbox(ro_bind=f"{gate_dir}:/mnt/gate", **opts) as sb:
    chunks = []
    def on_stdout(text):
        chunks.append(text)
        open(os.path.join(gate_dir, "go"), "w").close()
    ex = sb.run(GATE + "sys.stdout.buffer.write(b'caf\\xc3'); sys.stdout.flush()\n"
                "g = gate()\nsys.stdout.buffer.write(b'\\xa9\\n')\nprint(g)\n",
                on_stdout=on_stdout)
    out["chunks"], out["stdout"] = chunks, ex.stdout
    try:
        sb.run("print(1)", on_stdout=lambda t: 1 / 0)
    except ZeroDivisionError:
        out["raised"] = True
    s = sb.stream("import time\nwhile True:\n    print(1, flush=True); time.sleep(0.01)\n")
    out["first"] = next(s).text[:1]
    s.close()
    h = sb.submit("print('h')")
    items = list(h.events())
    out["handle"] = ["".join(e.text for e in items[:-1]), items[-1].status]
    with sb.session() as se:
        images = []
        se.run("import os\nos.makedirs('outputs', exist_ok=True)\n"
               "open('outputs/a.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(8))",
               on_image=lambda *a: images.append([a[0], a[1], a[2].hex()]))
        out["images"] = images
print(json.dumps(out))
'''


def test_callbacks_through_ctypes(tmp_path):
    tmp_path.chmod(0o755)
    env = dict(os.environ, AGENTJAIL_BINDING="ctypes", PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-c", CTYPES_SCRIPT, json.dumps(tier_options("process")),
                        str(tmp_path), GATE], capture_output=True, text=True, env=env, cwd="/")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["binding"] == "ctypes"
    assert out["chunks"][0] == "caf"
    assert "".join(out["chunks"]) == out["stdout"] == "café\nsaw the gate\n"
    assert out["raised"] is True
    assert out["first"] == "1"
    assert out["handle"] == ["h\n", "ok"]
    assert out["images"] == [["outputs/a.png", "image/png", "89504e470d0a1a0a" + "00" * 8]]
