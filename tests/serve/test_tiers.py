"""GET /v1/tiers answers from a cache: one prober checks the tiers (a trial
sandbox of each) when first asked and again at most once a minute, so
requests, however many and from whatever key, start no sandbox of their
own. With a queue, the answer names the workers and never the queue's Redis
URL."""
import concurrent.futures

from conftest import wait_for
from test_queue import redis, serve  # noqa: F401 (redis is a fixture)

PROBES = "agentjail_tier_probes_total"


def test_concurrent_requests_share_one_probe(start):
    s = start("--timeout", "5")
    # Nobody asked yet: no probe, no trial sandbox.
    assert s.metrics()[PROBES] == 0
    # Together: every request waits for the same, first probe.
    with concurrent.futures.ThreadPoolExecutor(30) as pool:
        answers = list(pool.map(lambda _: s.request("GET", "/v1/tiers"), range(30)))
    assert [r.code for r in answers] == [200] * 30
    assert len({r.body for r in answers}) == 1
    assert answers[0].json()["tiers"][0] == {"tier": "process", "available": True,
                                             "reason": None}
    assert s.metrics()[PROBES] == 1
    # Within the minute: the cache, no probe.
    assert s.request("GET", "/v1/tiers").body == answers[0].body
    assert s.metrics()[PROBES] == 1


def test_the_queue_answer_names_no_redis_url(start, redis):  # noqa: F811
    s = serve(start, redis)
    r = s.request("GET", "/v1/tiers")
    assert r.code == 200, r.body
    assert b"redis://" not in r.body and str(redis.port).encode() not in r.body
    assert "queue" not in r.json() and r.json()["workers"] == []
