"""deploy/: the Kubernetes manifests and systemd units parse, and keep the
promises deploy/README.md makes about them (who is root, who has no
privilege at all, what the probes hit, how long a drain may take).

Run: /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/deploy/
Needs python3-yaml; uses kubectl (kustomize) and systemd-analyze when they
are installed, and says so when a check is skipped for want of them.
"""
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBE = DEPLOY / "kubernetes"
SYSTEMD = DEPLOY / "systemd"
TIERS = {"process", "container", "microvm", "docker", "gvisor"}
# What `agentjail run` uses when --timeout is not given.
DEFAULT_TIMEOUT = 10.0
# serve's default --max-wait: how long a run may wait for a slot or worker.
DEFAULT_MAX_WAIT = 30.0
POD_OWNERS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
# Namespaces a network policy may name besides ours: the cluster DNS's.
FOREIGN_NAMESPACES = {"kube-system"}


# --- Kubernetes: loading ------------------------------------------------------


def yaml_files():
    """The Kubernetes files (deploy/prometheus/'s scrape config is YAML too,
    but no Kubernetes object: tests/deploy/test_grafana.py checks it)."""
    return sorted(KUBE.rglob("*.yaml")) + sorted(KUBE.rglob("*.yml"))


def load(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def kube_objects():
    """(file, object) for every Kubernetes object under deploy/kubernetes/
    (the optional tiers' files included), not the kustomization."""
    out = []
    for path in sorted(KUBE.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        out += [(path, d) for d in load(path)]
    return out


def pod_owners():
    return [(p, d) for p, d in kube_objects() if d["kind"] in POD_OWNERS]


def pod_spec(obj):
    return obj["spec"]["template"]["spec"]


def pod_labels(obj):
    return obj["spec"]["template"]["metadata"].get("labels", {})


def namespace_of(obj):
    return obj["metadata"].get("namespace")


def containers(obj):
    spec = pod_spec(obj)
    return spec.get("initContainers", []) + spec["containers"]


def argv(container):
    """The command line as words: command + args, and for `sh -c SCRIPT`
    the script's own words too."""
    words = [str(w) for w in container.get("command", []) + container.get("args", [])]
    out = []
    for w in words:
        out += shlex.split(w, comments=True) if "\n" in w or " " in w else [w]
    return out


def option(words, name):
    """The value of --name in words (--name VALUE or --name=VALUE), or None."""
    for i, w in enumerate(words):
        if w == name and i + 1 < len(words):
            return words[i + 1]
        if w.startswith(name + "="):
            return w.split("=", 1)[1]
    return None


def agentjail_container(obj):
    """The container that runs agentjail (its argv names serve or worker)."""
    for c in obj["spec"]["template"]["spec"]["containers"]:
        words = argv(c)
        if "serve" in words or "worker" in words:
            return c, words
    raise AssertionError(f"{obj['metadata']['name']}: no container runs agentjail")


def by_name(kind, name):
    found = [d for _, d in kube_objects() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def workers():
    return [
        (p, d)
        for p, d in pod_owners()
        if pod_labels(d).get("app.kubernetes.io/component") == "worker"
    ]


def security(obj, container):
    """A container's effective security settings: its own, else the pod's."""
    pod = pod_spec(obj).get("securityContext", {})
    own = container.get("securityContext", {})
    return {**pod, **own}


def matches(selector, labels):
    """Whether labels satisfy a label selector (matchLabels and
    matchExpressions, or a Service's plain map)."""
    if "matchLabels" in selector or "matchExpressions" in selector:
        ml = selector.get("matchLabels", {})
        exprs = selector.get("matchExpressions", [])
    else:
        ml, exprs = selector, []
    if any(labels.get(k) != v for k, v in ml.items()):
        return False
    for e in exprs:
        k, op, vals = e["key"], e["operator"], e.get("values", [])
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and labels.get(k) in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def namespaces_defined():
    return {d["metadata"]["name"] for _, d in kube_objects() if d["kind"] == "Namespace"}


# --- Kubernetes: every file and object -------------------------------------------


@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_yaml_parses_and_names_every_object(path):
    docs = load(path)
    assert docs, f"{path}: no document"
    for d in docs:
        assert isinstance(d, dict), f"{path}: a document that is not a mapping"
        assert d.get("apiVersion"), f"{path}: a document without apiVersion"
        assert d.get("kind"), f"{path}: a document without kind"
        if d["kind"] == "Kustomization":
            # kustomize's own file, not an object sent to the API server:
            # it has no metadata.name to give.
            continue
        assert d.get("metadata", {}).get("name"), f"{path}: a {d['kind']} without metadata.name"


def test_kustomization_lists_exactly_the_files_present():
    k = load(KUBE / "kustomization.yaml")[0]
    listed = k.get("resources", [])
    present = sorted(p.name for p in KUBE.glob("*.yaml") if p.name != "kustomization.yaml")
    assert len(listed) == len(set(listed)), f"listed twice: {listed}"
    assert sorted(listed) == present, f"kustomization lists {sorted(listed)}, the folder has {present}"


def test_kustomization_images_name_images_in_use():
    k = load(KUBE / "kustomization.yaml")[0]
    used = {
        c["image"].rsplit(":", 1)[0] for _, d in pod_owners() for c in containers(d)
    }
    for entry in k.get("images", []):
        assert entry["name"] in used, f"kustomization renames {entry['name']}, which nothing uses"


def test_kubectl_kustomize_builds_the_same_objects():
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl is not installed: the kustomization is checked by the test above only")
    out = subprocess.run(
        [kubectl, "kustomize", str(KUBE)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    built = [d for d in yaml.safe_load_all(out.stdout) if d]
    listed = load(KUBE / "kustomization.yaml")[0]["resources"]
    expected = [d for name in listed for d in load(KUBE / name)]
    key = lambda d: (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
    assert sorted(map(key, built)) == sorted(map(key, expected))


def test_every_namespaced_object_names_a_namespace_defined_here():
    defined = namespaces_defined()
    assert defined, "namespace.yaml defines no Namespace"
    for path, d in kube_objects():
        if d["kind"] in CLUSTER_SCOPED:
            continue
        ns = namespace_of(d)
        assert ns in defined, f"{path.name}: {d['kind']} {d['metadata']['name']} is in namespace {ns!r}"


def test_pod_security_admission_restricted_for_serve_privileged_only_for_workers():
    ns = {d["metadata"]["name"]: d for _, d in kube_objects() if d["kind"] == "Namespace"}
    level = lambda n: ns[n]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
    serve = by_name("Deployment", "serve")
    assert level(namespace_of(serve)) == "restricted"
    for _, w in workers():
        assert namespace_of(w) != namespace_of(serve), "workers share serve's namespace"


@pytest.mark.parametrize("path,obj", pod_owners(), ids=lambda x: getattr(x, "name", None) or x["metadata"]["name"])
def test_selector_matches_template_labels(path, obj):
    sel = obj["spec"]["selector"]
    labels = pod_labels(obj)
    assert sel.get("matchLabels"), f"{path.name}: {obj['metadata']['name']} selects nothing"
    assert matches(sel, labels), f"{path.name}: selector {sel} does not match labels {labels}"


def test_selectors_of_two_pod_owners_never_overlap():
    owners = pod_owners()
    for i, (_, a) in enumerate(owners):
        for _, b in owners[i + 1 :]:
            if namespace_of(a) != namespace_of(b):
                continue
            assert not matches(a["spec"]["selector"], pod_labels(b)), (
                f"{a['metadata']['name']}'s selector also takes {b['metadata']['name']}'s pods"
            )


def test_services_select_existing_pods_and_ports():
    services = [d for _, d in kube_objects() if d["kind"] == "Service"]
    assert services
    for s in services:
        pods = [
            d
            for _, d in pod_owners()
            if namespace_of(d) == namespace_of(s) and matches(s["spec"]["selector"], pod_labels(d))
        ]
        assert pods, f"Service {s['metadata']['name']} selects no pod"
        for port in s["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            for d in pods:
                cports = [p for c in containers(d) for p in c.get("ports", [])]
                assert any(
                    p.get("name") == target or p["containerPort"] == target for p in cports
                ), f"Service {s['metadata']['name']}: no container port {target!r}"


def test_network_policies_select_existing_pods():
    for path, np in ((p, d) for p, d in kube_objects() if d["kind"] == "NetworkPolicy"):
        ns = namespace_of(np)
        sel = np["spec"]["podSelector"]
        if sel:
            assert any(
                namespace_of(d) == ns and matches(sel, pod_labels(d)) for _, d in pod_owners()
            ), f"{path.name}: NetworkPolicy {np['metadata']['name']} selects no pod"
        rules = [r.get("from", []) for r in np["spec"].get("ingress", [])] + [
            r.get("to", []) for r in np["spec"].get("egress", [])
        ]
        for peers in rules:
            for peer in peers:
                if "podSelector" not in peer:
                    continue
                nss = peer.get("namespaceSelector")
                if nss is None:
                    where = {ns}
                else:
                    name = nss.get("matchLabels", {}).get("kubernetes.io/metadata.name")
                    if name in FOREIGN_NAMESPACES:
                        continue  # the cluster's own pods (DNS): not ours to check
                    assert name in namespaces_defined(), (
                        f"{path.name}: {np['metadata']['name']} names namespace {name!r}"
                    )
                    where = {name}
                assert any(
                    namespace_of(d) in where and matches(peer["podSelector"], pod_labels(d))
                    for _, d in pod_owners()
                ), f"{path.name}: {np['metadata']['name']} names peers {peer} that no pod has"


def test_termination_grace_exceeds_the_run_timeout():
    for path, d in pod_owners():
        for c in containers(d):
            words = argv(c)
            if "serve" not in words and "worker" not in words:
                continue
            timeout = float(option(words, "--timeout") or DEFAULT_TIMEOUT)
            need = timeout + (DEFAULT_MAX_WAIT if "serve" in words else 0)
            grace = pod_spec(d).get("terminationGracePeriodSeconds", 30)
            assert grace > need, (
                f"{path.name}: {d['metadata']['name']} has {grace} s to drain, a run may take {need} s"
            )


def test_serve_and_workers_are_given_the_same_limits():
    limits = ["--timeout", "--cpu", "--memory", "--pids", "--file-size", "--disk", "--output"]
    _, serve_words = agentjail_container(by_name("Deployment", "serve"))
    want = {o: option(serve_words, o) for o in limits}
    for path, w in workers():
        _, words = agentjail_container(w)
        got = {o: option(words, o) for o in limits}
        assert got == want, f"{path.name}: {w['metadata']['name']} limits {got}, serve's {want}"


# Known fields, so that a misspelt protection (readOnlyRootFileSystem) fails
# here instead of being dropped without a word by a lenient client.
CONTAINER_SECURITY = {
    "allowPrivilegeEscalation", "appArmorProfile", "capabilities", "privileged", "procMount",
    "readOnlyRootFilesystem", "runAsGroup", "runAsNonRoot", "runAsUser", "seLinuxOptions",
    "seccompProfile", "windowsOptions",
}
POD_SECURITY = {
    "appArmorProfile", "fsGroup", "fsGroupChangePolicy", "runAsGroup", "runAsNonRoot",
    "runAsUser", "seLinuxChangePolicy", "seLinuxOptions", "seccompProfile",
    "supplementalGroups", "supplementalGroupsPolicy", "sysctls", "windowsOptions",
}
PROBE = {
    "exec", "failureThreshold", "grpc", "httpGet", "initialDelaySeconds", "periodSeconds",
    "successThreshold", "tcpSocket", "terminationGracePeriodSeconds", "timeoutSeconds",
}


def test_security_fields_are_spelt_right():
    for path, d in pod_owners():
        name = d["metadata"]["name"]
        extra = set(pod_spec(d).get("securityContext", {})) - POD_SECURITY
        assert not extra, f"{path.name}: {name}: unknown pod securityContext fields {extra}"
        for c in containers(d):
            extra = set(c.get("securityContext", {})) - CONTAINER_SECURITY
            assert not extra, f"{path.name}: {name}: unknown securityContext fields {extra}"
            caps = c.get("securityContext", {}).get("capabilities", {})
            assert set(caps) <= {"add", "drop"}, f"{path.name}: {name}: capabilities {caps}"
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                extra = set(c.get(probe, {})) - PROBE
                assert not extra, f"{path.name}: {name}: unknown {probe} fields {extra}"


def test_no_pod_gets_a_service_account_token():
    # None of them talks to the Kubernetes API, and a process-tier run reads
    # its worker's files: a token there would be one print() from the agent.
    for path, d in pod_owners():
        assert pod_spec(d).get("automountServiceAccountToken") is False, (
            f"{path.name}: {d['metadata']['name']} mounts a service account token"
        )


# --- Kubernetes: serve -------------------------------------------------------------


def test_serve_queues_and_listens_for_the_service():
    serve = by_name("Deployment", "serve")
    _, words = agentjail_container(serve)
    assert words[:2] == ["/usr/local/bin/agentjail", "serve"]
    queue = option(words, "--queue")
    assert queue and re.fullmatch(r"redis://[\w.-]+:\d+(/\d+)?", queue), f"--queue {queue!r}"
    assert option(words, "--tier") in TIERS
    listen = option(words, "--listen")
    assert listen and listen.rsplit(":", 1)[0] == "0.0.0.0", f"--listen {listen!r}"


def test_serve_probes_hit_health():
    serve = by_name("Deployment", "serve")
    c, _ = agentjail_container(serve)
    port_names = {p.get("name") for p in c["ports"]} | {p["containerPort"] for p in c["ports"]}
    for probe in ("readinessProbe", "livenessProbe"):
        get = c[probe]["httpGet"]
        assert get["path"] == "/v1/health", f"{probe} asks {get['path']}"
        assert get["port"] in port_names, f"{probe} port {get['port']} is not the container's"


def test_serve_runs_with_no_privilege():
    serve = by_name("Deployment", "serve")
    for c in containers(serve):
        sec = security(serve, c)
        assert sec.get("runAsNonRoot") is True
        assert sec.get("runAsUser", 0) != 0
        assert sec.get("readOnlyRootFilesystem") is True
        assert sec.get("allowPrivilegeEscalation") is False
        assert not sec.get("privileged")
        assert "ALL" in sec.get("capabilities", {}).get("drop", [])
        assert not sec.get("capabilities", {}).get("add")
        assert sec.get("seccompProfile", {}).get("type") == "RuntimeDefault"
    spec = pod_spec(serve)
    for host in ("hostPID", "hostIPC", "hostNetwork"):
        assert not spec.get(host)
    assert not [v for v in spec.get("volumes", []) if "hostPath" in v]


def test_serve_reads_its_keys_from_the_secret_the_readme_makes():
    serve = by_name("Deployment", "serve")
    c, words = agentjail_container(serve)
    keys = option(words, "--keys")
    secrets = {v["name"]: v["secret"] for v in pod_spec(serve)["volumes"] if "secret" in v}
    mounts = [m for m in c["volumeMounts"] if m["name"] in secrets]
    assert any(keys.startswith(m["mountPath"].rstrip("/") + "/") and m.get("readOnly") for m in mounts), (
        f"--keys {keys} is not in a read-only Secret mount"
    )
    names = {s["secretName"] for s in secrets.values()}
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    for name in names:
        assert f"create secret generic {name} --from-file=keys.json" in readme


# --- Kubernetes: workers -------------------------------------------------------------


def test_there_are_workers_in_the_kustomization():
    listed = load(KUBE / "kustomization.yaml")[0]["resources"]
    assert any(p.parent == KUBE and p.name in listed for p, _ in workers())


@pytest.mark.parametrize("path,obj", workers(), ids=lambda x: getattr(x, "name", None) or x["metadata"]["name"])
def test_each_worker_names_its_tier_and_the_queue(path, obj):
    _, words = agentjail_container(obj)
    assert "worker" in words
    tier = option(words, "--tier")
    assert tier in TIERS, f"{path.name}: --tier {tier!r}"
    assert pod_labels(obj).get("agentjail/tier") == tier, f"{path.name}: labelled for another tier"
    assert (option(words, "--queue") or "").startswith("redis://")
    assert option(words, "--name"), f"{path.name}: no --name: two workers could look alike to Redis"


@pytest.mark.parametrize("path,obj", workers(), ids=lambda x: getattr(x, "name", None) or x["metadata"]["name"])
def test_each_worker_shares_the_node_uid_slots_and_stays_off_the_node_namespaces(path, obj):
    spec = pod_spec(obj)
    for host in ("hostPID", "hostIPC", "hostNetwork"):
        assert spec.get(host) is False, f"{path.name}: {host} must be false"
    slot_volumes = {
        v["name"] for v in spec["volumes"] if v.get("hostPath", {}).get("path") == "/run/agentjail"
    }
    c, _ = agentjail_container(obj)
    assert any(
        m["mountPath"] == "/run/agentjail" and m["name"] in slot_volumes for m in c["volumeMounts"]
    ), f"{path.name}: /run/agentjail is not the node's: two pods could give runs the same uid"


def test_privileges_match_each_tier():
    seen = set()
    for path, w in workers():
        c, words = agentjail_container(w)
        tier = option(words, "--tier")
        seen.add(tier)
        sec = security(w, c)
        caps = sec.get("capabilities", {})
        host_paths = {v["hostPath"]["path"] for v in pod_spec(w)["volumes"] if "hostPath" in v}
        assert sec.get("readOnlyRootFilesystem") is True, f"{path.name}: writable root"
        if tier in ("container", "gvisor"):
            # cgroups in /sys/fs/cgroup: writable only to a privileged container.
            assert sec.get("privileged") is True
            mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
            assert mounts["/var/lib/agentjail/images"].get("readOnly") is True
        else:
            # Only the container and gvisor tiers are privileged.
            assert not sec.get("privileged"), f"{path.name}: {tier} worker is privileged"
            assert "ALL" in caps.get("drop", []), f"{path.name}: keeps default capabilities"
        if tier in ("process", "microvm"):
            assert "SYS_ADMIN" in caps.get("add", []), f"{path.name}: cannot make namespaces"
        if tier == "docker":
            assert "/var/run/docker.sock" in host_paths
            assert not caps.get("add"), f"{path.name}: the engine does the privileged work"
            assert sec.get("allowPrivilegeEscalation") is False
        else:
            assert "/var/run/docker.sock" not in host_paths, f"{path.name}: docker.sock is root on the node"
    assert {"process", "container"} <= seen


def test_optional_tiers_are_not_in_the_kustomization():
    listed = load(KUBE / "kustomization.yaml")[0]["resources"]
    optional = sorted((KUBE / "optional").glob("*.yaml"))
    assert optional, "optional/ is empty"
    assert not any(str(p.relative_to(KUBE)) in listed for p in optional)


# --- systemd -----------------------------------------------------------------------


def unit_files():
    return sorted(SYSTEMD.glob("*.service"))


def parse_unit(path):
    """A unit file as {section: [(key, value), ...]}: systemd's syntax
    (comments, continued lines, repeated keys), which configparser lacks."""
    sections, current, pending = {}, None, ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#;":
            continue
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            assert current not in sections, f"{path.name}: [{current}] twice"
            sections[current] = []
            continue
        assert current, f"{path.name}: {line!r} before any section"
        assert "=" in line, f"{path.name}: not KEY=VALUE: {line!r}"
        key, value = line.split("=", 1)
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", key.strip()), f"{path.name}: key {key!r}"
        sections[current].append((key.strip(), value.strip()))
    return sections


def values(unit, section, key):
    return [v for k, v in unit.get(section, []) if k == key]


def value(unit, section, key, default=None):
    v = values(unit, section, key)
    return v[-1] if v else default


def environment(unit):
    """The variables the unit's Environment= lines set."""
    env = {}
    for line in values(unit, "Service", "Environment"):
        for word in shlex.split(line):
            k, v = word.split("=", 1)
            env[k] = v
    return env


def env_file():
    env = {}
    for line in (SYSTEMD / "agentjail.env").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            k, v = line.split("=", 1)
            env[k] = shlex.split(v)[0] if v else ""
    return env


def exec_words(unit, env):
    """ExecStart as systemd will run it, with ${VAR} and $VAR expanded."""
    cmd = value(unit, "Service", "ExecStart")
    words = []
    for w in cmd.split():
        m = re.fullmatch(r"\$\{(\w+)\}", w)
        if m:
            words.append(env.get(m.group(1), ""))
        elif re.fullmatch(r"\$(\w+)", w):
            words += env.get(w[1:], "").split()
        else:
            words.append(w)
    return words


def seconds(text):
    m = re.fullmatch(r"(\d+)\s*(s|sec|min)?", text)
    assert m, f"time {text!r}"
    return int(m.group(1)) * (60 if m.group(2) == "min" else 1)


@pytest.mark.parametrize("path", unit_files(), ids=lambda p: p.name)
def test_unit_parses_and_starts_agentjail(path):
    unit = parse_unit(path)
    assert {"Unit", "Service", "Install"} <= set(unit), f"{path.name}: sections {set(unit)}"
    assert value(unit, "Unit", "Description")
    exec_start = values(unit, "Service", "ExecStart")
    assert len(exec_start) == 1
    words = exec_start[0].split()
    assert words[0] == "/usr/local/bin/agentjail"
    assert words[1] in ("serve", "worker"), f"{path.name}: ExecStart runs {words[1]!r}"
    assert value(unit, "Install", "WantedBy") == "multi-user.target"


@pytest.mark.parametrize("path", unit_files(), ids=lambda p: p.name)
def test_unit_works_without_the_env_file_and_the_env_file_sets_only_what_it_uses(path):
    unit = parse_unit(path)
    cmd = value(unit, "Service", "ExecStart")
    used = set(re.findall(r"\$\{?(\w+)\}?", cmd))
    defaults = environment(unit)
    assert used <= set(defaults), f"{path.name}: {used - set(defaults)} unset without /etc/default/agentjail"
    assert value(unit, "Service", "EnvironmentFile") == "-/etc/default/agentjail"
    assert set(env_file()) >= used, f"agentjail.env lacks {used - set(env_file())}"


@pytest.mark.parametrize("path", unit_files(), ids=lambda p: p.name)
def test_unit_stops_gracefully_for_longer_than_a_run(path):
    unit = parse_unit(path)
    assert value(unit, "Service", "KillSignal") == "SIGTERM"
    stop = seconds(value(unit, "Service", "TimeoutStopSec"))
    # With the unit's own defaults, and with agentjail.env installed.
    for env in (environment(unit), {**environment(unit), **env_file()}):
        words = exec_words(unit, env)
        timeout = float(option(words, "--timeout") or DEFAULT_TIMEOUT)
        need = timeout + (DEFAULT_MAX_WAIT if words[1] == "serve" else 0)
        assert stop > need, f"{path.name}: TimeoutStopSec={stop}, a run may take {need} s"
    if value(unit, "Service", "User") is None:
        # Root units: runs and QEMUs live in the unit's cgroup, and SIGTERM
        # must reach only serve/worker, which then finish them.
        assert value(unit, "Service", "KillMode") == "mixed"


def test_local_serve_runs_the_runs_and_keeps_the_slot_dir():
    unit = parse_unit(SYSTEMD / "agentjail-serve.service")
    words = exec_words(unit, environment(unit))
    assert words[1] == "serve" and option(words, "--queue") is None
    assert option(words, "--keys"), "without --keys serve prints a key into the journal"
    assert option(words, "--state-dir") == "/run/agentjail"
    assert "agentjail" in value(unit, "Service", "RuntimeDirectory").split()
    assert value(unit, "Service", "RuntimeDirectoryPreserve") == "yes"
    assert value(unit, "Service", "User") is None, "the tiers need root"
    assert value(unit, "Service", "ProtectSystem") == "strict"
    # Each of these would break a tier (the unit's comments say which).
    for key in ("PrivateDevices", "ProtectControlGroups", "ProtectKernelTunables",
                "RestrictNamespaces", "MemoryDenyWriteExecute", "ProtectHostname",
                "ProtectClock", "PrivateUsers"):
        assert value(unit, "Service", key) in (None, "no"), f"{key} breaks a tier"


def test_queue_serve_has_no_privilege():
    unit = parse_unit(SYSTEMD / "agentjail-serve-queue.service")
    words = exec_words(unit, environment(unit))
    assert words[1] == "serve"
    assert (option(words, "--queue") or "").startswith("redis://")
    assert option(words, "--keys")
    assert value(unit, "Service", "User") not in (None, "root", "0")
    assert value(unit, "Service", "DynamicUser") in (None, "no")
    assert value(unit, "Service", "NoNewPrivileges") == "yes"
    assert values(unit, "Service", "CapabilityBoundingSet") == [""]
    # It runs nothing, so it keeps every protection a plain HTTP server can.
    for key in ("ProtectSystem",):
        assert value(unit, "Service", key) == "strict"
    for key in ("RestrictNamespaces", "PrivateUsers", "PrivateDevices", "PrivateTmp",
                "ProtectHome", "ProtectKernelTunables", "ProtectKernelModules",
                "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock", "ProtectHostname",
                "MemoryDenyWriteExecute", "RestrictSUIDSGID", "LockPersonality"):
        assert value(unit, "Service", key) == "yes", f"{key} is not set"
    assert option(words, "--state-dir") == "/run/" + value(unit, "Service", "RuntimeDirectory")


def test_worker_template_takes_its_tier_from_the_instance_name():
    unit = parse_unit(SYSTEMD / "agentjail-worker@.service")
    words = exec_words(unit, environment(unit))
    assert words[1] == "worker"
    assert option(words, "--tier") == "%i"
    assert (option(words, "--queue") or "").startswith("redis://")
    assert "%i" in (option(words, "--name") or "")


def verify_copies(tmp_path):
    """The units with ExecStart's binary swapped for /bin/true (agentjail is
    not installed here), the template as one instance per tier."""
    out = []
    for path in unit_files():
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"^ExecStart=/usr/local/bin/agentjail", "ExecStart=/bin/true", text, flags=re.M)
        names = [path.name.replace("@.", f"@{t}.") for t in sorted(TIERS)] if "@." in path.name else [path.name]
        (tmp_path / path.name).write_text(text, encoding="utf-8")
        out += [tmp_path / n for n in names]
    return out


def systemd_analyze(tmp_path):
    tool = shutil.which("systemd-analyze")
    if not tool:
        pytest.skip("systemd-analyze is not installed: the units are checked by the parser above only")
    # A unit known to be good: if even that fails, verify cannot run here
    # (no systemd at all), and that is no fault of these units.
    probe = tmp_path / "agentjail-probe.service"
    probe.write_text("[Unit]\nDescription=probe\n[Service]\nExecStart=/bin/true\n", encoding="utf-8")
    r = subprocess.run([tool, "verify", str(probe)], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        pytest.skip(f"systemd-analyze verify cannot run here: {r.stderr.strip()[:300]}")
    probe.unlink()
    return tool


def test_systemd_analyze_verify(tmp_path):
    tool = systemd_analyze(tmp_path)
    units = verify_copies(tmp_path)
    r = subprocess.run(
        [tool, "verify", *map(str, units)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    ours = [l for l in r.stderr.splitlines() if "agentjail" in l]
    assert r.returncode == 0 and not ours, r.stderr


def test_systemd_analyze_security_of_the_queue_front_end(tmp_path):
    tool = systemd_analyze(tmp_path)
    verify_copies(tmp_path)
    exposure = r"Overall exposure level for \S+: ([\d.]+)"

    def security(unit):
        return subprocess.run(
            [tool, "security", "--offline=yes", "--no-pager", str(unit)],
            capture_output=True, text=True, timeout=60,
        )
    # Whether this systemd rates units offline at all, asked of a unit known
    # to be good: never judged from the answer about ours.
    probe = tmp_path / "agentjail-probe.service"
    probe.write_text("[Unit]\nDescription=probe\n[Service]\nExecStart=/bin/true\n", encoding="utf-8")
    p = security(probe)
    probe.unlink()
    if not re.search(exposure, p.stdout + p.stderr):
        pytest.skip(f"systemd-analyze security --offline is not supported here: {p.stderr.strip()[:300]}")
    unit = tmp_path / "agentjail-serve-queue.service"
    r = security(unit)
    m = re.search(exposure, r.stdout + r.stderr)
    assert m, r.stdout + r.stderr
    # systemd's scale: 0 (locked down) to 10; under 2 is "OK". The front end
    # runs nothing, so it has no excuse for more.
    assert float(m.group(1)) < 2.0, r.stdout


# --- README -----------------------------------------------------------------------------


def test_readme_mentions_every_file():
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    for path in sorted(DEPLOY.rglob("*")):
        if path.is_file() and path.name != "README.md":
            assert path.name in readme, f"deploy/README.md does not mention {path.relative_to(DEPLOY)}"
