"""Every run's answer carries its id (run_id), here as through the queue
(test_queue.py): a client has something to quote and ask about."""
import re


def test_every_run_answer_has_its_own_id(server):
    a, b = server.run("print(1)"), server.run("raise SystemExit(3)")
    assert a.code == 200 and b.code == 200
    ids = [a.json()["run_id"], b.json()["run_id"]]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert ids[0] != ids[1]


def test_a_session_run_has_an_id(server):
    sid = server.request("POST", "/v1/sessions", None).json()["id"]
    r = server.request("POST", f"/v1/sessions/{sid}/runs", {"code": "x = 1"})
    assert r.code == 200 and re.fullmatch(r"[0-9a-f]{32}", r.json()["run_id"])
    assert server.request("DELETE", f"/v1/sessions/{sid}").code == 204
