"""Environment variables a request adds ("env" in POST /v1/runs and POST
/v1/sessions): the code sees them beside the deployer's --env, a run
without them does not, and a name that would weaken the sandbox, or one
the deployer set, is refused with 400 bad_env naming it; the same through
a worker on Redis, which checks them against its own deployer's."""
import pytest

from conftest import wait_for
from test_queue import Redis, Worker

SHOW = ("import os\n"
        "print(os.environ.get('DEPLOYED'), os.environ.get('GREETING'), "
        "os.environ.get('OTHER'))\n")

REFUSED = [
    ({"LD_PRELOAD": "/workspace/x.so"}, "LD_PRELOAD may not be set"),
    ({"https_proxy": "http://10.0.0.1:3128"}, "https_proxy may not be set"),
    ({"PYTHONPATH": "/usr/lib"}, "PYTHONPATH may not be set"),
    ({"PYTHONSTARTUP": "/workspace/s.py"}, "PYTHONSTARTUP may not be set"),
    ({"PATH": "/workspace"}, "PATH may not be set"),
    ({"DEPLOYED": "mine"}, "DEPLOYED is set by this server"),
    ({"BAD NAME": "x"}, "is not a variable name"),
    ({"NL": "a\nb"}, "holds no newline"),
    ({"N": 3}, "env.N: the value must be a string"),
    ("GREETING=hi", "env: must be an object"),
]


def refusals(s):
    for env, words in REFUSED:
        for path, extra in [("/v1/runs", {"code": "print(1)"}), ("/v1/sessions", {})]:
            r = s.request("POST", path, dict(extra, env=env))
            assert r.code == 400, (path, env, r.body)
            err = r.json()["error"]
            assert err["code"] == "bad_env", (path, env, err)
            assert words in err["message"], (path, env, err)


def runs_and_sessions(s):
    r = s.request("POST", "/v1/runs", {"code": SHOW, "env": {"GREETING": "hi there"}})
    assert r.code == 200, r.body
    assert r.json()["stdout"] == "yes hi there None\n"
    # Another run's variables are not this one's, though the deployer's
    # sandbox may be reused: each set of variables is a config of its own.
    r = s.request("POST", "/v1/runs", {"code": SHOW})
    assert r.json()["stdout"] == "yes None None\n"
    r = s.request("POST", "/v1/runs", {"code": SHOW, "env": {"OTHER": "1"}})
    assert r.json()["stdout"] == "yes None 1\n"
    # A streamed (recorded) run carries them too.
    r = s.request("POST", "/v1/runs", {"code": SHOW, "env": {"GREETING": "bg"},
                                       "background": True})
    assert r.code == 202, r.body
    rid = r.json()["id"]
    assert wait_for(lambda: s.request("GET", f"/v1/runs/{rid}").json()["state"] == "done")
    assert s.request("GET", f"/v1/runs/{rid}").json()["result"]["stdout"] == "yes bg None\n"

    r = s.request("POST", "/v1/sessions", {"env": {"GREETING": "session"}})
    assert r.code == 201, r.body
    sid = r.json()["id"]
    try:
        for _ in range(2):
            c = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": SHOW})
            assert c.code == 200, c.body
            assert c.json()["stdout"] == "yes session None\n"
        # A call cannot add variables: they are the session's, set at open.
        c = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": SHOW, "env": {"X": "1"}})
        assert c.code == 400 and "env" in c.json()["error"]["message"], c.body
    finally:
        assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204


def test_request_env_here(start):
    s = start("--timeout", "5", "--env", "DEPLOYED=yes")
    refusals(s)
    runs_and_sessions(s)


@pytest.fixture
def redis():
    r = Redis()
    yield r
    r.stop()


def test_request_env_through_a_worker(start, redis):
    w = Worker(redis.url, "w-env", "--env", "DEPLOYED=yes", "--env", "WORKER_OWN=1")
    try:
        s = start("--queue", redis.url, "--timeout", "5", "--cpu", "3", "--env", "DEPLOYED=yes")
        refusals(s)
        runs_and_sessions(s)
        # serve lets WORKER_OWN through (its deployer did not set it); the
        # worker's did, and the worker refuses to replace it.
        for path, extra in [("/v1/runs", {"code": "print(1)"}), ("/v1/sessions", {})]:
            r = s.request("POST", path, dict(extra, env={"WORKER_OWN": "2"}))
            assert r.code == 400, (path, r.body)
            assert r.json()["error"]["code"] == "bad_env"
            assert "WORKER_OWN is set by this server" in r.json()["error"]["message"]
    finally:
        w.stop()
