"""Secrets from Python (issue 39, docs/secrets.md): credentials the code can
use but never see. The library judges every field (aj_config_validate), so
a refusal is in its words, names the field, and never holds a value; the
Sandbox keeps them write-only (no repr, option or getter shows a value);
a session narrows them with secrets_keep. The remote clients send them in
serve's bodies: checked here on the wire, with Transport._send played by
this file (no serve). No test reaches the network: the hosts are only
named."""
import errno
import json
import subprocess

import pytest

import agentjail
from agentjail import ConfigError, EgressError
from agentjail import _http
from agentjail._secrets import Secrets
from conftest import tier_options

# Every value of this file: none may appear in a message, a repr or an
# environment.
VALUE = "ghp_s3cr3t-VALUE-never-shown"
OTHER = "npm_0th3r-VALUE-never-shown"


def header_secret(**more):
    s = {"name": "GH", "value": VALUE, "hosts": ["api.github.com:443"],
         "header": "Authorization", "format": "Bearer {value}"}
    s.update(more)
    return s


def placeholder_secret(**more):
    s = {"name": "NPM", "value": OTHER, "hosts": ["registry.npmjs.org:443"],
         "placeholder": True}
    s.update(more)
    return s


def no_value_in(*texts):
    for t in texts:
        assert VALUE not in t and OTHER not in t, t


@pytest.mark.parametrize("secrets, words", [
    # Python's own checks: the shape.
    ("GH=x", "secrets: must be a list of dicts"),
    ({"name": "GH"}, "secrets: must be a list of dicts"),
    ([header_secret(), "GH"], "secrets: item 2 is not a dict (a str)"),
    ([header_secret(value=VALUE.encode())], 'secrets: item 1: "value" must be a string, '
                                            'a list of strings or True/False, not bytes'),
    ([{1: VALUE}], "secrets: item 1: field names must be strings, not int"),
    # The library's, in its words.
    ([header_secret(name="gh")], "secrets: item 1: name 'gh' must be 1 to"),
    ([header_secret(value=VALUE + "\r\nX-Evil: 1")], "secrets: GH: the value holds a control"),
    ([header_secret(value="")], "secrets: GH: the value must be 1 to"),
    ([header_secret(value=7)], 'secrets: GH: "value" must be a string'),
    ([header_secret(hosts=[])], 'secrets: GH: "hosts" must be a non-empty array'),
    ([header_secret(headers="Authorization")], "secrets: item 1: unknown field 'headers'"),
    ([header_secret(format=None)], 'secrets: GH: "format" must be a string'),
    ([{k: v for k, v in header_secret().items() if k not in ("header", "format")}],
     'secrets: GH: give "header" (the header to set) or "placeholder": true'),
    ([placeholder_secret(header="Authorization")],
     'secrets: NPM: a placeholder secret has no "header" or "format"'),
    ([header_secret(header="Host")], "secrets: GH: header 'Host' is the proxy's own"),
    ([header_secret(format="Bearer")], "secrets: GH: the format must hold {value}"),
    ([header_secret(placeholder="yes")], 'secrets: GH: "placeholder" and "plain_http" are'),
    ([header_secret(requests="GET /")], 'secrets: GH: "requests" must be 1 to'),
    ([header_secret(), header_secret(value=OTHER)], "secrets: two secrets named GH"),
])
def test_a_bad_secret_is_refused_naming_the_field_never_the_value(secrets, words):
    with pytest.raises(ConfigError) as e:
        agentjail.Sandbox(tier="process", secrets=secrets, allow_hosts=["api.github.com"])
    assert words in str(e.value)
    no_value_in(str(e.value), repr(e.value))
    no_value_in(str(e.value.__context__ or ""), str(e.value.__cause__ or ""))


def test_secrets_need_an_egress_rule_and_egress_ca_is_checked(tmp_path):
    with pytest.raises(ConfigError) as e:
        agentjail.Sandbox(tier="process", secrets=[header_secret()])
    assert "secrets: no egress rule lets the program reach a host" in str(e.value)
    no_value_in(str(e.value))
    with pytest.raises(ConfigError, match="egress_ca:.*No such file"):
        agentjail.Sandbox(tier="process", egress_ca=str(tmp_path / "none.pem"))
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n")
    with pytest.raises(ConfigError, match="^egress_ca:.*PRIVATE KEY"):
        agentjail.Sandbox(tier="process", egress_ca=str(key))
    with pytest.raises(ConfigError, match="egress_ca: must be a string, not int"):
        agentjail.Sandbox(tier="process", egress_ca=3)


def test_a_good_secret_is_taken_and_a_run_works(tmp_path):
    ca = tmp_path / "ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(tmp_path / "k"),
                    "-out", str(ca), "-days", "1", "-subj", "/CN=agentjail secrets test CA"],
                   check=True, capture_output=True)
    secrets = [header_secret(requests=["GET /repos/acme/"]), placeholder_secret(plain_http=True)]
    with agentjail.Sandbox(**tier_options("process", allow_hosts=["example.org"],
                                          secrets=secrets, egress_ca=str(ca))) as sb:
        ex = sb.run("print(1)")
        assert (ex.status, ex.stdout) == (agentjail.Status.OK, "1\n")
        assert sb.limit("secrets") == ["GH", "NPM"]
        assert sb.limit("egress_ca") == str(ca)
        with sb.session() as s:
            assert s.run("print(2)").stdout == "2\n"
        # A session with env of its own is opened with the same secrets.
        with sb.session(env={"TZ": "UTC"}) as s:
            assert s.run("import os; print(os.environ['TZ'])").stdout == "UTC\n"


def test_the_program_sees_placeholders_only():
    """Only a placeholder secret is in the program's environment, and only
    as its placeholder text; no value is anywhere in it. (Needs the egress
    proxy's side of issue 39.)"""
    code = ("import os, json\n"
            "print(json.dumps({k: v for k, v in os.environ.items()"
            " if k.startswith('AJ_SECRET_')}))\n"
            "print(open('/proc/self/environ', 'rb').read().decode('utf-8', 'replace'))\n")
    with agentjail.Sandbox(**tier_options("process", allow_hosts=["example.org"],
                                          secrets=[header_secret(),
                                                   placeholder_secret()])) as sb:
        for runner in (sb, sb.session()):
            try:
                ex = runner.run(code)
            finally:
                if runner is not sb:
                    runner.close()
            assert ex.status == agentjail.Status.OK, ex.text()
            first = ex.stdout.splitlines()[0]
            assert json.loads(first) == {"AJ_SECRET_NPM": "AJ_SECRET_NPM"}
            no_value_in(ex.stdout, ex.stderr)


def test_no_repr_or_attribute_shows_a_value():
    secrets = [header_secret(), placeholder_secret()]
    with agentjail.Sandbox(**tier_options("process", allow_hosts=["example.org"],
                                          secrets=secrets)) as sb:
        shown = [repr(sb), str(sb), repr(sb._config), repr(sb._options), repr(vars(sb)),
                 repr(sb.limit("secrets")), repr(vars(sb._config))]
        with sb.session() as s:
            shown += [repr(s), repr(vars(s))]
        no_value_in(*shown)
        assert "GH" in repr(sb._config) and "redacted" in repr(sb._config)
        held = sb._options["secrets"]
        assert isinstance(held, Secrets) and not hasattr(held, "value")
        assert not hasattr(held, "__dict__")
        assert repr(held) == "<secrets GH, NPM: values redacted>"
    # The caller's list is the caller's: the Sandbox did not keep it.
    assert secrets[0]["value"] == VALUE


def test_secrets_keep_narrows_and_refuses_an_unknown_name():
    with agentjail.Sandbox(**tier_options("process", allow_hosts=["example.org"],
                                          secrets=[header_secret(),
                                                   placeholder_secret()])) as sb:
        with sb.session() as s:
            with pytest.raises(EgressError) as e:
                s.secrets_keep(["GH", "AWS"])
            assert e.value.errno == errno.EPERM
            assert "'AWS' is not one of the session's secrets" in str(e.value)
            s.secrets_keep(["GH"])
            # Dropped is gone: keeping it again is widening.
            with pytest.raises(EgressError, match="'NPM'"):
                s.secrets_keep("NPM")
            s.secrets_keep()
            with pytest.raises(EgressError, match="'GH'"):
                s.secrets_keep(["GH"])
            assert s.run("print(3)").stdout == "3\n"
            with pytest.raises(ConfigError, match="names: every name must be a string"):
                s.secrets_keep([3])


# ---- the remote clients' bodies (no serve: Transport._send played here) ----

RESULT = {"status": "ok", "exit_code": 0, "stdout": "1\n", "stderr": "", "wall_ms": 1,
          "tier": "process"}


@pytest.fixture
def wire(monkeypatch):
    """Every exchange the remote client makes, as (method, path, headers,
    decoded body); answers: a result, a session, or a 400 for .../egress
    naming an unknown secret."""
    sent = []

    def send(self, method, path, data, headers):
        body = json.loads(data) if data else None
        sent.append((method, path, dict(headers), body, data or b""))
        if path.endswith("/egress") and "AWS" in (body or {}).get("secrets", []):
            err = {"error": {"code": "bad_egress",
                             "message": "secrets: 'AWS' is not one of the session's secrets"}}
            return 400, {}, json.dumps(err).encode()
        if path == "/v1/sessions":
            return 201, {}, json.dumps({"id": "s-1"}).encode()
        if method == "POST" and path == "/v1/runs" and body.get("background"):
            return 202, {}, json.dumps({"id": "r-1"}).encode()
        return 200, {}, json.dumps(RESULT if path.endswith("/runs") else {}).encode()
    monkeypatch.setattr(_http.Transport, "_send", send)
    return sent


def test_remote_sends_secrets_with_runs_and_sessions(wire):
    secrets = [header_secret(), placeholder_secret()]
    sb = agentjail.connect("http://127.0.0.1:9", "k", secrets=secrets)
    assert sb.run("print(1)").stdout == "1\n"
    sb.submit("print(1)")
    s = sb.session(allow_hosts=["api.github.com:443"])
    s.run("print(1)")
    own = sb.session(secrets=[placeholder_secret()])
    sb.restore("c-1")
    bodies = [(m, p, b) for m, p, _, b, _ in wire]
    assert bodies[0] == ("POST", "/v1/runs", {"code": "print(1)", "secrets": secrets})
    assert bodies[1][2]["secrets"] == secrets and bodies[1][2]["background"] is True
    assert bodies[2] == ("POST", "/v1/sessions", {"allow_hosts": ["api.github.com:443"],
                                                  "secrets": secrets})
    # A session's runs carry none: its secrets are the session's.
    assert bodies[3] == ("POST", "/v1/sessions/s-1/runs", {"code": "print(1)"})
    assert bodies[4] == ("POST", "/v1/sessions", {"secrets": [placeholder_secret()]})
    assert bodies[5][2] == {"secrets": secrets, "from_checkpoint": "c-1"}
    # The value is in the bodies, never in a header or the path.
    for _, path, headers, _, _ in wire:
        no_value_in(path, repr(headers))
    no_value_in(repr(sb), repr(vars(sb)), repr(s), repr(own), repr(vars(s)))
    sb.close()


def test_remote_secrets_keep_and_its_refusal(wire):
    sb = agentjail.connect("http://127.0.0.1:9", "k", secrets=[header_secret()])
    s = sb.session()
    s.secrets_keep(["GH"])
    s.secrets_keep("GH")
    s.secrets_keep()
    assert [(p, b) for _, p, _, b, _ in wire[1:]] == [
        ("/v1/sessions/s-1/egress", {"secrets": ["GH"]}),
        ("/v1/sessions/s-1/egress", {"secrets": ["GH"]}),
        ("/v1/sessions/s-1/egress", {"secrets": []})]
    with pytest.raises(agentjail.EgressError) as e:
        s.secrets_keep(["AWS"])
    assert isinstance(e.value, agentjail.ServeError) and e.value.errno == errno.EPERM
    assert "'AWS'" in str(e.value)
    with pytest.raises(ConfigError, match="names:"):
        s.secrets_keep([1])


def test_remote_shape_refused_before_sending(wire):
    with pytest.raises(ConfigError, match="secrets: must be a list of dicts"):
        agentjail.connect("http://127.0.0.1:9", "k", secrets={"GH": VALUE})
    sb = agentjail.connect("http://127.0.0.1:9", "k")
    with pytest.raises(ConfigError) as e:
        sb.session(secrets=[header_secret(value=VALUE.encode())])
    no_value_in(str(e.value))
    assert wire == []


def test_serve_client_sends_secrets_per_run(wire):
    from agentjail.serve_client import ServeClient
    c = ServeClient("http://127.0.0.1:9", "k")
    c.run("print(1)", secrets=[header_secret()])
    c.submit("print(1)", secrets=[header_secret()])
    c.run("print(1)")
    assert [b.get("secrets") for _, _, _, b, _ in wire] == [[header_secret()]] * 2 + [None]
