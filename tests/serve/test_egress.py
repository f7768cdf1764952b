"""Egress through agentjail serve: a request may only narrow the deployer's
rules (one it lacks is 400 naming it), a session drops rules at run time,
the answer carries the proxy's decision log, and /metrics counts the
decisions; the same through workers on Redis. Traffic goes only to a
loopback HTTP server this file starts."""
import os
import socket
import sys

import pytest

from conftest import ROOT, wait_for
from test_queue import Redis, Worker

sys.path.insert(0, os.path.join(ROOT, "tests"))
import loopback_http  # noqa: E402


@pytest.fixture(scope="module")
def port():
    """A loopback HTTP server: its port."""
    with loopback_http.serving() as p:
        yield p


def fetch(port):
    """A program that says whether it reached the server."""
    return ("import urllib.request\n"
            "try:\n"
            f"    urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5).read()\n"
            "    print('reached')\n"
            "except Exception:\n"
            "    print('refused')\n")


def rules(port):
    return ["--allow-cidr", f"127.0.0.1/32:{port}", "--allow-cidr", "10.9.0.0/16:80",
            "--allow-host", "pypi.org:443"]


def test_a_request_can_never_widen(start, port):
    s = start("--timeout", "5", *rules(port))
    for body, words in [
        ({"allow_cidrs": ["10.0.0.0/8"]}, "allow_cidrs: '10.0.0.0/8' is not one of"),
        # A rule is matched as written: the same port list in another
        # order, or a wider pattern, is not the deployer's.
        ({"allow_hosts": ["*.pypi.org:443"]}, "allow_hosts: '*.pypi.org:443' is not one of"),
        ({"allow_hosts": ["pypi.org"]}, "allow_hosts: 'pypi.org' is not one of"),
        ({"allow_cidrs": f"127.0.0.1/32:{port}"}, "allow_cidrs: must be an array"),
        ({"allow_hosts": [3]}, "allow_hosts: item 1 is not a string"),
    ]:
        for path, extra in [("/v1/runs", {"code": "print(1)"}), ("/v1/sessions", {})]:
            r = s.request("POST", path, dict(body, **extra))
            assert r.code == 400, (path, body, r.body)
            err = r.json()["error"]
            assert err["code"] == "bad_egress"
            assert words in err["message"]
            assert "never add" in err["message"] or "must be" in err["message"] \
                or "not a string" in err["message"]


def test_a_narrowed_run_keeps_only_what_it_named(start, port):
    s = start("--timeout", "5", *rules(port))
    r = s.request("POST", "/v1/runs", {"code": fetch(port)})
    assert r.code == 200
    body = r.json()
    assert body["stdout"] == "reached\n"
    assert body["egress"]["allowed"] == 1
    assert body["egress"]["connections"][0]["port"] == port

    r = s.request("POST", "/v1/runs", {"code": fetch(port),
                                       "allow_cidrs": [f"127.0.0.1/32:{port}"],
                                       "allow_hosts": []})
    assert r.code == 200
    assert r.json()["stdout"] == "reached\n"

    # The server's rule dropped: the same program no longer reaches it.
    r = s.request("POST", "/v1/runs", {"code": fetch(port), "allow_cidrs": ["10.9.0.0/16:80"]})
    assert r.code == 200
    body = r.json()
    assert body["stdout"] == "refused\n"
    assert body["egress"]["allowed"] == 0


def closed_port():
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_metrics_count_the_decisions(start, port):
    # A rule for a port nothing listens on: allowed by the rules, refused
    # by the destination, counted as failed, never as denied.
    closed = closed_port()
    s = start("--timeout", "5", *rules(port), "--allow-cidr", f"127.0.0.1/32:{closed}")
    allowed = 'agentjail_egress_connections_total{verdict="allowed"}'
    denied = 'agentjail_egress_connections_total{verdict="denied"}'
    failed = 'agentjail_egress_connections_total{verdict="failed"}'
    m = s.metrics()
    assert (m[allowed], m[denied], m[failed]) == (0, 0, 0)
    code = fetch(port) + fetch(1) + fetch(closed)
    r = s.request("POST", "/v1/runs", {"code": code})
    assert r.json()["stdout"] == "reached\nrefused\nrefused\n"
    log = r.json()["egress"]
    assert (log["allowed"], log["denied"], log["failed"]) == (1, 1, 1)
    gone = [c for c in log["connections"] if c["port"] == closed][0]
    assert (gone["allowed"], gone["verdict"], gone["failure"]) == (True, "failed", "ECONNREFUSED")
    m = s.metrics()
    assert (m[allowed], m[denied], m[failed]) == (1, 1, 1)


def session_drops_its_rules(s, port):
    # Opened narrowed: of the deployer's three rules, only the server's.
    r = s.request("POST", "/v1/sessions",
                  {"allow_hosts": [], "allow_cidrs": [f"127.0.0.1/32:{port}"]})
    assert r.code == 201, r.body
    sid = r.json()["id"]
    run = lambda: s.request("POST", f"/v1/sessions/{sid}/runs", {"code": fetch(port)}).json()
    first = run()
    assert first["stdout"] == "reached\n", first
    # A session's call returns the decisions recorded by its end; a
    # connection still closing is in the next call's log, so only the log's
    # presence is certain here (a run's log is whole: its proxy stops first).
    assert isinstance(first["egress"]["connections"], list)
    # Adding a rule back, even the deployer's, is refused, named, and
    # changes nothing.
    r = s.request("POST", f"/v1/sessions/{sid}/egress",
                  {"allow_cidrs": [f"127.0.0.1/32:{port}", "10.9.0.0/16:80"]})
    assert r.code == 400
    assert r.json()["error"]["code"] == "bad_egress"
    assert "10.9.0.0/16:80" in r.json()["error"]["message"]
    assert run()["stdout"] == "reached\n"
    assert s.request("GET", f"/v1/sessions/{sid}/egress").code == 405
    # Locked: no rule left.
    r = s.request("POST", f"/v1/sessions/{sid}/egress", {})
    assert r.code == 200, r.body
    assert r.json() == {"allow_hosts": [], "allow_cidrs": []}
    assert run()["stdout"] == "refused\n"
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204


def test_a_session_drops_rules_at_run_time(start, port):
    session_drops_its_rules(start("--timeout", "5", *rules(port)), port)


@pytest.fixture
def redis():
    r = Redis()
    yield r
    r.stop()


def test_through_workers(start, redis, port):
    # The worker's deployer allows less than serve's: serve lets the
    # request through, the worker narrows against its own and refuses.
    w = Worker(redis.url, "w-egress", "--allow-cidr", f"127.0.0.1/32:{port}", "--allow-host",
               "pypi.org:443")
    try:
        s = start("--queue", redis.url, "--timeout", "5", "--cpu", "3", *rules(port))
        r = s.request("POST", "/v1/runs", {"code": fetch(port), "allow_hosts": []})
        assert r.code == 200, r.body
        assert r.json()["stdout"] == "reached\n"
        assert r.json()["egress"]["allowed"] == 1
        r = s.request("POST", "/v1/runs", {"code": fetch(port), "allow_cidrs": ["10.0.0.0/8"]})
        assert r.code == 400
        assert "'10.0.0.0/8' is not one of" in r.json()["error"]["message"]
        r = s.request("POST", "/v1/runs", {"code": fetch(port), "allow_cidrs": ["10.9.0.0/16:80"]})
        assert r.code == 400, r.body
        assert r.json()["error"]["code"] == "bad_egress"
        assert "this worker's egress rules are narrower" in r.json()["error"]["message"]
        assert wait_for(lambda: s.metrics()[
            'agentjail_egress_connections_total{verdict="allowed"}'] == 1)
        session_drops_its_rules(s, port)
    finally:
        w.stop()


def counts(pid):
    """serve's threads and open fds."""
    return (len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd")))


# What the proxy holds at most at once (src/egress/proxy.h EGRESS_CONCURRENT):
# a thread and its two fds each.
PROXY_CAP = 64
HOLD = ("import os, socket\n"
        "held = []\n"
        "for _ in range(240):\n"
        "    c = socket.create_connection(('127.0.0.1', 3128), timeout=10)\n"
        "    c.send(b'G')  # the first byte of a head that never ends\n"
        "    held.append(c)\n"
        "print(len(held))\n")


def test_trickling_connections_cost_serve_a_bounded_count(start, port):
    # A cell opens 240 connections to its proxy, one byte each, and keeps
    # them: serve spends a thread and two fds on at most the proxy's cap of
    # them (the rest are closed at accept), and all of it comes back when
    # the cell lets them go.
    s = start("--timeout", "60", "--cpu", "60", *rules(port))
    r = s.request("POST", "/v1/sessions", {})
    assert r.code == 201, r.body
    sid = r.json()["id"]
    call = lambda code: s.request("POST", f"/v1/sessions/{sid}/runs", {"code": code}).json()
    assert call("print(1)")["stdout"] == "1\n"
    threads0, fds0 = counts(s.proc.pid)
    out = call(HOLD)
    assert out["stdout"] == "240\n", out
    threads, fds = counts(s.proc.pid)
    assert threads <= threads0 + PROXY_CAP + 4, (threads0, threads)
    assert fds <= fds0 + 2 * PROXY_CAP + 8, (fds0, fds)
    assert call("for c in held: c.close()\nheld.clear()\nprint('let go')")["stdout"] == "let go\n"
    assert wait_for(lambda: counts(s.proc.pid)[0] <= threads0 + 2
                    and counts(s.proc.pid)[1] <= fds0 + 4, timeout=60), \
        (threads0, fds0, counts(s.proc.pid))
