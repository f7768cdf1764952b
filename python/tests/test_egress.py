"""Egress from Python: the deployer's rules and caps as keyword arguments
(checked by aj_config_validate, so refused in the CLI's words), the
proxy's decision log on the Execution, and a session narrowing its rules.
Traffic goes only to a loopback HTTP server this file starts itself."""
import os
import sys

import pytest

import agentjail
from agentjail import ConfigError, EgressError
from conftest import ROOT, tier_options

sys.path.insert(0, os.path.join(ROOT, "tests"))
import loopback_http  # noqa: E402


@pytest.fixture
def server():
    """A loopback HTTP server: its port."""
    with loopback_http.serving() as port:
        yield port


def fetch(port):
    return ("import urllib.request\n"
            f"print(urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5).read().decode(), end='')\n")


@pytest.mark.parametrize("options, words", [
    (dict(allow_hosts=["pypi.org:99999"]), "allow-host: host rule 'pypi.org:99999': port 99999"),
    (dict(allow_hosts="a b.org"), "allow-host: host rule 'a b.org'"),
    (dict(allow_cidrs=["10.0.0.0/33"]), "allow-cidr: CIDR rule '10.0.0.0/33'"),
    (dict(allow_hosts=["10.0.0.1"]), "--allow-cidr"),
    (dict(egress_out_mb=0), "egress-out-mb: 0 is out of range"),
    (dict(egress_in_mb=0), "egress-in-mb: 0 is out of range"),
    (dict(egress_connections=0), "egress-connections: 0 is out of range"),
    (dict(allow_cidrs=["10.0.0.0/8"] * 33), "more than 32"),
    (dict(allow_hosts=[3]), "allow_hosts: every rule must be a string, not int"),
    (dict(allow_cidrs=3), "allow_cidrs: must be a string or a list of strings, not int"),
    (dict(egress_kbps=-1), "egress_kbps: -1 is not a whole number"),
])
def test_bad_rules_and_caps_are_named(options, words):
    with pytest.raises(ConfigError) as e:
        agentjail.Sandbox(tier="process", **tier_options("process", **options))
    assert words in str(e.value)


def test_rules_and_caps_reach_the_config():
    sb = agentjail.Sandbox(tier="process", **tier_options(
        "process", allow_hosts="pypi.org:443", allow_cidrs=["10.1.0.0/16:5432", "127.0.0.1/32"],
        egress_out_mb=3, egress_in_mb=4, egress_connections=5, egress_kbps=6))
    try:
        assert sb.limit("allow_hosts") == ["pypi.org:443"]
        assert sb.limit("allow_cidrs") == ["10.1.0.0/16:5432", "127.0.0.1/32"]
        assert [sb.limit(k) for k in ("egress_out_mb", "egress_in_mb", "egress_connections",
                                      "egress_kbps")] == [3, 4, 5, 6]
    finally:
        sb.close()


def test_without_rules_there_is_no_log(sb):
    ex = sb.run("print(1)")
    assert ex.ok
    assert ex.egress is None
    assert '"egress"' not in ex.to_json()


def test_a_run_returns_the_decision_log(sandbox_for, server):
    sb = sandbox_for("process", allow_cidrs=[f"127.0.0.1/32:{server}"])
    ex = sb.run(fetch(server) + "import urllib.request\n"
                "try:\n"
                "    urllib.request.urlopen('http://127.0.0.1:1/', timeout=5)\n"
                "except Exception as e:\n"
                "    print('\\nrefused')\n")
    assert ex.ok, ex.stderr
    assert ex.stdout == loopback_http.BODY.decode() + "\nrefused\n"
    log = ex.egress
    assert log["allowed"] == 1 and log["denied"] == 1
    # Each entry is written when its connection ends: by verdict, not order.
    allowed, denied = sorted(log["connections"], key=lambda c: not c["allowed"])
    assert (allowed["port"], allowed["allowed"]) == (server, True)
    assert allowed["bytes_in"] > 0
    assert (denied["port"], denied["allowed"]) == (1, False)
    assert denied["reason"]
    # to_json carries it as `agentjail run --json` does.
    assert '"egress":{"connections":' in ex.to_json()


def test_a_session_narrows_its_rules(sandbox_for, server):
    rule = f"127.0.0.1/32:{server}"
    sb = sandbox_for("process", allow_cidrs=[rule, "10.9.0.0/16:80"],
                     allow_hosts=["pypi.org:443"])
    with sb.session() as s:
        assert s.run(fetch(server)).stdout == loopback_http.BODY.decode()
        # Widening is refused, named, and changes nothing.
        with pytest.raises(EgressError) as e:
            s.egress_keep(cidrs=[rule, "10.10.0.0/16:80"])
        assert "10.10.0.0/16:80" in str(e.value)
        assert s.run(fetch(server)).stdout == loopback_http.BODY.decode()
        s.egress_keep(cidrs=[rule])
        assert s.run(fetch(server)).stdout == loopback_http.BODY.decode()
        with pytest.raises(EgressError) as e:
            s.egress_keep(hosts=["pypi.org:443"])
        assert "pypi.org:443" in str(e.value)
        # Locked: no rule left, the server is out of reach.
        s.egress_keep()
        ex = s.run("import urllib.request\n"
                   "try:\n"
                   f"    urllib.request.urlopen('http://127.0.0.1:{server}/', timeout=5)\n"
                   "    print('reached')\n"
                   "except Exception:\n"
                   "    print('refused')\n")
        assert ex.stdout == "refused\n"
        # The decisions recorded by the call's end (one still closing comes
        # in the next call's log): only the log's presence is certain.
        assert isinstance(ex.egress["connections"], list)
