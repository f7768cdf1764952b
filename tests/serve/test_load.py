"""A bounded load test on loopback: 2,000 runs at concurrency 16 through
serve, every answer accounted for, none lost or duplicated. Figures are
printed, never asserted: this machine is shared."""
import concurrent.futures
import time


def test_2000_runs_at_concurrency_16(start):
    s = start("--concurrency", "4", "--queue-size", "64")
    n = 2000

    def one(i):
        r = s.run(f"print({i} * 7)")
        return i, r.code, r.json()

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(one, range(n)))
    took = time.monotonic() - t0
    codes = {}
    for _, code, _ in answers:
        codes[code] = codes.get(code, 0) + 1
    assert codes == {200: n}, codes
    outs = sorted(int(body["stdout"]) for _, _, body in answers)
    assert outs == [i * 7 for i in range(n)]
    for i, _, body in answers:
        assert body["stdout"] == f"{i * 7}\n" and body["status"] == "ok"
    m = s.metrics()
    assert m['agentjail_runs_total{tier="process",status="ok"}'] == n
    assert m["agentjail_run_seconds_count"] == n
    print(f"\n{n} runs at concurrency 16 in {took:.1f} s: {n / took:.1f} runs/s")
