"""deploy/grafana/agentjail.json and deploy/prometheus/prometheus.yml: the
dashboard is a model Grafana's "Import dashboard" takes as it is (its one
data source an __inputs entry, every panel on it), and every metric its
PromQL names is one a real `agentjail serve` renders, of the type the query
treats it as, with the labels it groups by; the scrape config reaches the
address the systemd units listen on, with its key in a file.

The metric families come from the real server, not from a list kept here:
build/test/agentjail serve (nothing run, its own uid range 2197000000 and
lock directory /run/agentjail-grafana-test) is asked for GET /metrics with a
key made by `keys add --metrics`, and its `# TYPE` lines read. Skipped when
build/test/agentjail is not built (make builds it before the tests). Uses
promtool (Debian's prometheus package) when installed, to parse the queries
and the config as Prometheus does.

Run: /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/deploy/test_grafana.py
"""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import urllib.request
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "agentjail.json"
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"
SYSTEMD_ENV = ROOT / "deploy" / "systemd" / "agentjail.env"
AGENTJAIL = Path(os.environ.get("AJ_CLI", ROOT / "build" / "test" / "agentjail"))
UID_BASE = 2197000000
STATE_DIR = "/run/agentjail-grafana-test"

DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
# What the dashboard may leave off, and why: a family serve renders that is
# neither on a panel nor here fails the test, so a new metric is a choice.
NOT_SHOWN = {
    "agentjail_tier_probes_total": "how often GET /v1/tiers re-checked the tiers: at most one "
                                   "a minute by design, nothing to watch",
}
# Labels Prometheus adds to every sample it scrapes, not serve's.
TARGET_LABELS = {"instance", "job"}
# Grafana's own variables, which it fills in before the query is sent.
GRAFANA_VARIABLES = {"__rate_interval", "__interval", "__range", "__interval_ms",
                     "__range_s", "__range_ms"}
PANEL_TYPES = {"row", "timeseries", "stat", "gauge", "bargauge", "table", "heatmap", "text"}

# PromQL's words that are not metric names.
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp",
    "clamp_max", "clamp_min", "count_over_time", "day_of_month", "day_of_week", "delta",
    "deriv", "exp", "floor", "histogram_quantile", "holt_winters", "hour", "idelta",
    "increase", "irate", "label_join", "label_replace", "ln", "log10", "log2",
    "max_over_time", "min_over_time", "minute", "month", "predict_linear",
    "quantile_over_time", "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc",
    "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time", "time", "timestamp",
    "vector", "year", "last_over_time", "present_over_time",
}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"bool", "offset", "and", "or", "unless", "inf", "nan"}
# Functions whose argument must be a counter's series (a histogram's
# _bucket, _sum and _count are counters too).
COUNTER_FUNCTIONS = {"rate", "irate", "increase", "resets"}

TOKEN = re.compile(r"""
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<var>\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)
  | (?P<number>\d[\w.]*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<punct>[(){}\[\],])
  | (?P<op>[-+*/%^=!<>~]+)
  | (?P<space>\s+)
""", re.X)


# --- the dashboard --------------------------------------------------------------


def dashboard():
    with open(DASHBOARD, encoding="utf-8") as f:
        return json.load(f)


def panels(d=None):
    """Every panel, those inside a collapsed row's "panels" too."""
    out = []
    for p in (d or dashboard())["panels"]:
        out.append(p)
        out += p.get("panels", [])
    return out


def queries(d=None):
    """(where, PromQL) for every query of the dashboard: each target's expr,
    and a query variable's label_values(SELECTOR, LABEL)'s selector."""
    d = d or dashboard()
    out = []
    for p in panels(d):
        for t in p.get("targets", []):
            out.append((f"panel {p['id']} {p['title']!r} {t['refId']}", t["expr"]))
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"\s*label_values\((.*),\s*([A-Za-z_]\w*)\)\s*", q)
        assert m, f"variable {v['name']}: a query other than label_values(...): {q!r}"
        out.append((f"variable {v['name']}", m.group(1)))
    return out


# --- PromQL, as far as the checks need it ----------------------------------------------


def tokens(expr):
    """[(kind, text)] of a PromQL expression, spaces left out."""
    pos, out = 0, []
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        assert m, f"cannot read {expr!r} at {expr[pos:]!r}"
        pos = m.end()
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group()))
    return out


def parse(expr):
    """What an expression names: a list of (metric, [enclosing functions,
    innermost last]), the labels it groups or matches by, the variables
    it uses, and for each histogram_quantile call, (its metrics, its `by`
    labels). Label names inside {...} and by (...) are never metrics."""
    toks = tokens(expr)
    metrics, labels, variables, quantiles = [], set(), set(), []
    # One entry per open parenthesis: the function or aggregation it
    # belongs to (None for plain grouping); pending, the function whose
    # parenthesis comes next (an aggregation's after its by (...)).
    stack = []
    pending = None
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else (None, None)
        if kind == "var":
            variables.add(text.strip("${}"))
        elif kind == "punct" and text == "{":
            # Label matchers: name op "value", ... up to the brace.
            j = i + 1
            while toks[j][1] != "}":
                if toks[j][0] == "ident" and toks[j + 1][0] == "op":
                    labels.add(toks[j][1])
                elif toks[j][0] == "var":
                    variables.add(toks[j][1].strip("${}"))
                elif toks[j][0] == "string":
                    variables.update(v.strip("${}") for v in
                                     re.findall(r"\$\{?[A-Za-z_]\w*\}?", toks[j][1]))
                j += 1
            i = j
        elif kind == "punct" and text == "[":
            # A range: [5m], [$__rate_interval], [5m:1m].
            j = i + 1
            while toks[j][1] != "]":
                if toks[j][0] == "var":
                    variables.add(toks[j][1].strip("${}"))
                j += 1
            i = j
        elif kind == "ident" and text in ("group_left", "group_right") and nxt[1] != "(":
            pass  # without labels of its own
        elif kind == "ident" and text in GROUPING:
            # by (a, b): label names, not metrics.
            assert nxt[1] == "(", f"{expr!r}: {text} without its (labels)"
            j = i + 2
            group = []
            while toks[j][1] != ")":
                if toks[j][0] == "ident":
                    group.append(toks[j][1])
                j += 1
            labels.update(group)
            if text == "by":
                # Inside a histogram_quantile's argument: what its
                # buckets are summed by, which must keep le.
                for q in quantiles:
                    if q["open"]:
                        q["by"].update(group)
            i = j
        elif kind == "ident" and (text in FUNCTIONS or text in AGGREGATIONS) and \
                (nxt[1] == "(" or (text in AGGREGATIONS and nxt[1] in ("by", "without"))):
            pending = text
        elif kind == "ident" and nxt[1] == "(":
            pytest.fail(f"{expr!r}: {text}(...) is no PromQL function this test knows")
        elif kind == "ident" and text.lower() in KEYWORDS:
            pass
        elif kind == "ident":
            metrics.append((text, [f for f in stack if f]))
            for q in quantiles:
                if q["open"]:
                    q["metrics"].append(text)
        elif kind == "punct" and text == "(":
            stack.append(pending)
            if pending == "histogram_quantile":
                quantiles.append({"metrics": [], "by": set(), "open": True,
                                  "depth": len(stack), "phi": nxt})
            pending = None
        elif kind == "punct" and text == ")":
            for q in quantiles:
                if q["open"] and q["depth"] == len(stack):
                    q["open"] = False
            stack.pop()
        i += 1
    assert not stack, f"{expr!r}: unbalanced parentheses"
    return metrics, labels, variables, quantiles


def family(name, families):
    """The family a series belongs to: itself, or a histogram's (summary's)
    for its _bucket (_sum, _count) series; None if serve renders neither."""
    if name in families:
        return name
    for suffix, kinds in (("_bucket", {"histogram"}), ("_sum", {"histogram", "summary"}),
                          ("_count", {"histogram", "summary"})):
        if name.endswith(suffix) and families.get(name[:-len(suffix)]) in kinds:
            return name[:-len(suffix)]
    return None


def is_counter_series(name, families):
    """A counter, or a histogram's _bucket/_sum/_count (counters too)."""
    f = family(name, families)
    return families.get(f) == "counter" or (f is not None and f != name)


# --- the real server's families ---------------------------------------------------------------


def read_families(text):
    """{family: type} from the `# TYPE name type` lines, and {family:
    labels its samples carry}."""
    types, labels = {}, {}
    for line in text.splitlines():
        m = re.fullmatch(r"# TYPE (\S+) (\S+)", line)
        if m:
            types[m.group(1)] = m.group(2)
            continue
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"([A-Za-z_:][\w:]*)(?:\{(.*)\})? ", line)
        assert m, f"not a sample line: {line!r}"
        name = m.group(1)
        f = family(name, types)
        assert f, f"a sample of no family TYPE announced: {line!r}"
        labels.setdefault(f, set()).update(re.findall(r'([A-Za-z_]\w*)="', m.group(2) or ""))
    return types, labels


@pytest.fixture(scope="module")
def served():
    """(types, labels) of the families a real serve renders on GET /metrics."""
    if not os.access(AGENTJAIL, os.X_OK):
        pytest.skip(f"{AGENTJAIL} not built (make build/test/agentjail)")
    work = tempfile.mkdtemp(prefix="aj-grafana-")
    keys = os.path.join(work, "keys.json")
    token = subprocess.run([str(AGENTJAIL), "keys", "add", "--file", keys, "--metrics",
                            "prometheus"], capture_output=True, text=True, check=True,
                           timeout=60).stdout.strip()
    # Root takes the suite's own lock directory under /run; anyone else
    # (a deployer running tests/deploy/) one of their own.
    state = STATE_DIR if os.geteuid() == 0 else os.path.join(work, "state")
    proc = subprocess.Popen([str(AGENTJAIL), "serve", "--listen", "127.0.0.1:0", "--uid-base",
                             str(UID_BASE), "--state-dir", state, "--keys", keys],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr = []
    try:
        url = None
        while url is None:
            line = proc.stdout.readline()
            if not line:
                pytest.fail("serve did not start: " + proc.stderr.read())
            if line.startswith("AGENTJAIL_URL="):
                url = line.strip().split("=", 1)[1]
        drain = threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True)
        drain.start()

        def scrape():
            req = urllib.request.Request(url + "/metrics",
                                         headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, timeout=60) as r:
                assert r.status == 200
                assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                return r.read().decode()

        # Twice: the first scrape's own 200 is in the second's codes.
        scrape()
        yield read_families(scrape())
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        shutil.rmtree(work, ignore_errors=True)
        assert code == 0, f"serve exited {code}:\n" + "".join(stderr[-40:])


# --- the model ----------------------------------------------------------------------------


def test_dashboard_is_an_importable_model():
    d = dashboard()
    assert isinstance(d.get("title"), str) and d["title"].strip()
    # Grafana's uid: at most 40 characters of these.
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", d.get("uid", "")), d.get("uid")
    assert isinstance(d.get("schemaVersion"), int) and 36 <= d["schemaVersion"] <= 41
    assert d.get("id") is None, "an exported model has no database id"
    inputs = d.get("__inputs", [])
    assert [(i["name"], i["type"], i["pluginId"]) for i in inputs] == \
        [("DS_PROMETHEUS", "datasource", "prometheus")], inputs
    requires = {(r["type"], r["id"]) for r in d.get("__requires", [])}
    assert {("grafana", "grafana"), ("datasource", "prometheus")} <= requires, requires
    for p in panels(d):
        if p["type"] != "row":
            assert ("panel", p["type"]) in requires, f"__requires lacks panel {p['type']}"


def test_every_reference_is_to_something_the_import_or_the_dashboard_defines():
    """Import replaces each ${NAME} of an __inputs entry; any other ${...}
    or $name must be one of the dashboard's variables or Grafana's own."""
    d = dashboard()
    text = DASHBOARD.read_text(encoding="utf-8")
    inputs = {i["name"] for i in d["__inputs"]}
    variables = {v["name"] for v in d.get("templating", {}).get("list", [])}
    for name in set(re.findall(r"\$\{([A-Za-z_]\w*)\}", text)) | \
            set(re.findall(r"\$([A-Za-z_]\w*)", text)):
        assert name in inputs | variables | GRAFANA_VARIABLES, f"${name}: defined nowhere"
    for v in d.get("templating", {}).get("list", []):
        if v["type"] == "query":
            assert v["datasource"] == DS, f"variable {v['name']}: {v['datasource']}"


def test_panels_have_unique_ids_a_type_queries_and_a_place():
    ids = [p.get("id") for p in panels()]
    assert all(isinstance(i, int) for i in ids), ids
    assert len(ids) == len(set(ids)), f"panel ids repeated: {ids}"
    for p in panels():
        where = f"panel {p.get('id')} {p.get('title')!r}"
        assert p.get("type") in PANEL_TYPES, f"{where}: type {p.get('type')}"
        assert isinstance(p.get("title"), str) and p["title"].strip(), where
        pos = p.get("gridPos", {})
        assert {k: type(pos.get(k)) for k in "hwxy"} == dict.fromkeys("hwxy", int), \
            f"{where}: gridPos {pos}"
        assert pos["w"] >= 1 and pos["h"] >= 1 and pos["x"] >= 0 and pos["y"] >= 0, where
        assert pos["x"] + pos["w"] <= 24, f"{where}: wider than Grafana's 24 columns"
        if p["type"] == "row":
            assert not p.get("targets"), f"{where}: a row with queries"
            continue
        assert p.get("datasource") == DS, f"{where}: datasource {p.get('datasource')}"
        targets = p.get("targets")
        assert targets, f"{where}: no query"
        refs = [t.get("refId") for t in targets]
        assert len(refs) == len(set(refs)) and all(refs), f"{where}: refIds {refs}"
        for t in targets:
            assert t.get("datasource") == DS, f"{where} {t.get('refId')}: {t.get('datasource')}"
            assert isinstance(t.get("expr"), str) and t["expr"].strip(), \
                f"{where} {t.get('refId')}: no expr"


def test_panels_do_not_overlap():
    cells = {}
    for p in panels():
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                other = cells.setdefault((x, y), p["id"])
                assert other == p["id"], f"panels {other} and {p['id']} overlap at {(x, y)}"


# --- the queries ------------------------------------------------------------------------


def test_the_parser_finds_metrics_and_quantiles():
    """The reader the checks below rely on: metrics with their functions,
    never a label, a function or a variable taken for one."""
    m, labels, variables, q = parse(
        'histogram_quantile(0.9, sum by (le) (rate(a_bucket{instance=~"$instance"}'
        '[$__rate_interval]))) / on (job) b + sum(c) by (le2) - d offset 5m')
    assert m == [("a_bucket", ["histogram_quantile", "sum", "rate"]), ("b", []),
                 ("c", ["sum"]), ("d", [])]
    assert labels == {"le", "instance", "job", "le2"}
    assert variables == {"instance", "__rate_interval"}
    assert [(x["metrics"], x["by"]) for x in q] == [(["a_bucket"], {"le"})]


def test_every_query_reads_one_of_agentjails_metrics():
    for where, expr in queries():
        metrics, _, _, _ = parse(expr)
        assert metrics, f"{where}: {expr!r} names no metric"
        for name, _ in metrics:
            assert name.startswith("agentjail_"), f"{where}: {name} is not serve's"


def test_every_metric_a_query_names_is_one_serve_renders(served):
    types, _ = served
    for where, expr in queries():
        for name, _ in parse(expr)[0]:
            assert family(name, types), \
                f"{where}: {name} is no metric serve renders (it has: {sorted(types)})"


def test_counters_are_read_through_rate_and_gauges_never(served):
    types, _ = served
    for where, expr in queries():
        for name, funcs in parse(expr)[0]:
            counted = [f for f in funcs if f in COUNTER_FUNCTIONS]
            if not family(name, types):
                continue  # not serve's: the test above says so
            if is_counter_series(name, types):
                if where.startswith("panel"):
                    assert counted, f"{where}: counter {name} read raw, not through rate()"
            else:
                assert not counted, f"{where}: {counted[0]}() of {name}, a {types[name]}"


def test_each_histogram_quantile_reads_buckets_by_le(served):
    types, _ = served
    seen = 0
    for where, expr in queries():
        for q in parse(expr)[3]:
            seen += 1
            assert q["phi"][0] == "number" and 0 <= float(q["phi"][1]) <= 1, \
                f"{where}: quantile {q['phi'][1]}"
            assert q["metrics"], f"{where}: histogram_quantile of no series"
            for name in q["metrics"]:
                assert name.endswith("_bucket") and types.get(family(name, types)) == \
                    "histogram", f"{where}: histogram_quantile of {name}, not a histogram's _bucket"
            assert "le" in q["by"], f"{where}: histogram_quantile without le in its by"
    assert seen >= 3, "p50, p90 and p99 of the run latency"


def test_the_labels_a_query_uses_are_on_its_metrics(served):
    """by (...), matchers and the legend's {{label}} name labels serve puts
    on that family (or Prometheus's target labels); a family with no sample
    yet (a secret's injections) has its labels checked in metrics.c."""
    types, labels = served
    source = (ROOT / "src" / "serve" / "admit" / "metrics.c").read_text(encoding="utf-8")
    for p in panels():
        for t in p.get("targets", []):
            metrics, used, _, _ = parse(t["expr"])
            used |= set(re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", "")))
            used -= TARGET_LABELS
            for name, _ in metrics:
                f = family(name, types)
                if not f:
                    continue  # not serve's: test_every_metric_... says so
                have = labels.get(f) or set(re.findall(
                    re.escape(f) + r'\{(\w+)=', source))
                if types[f] == "histogram":
                    have = have | {"le"}
                assert used <= have, \
                    f"panel {p['id']} {p['title']!r}: {sorted(used - have)} not a label of {f}"


def test_every_family_serve_renders_is_shown_or_left_off_on_purpose(served):
    types, _ = served
    shown = {family(name, types) for _, expr in queries() for name, _ in parse(expr)[0]}
    assert set(NOT_SHOWN) <= set(types), "NOT_SHOWN names a family serve no longer renders"
    missing = set(types) - shown - set(NOT_SHOWN)
    assert not missing, f"serve renders {sorted(missing)}, on no panel and not in NOT_SHOWN"


def grafana_free(expr):
    """The query as Grafana sends it, its variables filled in."""
    return (expr.replace("$__rate_interval", "1m").replace("$__range", "1h")
            .replace("$instance", ".*"))


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool not installed "
                    "(Debian's prometheus package)")
def test_prometheus_parses_every_query(tmp_path):
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": grafana_free(expr)}
        for i, (_, expr) in enumerate(queries())]}]}
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    r = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


# --- the scrape config ---------------------------------------------------------------------


def scrape_config():
    with open(PROMETHEUS, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    jobs = config["scrape_configs"]
    assert len(jobs) == 1, "one serve, one job"
    return config, jobs[0]


def systemd_listen():
    """The --listen address deploy/systemd's agentjail.env gives serve."""
    for line in SYSTEMD_ENV.read_text(encoding="utf-8").splitlines():
        if line.startswith("AGENTJAIL_SERVE_OPTS="):
            # AGENTJAIL_SERVE_OPTS="--listen HOST:PORT": the quotes, then the words.
            words = shlex.split(" ".join(shlex.split(line.split("=", 1)[1])))
            return words[words.index("--listen") + 1]
    pytest.fail("agentjail.env sets no AGENTJAIL_SERVE_OPTS")


def test_scrape_config_scrapes_metrics_where_the_units_listen_with_a_key_file():
    _, job = scrape_config()
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert job.get("scheme", "http") == "http", "serve on loopback speaks plain HTTP"
    targets = [t for sc in job["static_configs"] for t in sc["targets"]]
    assert targets == [systemd_listen()], targets
    auth = job.get("authorization", {})
    assert auth.get("type", "Bearer") == "Bearer", auth
    assert auth.get("credentials_file", "").startswith("/"), auth
    # The token lives in a file only Prometheus reads, never in the config.
    assert "credentials" not in auth and "bearer_token" not in job and "basic_auth" not in job


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool not installed "
                    "(Debian's prometheus package)")
def test_promtool_accepts_the_scrape_config(tmp_path):
    # promtool checks that the credentials file exists: point it at one.
    token = tmp_path / "agentjail.token"
    token.write_text("aj_x\n")
    config, job = scrape_config()
    job["authorization"]["credentials_file"] = str(token)
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    r = subprocess.run(["promtool", "check", "config", str(path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
