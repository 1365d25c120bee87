"""The thin API layer (targets/kubernetes/k8s_api.py) and the plan's node checks
(k8s_cluster.py) on what a real cluster answered: a kubeadm 1.28 cluster's nodes, pods and
events as `kubectl cluster-info dump` recorded them (tests/fixtures/kubernetes/real/,
SOURCES.md). The JSON is served over HTTP on 127.0.0.1 and read by the real `kubernetes`
client (its REST calls, urllib3, its deserialisation into V1Node/V1Pod/CoreV1Event), so
what is tested is everything nettune does with a real answer short of a real API server."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from nettune.errors import NettuneError
from nettune.studyfile.kubernetes_target import KubernetesTargetSpec
from nettune.targets.kubernetes.k8s_api import KubeApi
from nettune.targets.kubernetes.k8s_cluster import check_nodes
from nettune.targets.kubernetes.k8s_hosts import ask_cluster

REAL = Path(__file__).parent / "fixtures" / "kubernetes" / "real"
NODE = "k8s-controller-01"


def _load(name: str) -> dict:
    return json.loads((REAL / f"kubeadm-1.28-{name}.json").read_text())


class _Recorded(BaseHTTPRequestHandler):
    """GET /api/v1/nodes, a pod by name, and a pod's events (the field selector applied as
    the API server applies it), from the recorded lists."""

    nodes, pods, events = _load("nodes"), _load("pods"), _load("events")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")
        body: dict | None = None
        if url.path == "/api/v1/nodes":
            body = self.nodes
        elif len(parts) == 6 and parts[4] == "pods":
            body = next((p for p in self.pods["items"] if p["metadata"]["name"] == parts[5] and p["metadata"]["namespace"] == parts[3]), None)
        elif len(parts) == 5 and parts[4] == "events":
            want = dict(kv.split("=", 1) for kv in parse_qs(url.query).get("fieldSelector", [""])[0].split(",") if kv)
            items = [e for e in self.events["items"] if e["metadata"]["namespace"] == parts[3]
                     and want.get("involvedObject.name", e["involvedObject"]["name"]) == e["involvedObject"]["name"]
                     and want.get("type", e["type"]) == e["type"]]
            body = {**self.events, "items": items}
        data = json.dumps(body if body is not None else {"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"}).encode()
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorded)
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: recorded
  cluster: {{server: "http://127.0.0.1:{server.server_address[1]}"}}
users:
- name: me
  user: {{token: "t"}}
contexts:
- name: kubeadm
  context: {{cluster: recorded, user: me}}
current-context: kubeadm
""")
    try:
        yield KubeApi(None, str(cfg))
    finally:
        server.shutdown()
        server.server_close()
        t.join()


def spec(**kw) -> KubernetesTargetSpec:
    return KubernetesTargetSpec.model_validate({"kind": "kubernetes", **kw})


def test_a_real_node_reads_as_its_kernel_kubelet_taints_and_readiness(api):
    (n,) = api.node_info()
    assert (n.name, n.kernel, n.kubelet) == (NODE, "6.8.0-47-generic", "v1.28.14")
    assert n.taints == [("node-role.kubernetes.io/control-plane", "", "NoSchedule"), ("node.kubernetes.io/not-ready", "", "NoSchedule")]
    assert not n.ready and n.not_ready.startswith("KubeletNotReady: container runtime network not ready") and "cni plugin not initialized" in n.not_ready


def test_a_not_ready_node_is_refused_with_its_condition_never_with_a_toleration(api):
    infos = {n.name: n for n in api.node_info()}
    with pytest.raises(NettuneError) as e:
        check_nodes(spec(nodes=[NODE]), infos, "kubeadm")
    assert f"node {NODE} is not Ready (KubeletNotReady: container runtime network not ready" in str(e.value)
    assert "tolerations" not in str(e.value)
    # the same node once its CNI is up (Ready, the not-ready taint gone): the control-plane taint needs a toleration, printed as TOML
    infos[NODE].ready, infos[NODE].taints = True, infos[NODE].taints[:1]
    with pytest.raises(NettuneError, match=r'add \[target\] tolerations = \[\{ key = "node-role.kubernetes.io/control-plane", operator = "Exists", effect = "NoSchedule" \}\]'):
        check_nodes(spec(nodes=[NODE]), infos, "kubeadm")
    check_nodes(spec(nodes=[NODE], tolerations=[{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]),
                infos, "kubeadm")
    # a condition's taint on a Ready node (cordoned, under pressure): the condition, not a toleration
    infos[NODE].taints = [("node.kubernetes.io/disk-pressure", "", "NoSchedule")]
    with pytest.raises(NettuneError, match="which Kubernetes sets for a node condition") as e:
        check_nodes(spec(nodes=[NODE]), infos, "kubeadm")
    assert "tolerations" not in str(e.value)


def test_nettune_hosts_says_a_named_node_is_not_ready(api, monkeypatch):
    from nettune.targets.kubernetes import kubernetes as k8s

    monkeypatch.setattr(k8s, "API_FACTORY", lambda s, *flags: _Versioned(api))
    answer = ask_cluster(spec(nodes=[NODE], node_access=True))
    assert answer.version == "v1.28.15" and not answer.missing
    ok, why = answer.status(f"node:{NODE}")
    assert not ok and why.startswith(f"node {NODE} is not Ready (KubeletNotReady: ")
    assert answer.status("api-server")[0] is False


class _Versioned:
    """The recorded API with the server version its kube-apiserver logged ("Version:
    v1.28.15"): the dump holds no GET /version answer to serve."""

    def __init__(self, api: KubeApi):
        self.api = api

    def server_version(self) -> str:
        return "v1.28.15"

    def node_info(self):
        return self.api.node_info()


def test_a_real_pending_pod_says_why_and_its_warning_events(api):
    st = api.pod("kube-system", "coredns-5dd5756b68-2zrhr")
    assert (st.phase, st.ready, st.node, st.ip, st.reason) == ("Pending", False, None, None, "Unschedulable")
    assert "untolerated taint {node.kubernetes.io/not-ready: }" in st.message
    assert api.pod_events("kube-system", "coredns-5dd5756b68-2zrhr") == [
        "FailedScheduling: 0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.."]
    run = api.pod("kube-system", "kube-proxy-p4jmn")
    assert (run.phase, run.ready, run.node, run.ip, run.reason) == ("Running", True, NODE, "192.168.1.105", "")
    assert api.pod("kube-system", "no-such-pod") is None
