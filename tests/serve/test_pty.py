"""A terminal over HTTP (issue 36): POST .../processes with "pty" starts a
command on a pseudo-terminal of the session's own; its screen is the
events route's stdout, keys go in by .../stdin, and .../resize changes its
size (the command sees SIGWINCH and the new size). A browser terminal is
these three: an EventSource for output, a POST a keystroke batch, a POST
on each resize. Another key's session (test_processes.py) is not there for
either route."""
import base64
import os

import pytest

from conftest import UID_BASE, Stream
from test_processes import events_until, open_session, output, proc, spawn


def keys(s, sid, pid, text, key="default"):
    r = proc(s, sid, pid, "/stdin", "POST", {"data": base64.b64encode(text).decode()}, key=key)
    assert r.code == 200, r.body


def test_a_terminal_shows_its_size_takes_keys_and_resizes(server):
    sid = open_session(server)
    line = "stty size; read x; stty size; echo got-$x"
    pid = spawn(server, sid, {"command": line, "pty": {"cols": 80, "rows": 24}})
    listed = server.request("GET", f"/v1/sessions/{sid}/processes").json()["processes"]
    assert {"pid": pid, "command": line, "running": True} in listed
    st = Stream(server, "GET", f"/v1/sessions/{sid}/processes/{pid}/events")
    first = events_until(st, lambda g: b"24 80" in output(g, "stdout"))
    assert b"24 80\r\n" in output(first, "stdout")  # a terminal's newline
    # It waits in read now: the resize lands before its second stty.
    r = proc(server, sid, pid, "/resize", "POST", {"cols": 100, "rows": 30})
    assert r.code == 200 and r.json() == {"pid": pid, "cols": 100, "rows": 30}, r.body
    keys(server, sid, pid, b"hi\n")
    rest = list(st.events())
    st.close()
    shown = output(first + rest, "stdout")
    assert b"30 100\r\n" in shown and b"got-hi\r\n" in shown, shown
    assert rest[-1].event == "result" and rest[-1].data["status"] == "ok", rest[-1].data
    # Its events' ids count the bytes it showed, as any command's do.
    assert rest[-2].id == f"{len(shown)}-0"
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_no_command_is_a_shell_on_a_pts(server):
    sid = open_session(server)
    pid = spawn(server, sid, {"pty": {"cols": 80, "rows": 24}})
    listed = server.request("GET", f"/v1/sessions/{sid}/processes").json()["processes"]
    assert {"pid": pid, "command": "/bin/bash", "running": True} in listed
    keys(server, sid, pid, b"tty; exit 3\n")
    st = Stream(server, "GET", f"/v1/sessions/{sid}/processes/{pid}/events")
    got = list(st.events())
    st.close()
    assert b"/dev/pts/" in output(got, "stdout"), output(got, "stdout")
    assert got[-1].event == "result" and got[-1].data["exit_code"] == 3, got[-1].data
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_resize_and_terminal_bodies_are_checked_naming_why(server):
    sid = open_session(server)
    plain = spawn(server, sid, {"command": "sleep 100"})
    r = proc(server, sid, plain, "/resize", "POST", {"cols": 80, "rows": 24})
    assert r.code == 409 and r.json()["error"]["code"] == "not_a_terminal", r.body
    assert f"process {plain} has no terminal" in r.json()["error"]["message"]
    pid = spawn(server, sid, {"command": "sleep 100", "pty": {"cols": 80, "rows": 24}})
    for body, words in (({"cols": 0, "rows": 24}, "a terminal of 0 columns and 24 rows"),
                        ({"cols": 80, "rows": 5000}, "each must be 1 to 4096"),
                        ({"cols": 80}, "rows: expected a whole number from 1 to 4096"),
                        ({"cols": "80", "rows": 24}, "cols: expected a whole number"),
                        ({"cols": 80, "rows": 70000}, "rows: expected a whole number"),
                        ({"cols": 80, "rows": 24, "x": 1}, "unknown field 'x'")):
        r = proc(server, sid, pid, "/resize", "POST", body)
        assert r.code == 400 and words in r.json()["error"]["message"], (body, r.body)
    assert proc(server, sid, 999999, "/resize", "POST", {"cols": 8, "rows": 8}).code == 404
    assert proc(server, sid, pid, "/resize", method="GET").code == 405
    spawns = [({"command": "true", "pty": {"cols": 0, "rows": 1}}, "pty: a terminal of 0 columns"),
              ({"command": "true", "pty": {"cols": 80, "rows": 24}, "stdin": True},
               "stdin: does not go with \"pty\""),
              ({"command": "true", "pty": {"cols": 80, "rows": 24}, "stdin": "eA=="},
               "stdin: does not go with \"pty\""),
              ({"command": "true", "pty": [80, 24]}, "pty: expected {\"cols\": C"),
              ({"command": "true", "pty": {"cols": 80, "rows": 24, "term": "x"}},
               "pty: unknown field 'term'"),
              ({"command": "pwd", "cwd": "..", "pty": {"cols": 80, "rows": 24}}, "cwd: ")]
    for body, words in spawns:
        r = server.request("POST", f"/v1/sessions/{sid}/processes", body)
        assert r.code == 400 and words in r.json()["error"]["message"], (body, r.body)
    assert proc(server, sid, pid).json()["running"] is True  # nothing of them touched it
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_a_window_that_moved_on_keeps_the_ids_true(start):
    # A terminal keeps its last --output KiB: a reader from the start gets
    # the window, under ids that count every byte it showed, and a comment
    # saying what is gone.
    s = start("--output", "16")
    sid = open_session(s)
    total = 100000
    pid = spawn(s, sid, {"command": f"head -c {total} /dev/zero | tr '\\0' a",
                         "pty": {"cols": 80, "rows": 24}})
    assert proc(s, sid, pid, "?wait=60").json()["running"] is False
    st = Stream(s, "GET", f"/v1/sessions/{sid}/processes/{pid}/events")
    got = list(st.events())
    st.close()
    shown = output(got, "stdout")
    assert 0 < len(shown) <= 16 * 1024 and set(shown) == {ord("a")}, len(shown)
    last = [e for e in got if e.event == "stdout"][-1]
    assert last.id == f"{total}-0", last.id
    assert any(f"stdout 0 to {total - len(shown)} is gone" in c for c in st.comments), \
        st.comments
    # A place inside what is gone reads on from the window, once.
    st = Stream(s, "GET", f"/v1/sessions/{sid}/processes/{pid}/events?after=5-0")
    again = list(st.events())
    st.close()
    assert output(again, "stdout") == shown and again[-1].event == "result"
    s.request("DELETE", f"/v1/sessions/{sid}")


@pytest.mark.skipif(os.environ.get("AJ_SERVE_DOCKER") != "1",
                    reason="starts a Docker container (the host's mount table changes under "
                           "other suites): AJ_SERVE_DOCKER=1 to run it")
def test_the_docker_tier_says_it_offers_no_terminal(start):
    # The engine takes uids below 2^31: the same slots, folded under it.
    s = start("--tier", "docker", "--uid-base", str(UID_BASE % 2**31))
    sid = open_session(s)
    r = s.request("POST", f"/v1/sessions/{sid}/processes", {"pty": {"cols": 80, "rows": 24}})
    assert r.code == 501 and r.json()["error"]["code"] == "not_supported", r.body
    assert "the docker tier offers no terminal" in r.json()["error"]["message"]
    s.request("DELETE", f"/v1/sessions/{sid}")
