"""Study E's settings reach the pods they should, through the recording fake of the API layer
(tests/k8s_fake.py), whose pods get their network namespace's sysctls the way the kernel
gives them (copied from the node at creation, or the node's own: measured on the lab by
tests/test_k8s_sysctl_reach.py) and whose admission is Kubernetes' own (PodSecurity at
create, the kubelet's SysctlForbidden). Real iperf3 on loopback; no cluster exists here."""
import pytest

from nettune import parse_study
from nettune.run.study import run_study  # the run layer: into an open StoreWriter
from nettune.store.writer import StoreWriter
from nettune.errors import NettuneError
from nettune.targets.kubernetes import kubernetes as k8s

from conftest import needs_iperf3
from k8s_fake import install, net_tree, sysctl_tree

pytestmark = needs_iperf3
RMEM = "net.ipv4.tcp_rmem"


@pytest.fixture
def fake(monkeypatch, tmp_path):
    return install(monkeypatch, tmp_path, sysctl_root=tmp_path / "nodes")


def study(target: str, extra: str = "", workload: str = "") -> object:
    return parse_study(f'name = "nettune-t-k8sr"\n[target]\nkind = "kubernetes"\nready_timeout = 2\n{target}\n'
                       f"[workload]\nduration = 1\n{workload}\n{extra}")


def run(s, tmp_path):
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(s, store, doctor=False)
        return out, store.runs(out.study_id), store.facts(out.study_id)


NODE_KNOBS = """
[sweep]
rmem = [6291456, 16777216]
streams = [1, 2]
[repeat]
runs = 2
[knobs]
"sysctl:net.core.rmem_max" = "{rmem}"
"sysctl:net.ipv4.tcp_rmem" = "4096 131072 {rmem}"
[knobs.hosts]
"sysctl:net.core.rmem_max" = ["node:n1", "node:n2"]
"sysctl:net.ipv4.tcp_rmem" = ["node:n1", "node:n2"]
"""


def test_node_knobs_reach_pods_remade_after_them_and_are_read_back(fake, tmp_path):
    """tcp_rmem set on the nodes reaches a pod only if the pod is made after it: nettune
    re-makes the test pods after each change, and every run stores the values read inside
    them. rmem_max is node-level: the pods see the node's at once."""
    sysctl_tree(tmp_path / "nodes", ["n1", "n2"], {"net.core.rmem_max": "212992", RMEM: "4096 131072 6291456"})
    s = study('node_access = true\nnodes = ["n1", "n2"]\nplacement = "cross-node"', NODE_KNOBS, 'parallel = "{streams}"')
    out, runs, _ = run(s, tmp_path)
    assert out.status == "done" and out.failed == 0, [r["error"] for r in runs]
    for r in runs:
        want = r["point"]["rmem"]
        for h in ("server", "client"):
            got = r["settings"]["hosts"][h]["sysctls"]
            assert got[RMEM] == f"4096 131072 {want}", (r["point"], got)  # the point's node value, copied when the pod was made
            assert got["net.core.rmem_max"] == str(want)  # the node's own, seen through
            assert "net.core.netdev_max_backlog" not in got  # absent in a pod's namespace
    # interleaved, twice: #0 (6M) #1 (6M) #2 (16M) #3 (16M); the nodes start at 6M: the pods are
    # re-made after the knobs at #2, #0 and #2 of the second round, and only there
    sets = sorted((r["run"], r["point"]["rmem"] == 16777216, r["point"]["streams"], r["settings"]["test_pods"]["set"], r["settings"]["test_pods"]["why"])
                  for r in runs)
    firsts = [s[:3] for n, s in enumerate(sets) if n == 0 or sets[n - 1][3] != s[3]]
    assert firsts == [(0, False, 1), (0, True, 1), (1, False, 1), (1, True, 1)], sets
    assert all("node value(s) net.ipv4.tcp_rmem changed" in s[4] for s in sets if s[3] > 1)
    made_server = [c for c in fake.calls if c[:2] == ("create", "Pod") and c[3] == "nettune-server"]
    assert len(made_server) == 4  # the first point's and those three
    assert fake.objects == {}


def test_with_the_old_order_a_pod_would_keep_the_previous_points_value(fake, tmp_path):
    """What the run used to do (pods made before the knobs, never re-made for them): the pod
    holds the value of the node when it was made. The fake shows it, so the test above
    can fail."""
    sysctl_tree(tmp_path / "nodes", ["n1"], {RMEM: "4096 131072 6291456"})
    fake.create({"kind": "Namespace", "metadata": {"name": "x", "labels": {}}})
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "x", "labels": {}},
           "spec": {"nodeSelector": {"kubernetes.io/hostname": "n1"}, "containers": []}}
    fake.create(pod)
    sysctl_tree(tmp_path / "nodes", ["n1"], {RMEM: "4096 131072 16777216"})  # the knob, after the pod
    assert (tmp_path / "nodes/pod-p/proc/sys/net/ipv4/tcp_rmem").read_text().strip() == "4096 131072 6291456"


def test_pod_sysctls_forbidden_by_the_kubelet_fail_that_point_with_the_reason(fake, tmp_path):
    """A 1.32 server admits tcp_rmem (PodSecurity) but node n2 still runs a 1.29 kubelet: the
    plan warns with the kubelet flag for n2, the kubelet rejects the pod placed there
    (SysctlForbidden), and only the cross-node point, whose client lands on n2, fails."""
    fake.version, fake.kubelets["n2"] = "v1.32.1", "v1.29.9"
    s = study('nodes = ["n1", "n2"]\nplacement = "{placement}"\npod_sysctls = { "net.ipv4.tcp_rmem" = "4096 87380 8388608" }',
              '[sweep]\nplacement = ["same-node", "cross-node"]')
    t = k8s.KubeTarget(s)  # what the run says before the study
    t.close()
    assert any("pod sysctl net.ipv4.tcp_rmem is not safe" in n and "nodes n2 need kubelet --allowed-unsafe-sysctls=net.ipv4.tcp_rmem" in n
               for n in t.warnings), t.warnings
    out, runs, _ = run(s, tmp_path)
    assert out.status == "done" and out.failed == 1
    ok, bad = runs
    assert ok["ok"] and ok["settings"]["hosts"]["client"]["sysctls"][RMEM] == "4096 87380 8388608"
    assert 'SysctlForbidden: Pod was rejected: forbidden sysctl: "net.ipv4.tcp_rmem" not allowlisted' in bad["error"]
    assert fake.objects == {}


def test_pod_sysctls_safe_on_a_newer_cluster_are_set_in_the_pod(fake, tmp_path):
    fake.version = "v1.32.4"
    s = study('pod_sysctls = { "net.ipv4.tcp_rmem" = "4096 87380 8388608" }')
    out, runs, facts = run(s, tmp_path)
    assert out.failed == 0, runs[0]["error"]
    assert runs[0]["settings"]["hosts"]["client"]["sysctls"][RMEM] == "4096 87380 8388608"
    assert runs[0]["settings"]["server_version"] == "v1.32.4" and facts["client"]["cluster"]["server_version"] == "v1.32.4"
    ns = next(m for m in fake.manifests if m["kind"] == "Namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"  # safe sysctls, hardened pods: enough


def test_a_given_namespace_whose_podsecurity_is_too_strict_is_refused_first(fake, tmp_path):
    fake.objects[("Namespace", None, "perf")] = {"metadata": {"name": "perf", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}
    with pytest.raises(NettuneError, match=r"namespace perf enforces PodSecurity 'baseline'; the pods need 'privileged' .*"
                                           r"kubectl label namespace perf pod-security.kubernetes.io/enforce=privileged"):
        run(study('namespace = "perf"\nnode_access = true\nnodes = ["n1", "n2"]'), tmp_path)
    assert fake.made() == []
    with pytest.raises(NettuneError, match=r"\[target\] namespace 'nope' does not exist"):
        run(study('namespace = "nope"'), tmp_path)


def test_hardened_test_pods_pass_podsecurity_restricted(fake, tmp_path):
    """A namespace enforcing restricted takes the test pods (PodSecurity's restricted checks,
    from its sources); running them as root it refuses, before anything is made."""
    fake.objects[("Namespace", None, "given")] = {"metadata": {"name": "given", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    out, runs, _ = run(study('namespace = "given"'), tmp_path)
    assert out.failed == 0, runs[0]["error"]
    for m in (m for m in fake.manifests if m["kind"] == "Pod"):
        sc, c = m["spec"]["securityContext"], m["spec"]["containers"][0]
        assert sc["runAsNonRoot"] and sc["runAsUser"] == 65534 and sc["seccompProfile"] == {"type": "RuntimeDefault"}
        assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
        assert m["spec"]["automountServiceAccountToken"] is False and "@sha256:" in c["image"]
        assert c["resources"]["requests"] == c["resources"]["limits"] == {"cpu": "2", "memory": "1Gi"}  # Guaranteed QoS
    with pytest.raises(NettuneError, match="enforces PodSecurity 'restricted'; the pods need 'baseline'"):
        run(study('namespace = "given"\nrun_as_user = 0'), tmp_path)


def test_tainted_nodes_need_tolerations_and_pods_tolerate_only_those(fake, tmp_path):
    fake.taints["n2"] = [("dedicated", "perf", "NoSchedule")]
    with pytest.raises(NettuneError, match=r'node n2 has taint\(s\) dedicated=perf:NoSchedule that the pods do not tolerate; add '
                                           r'\[target\] tolerations = \[\{ key = "dedicated", operator = "Equal", value = "perf", effect = "NoSchedule" \}\]'):
        run(study('node_access = true\nnodes = ["n1", "n2"]'), tmp_path)
    assert fake.made() == []
    tol = 'tolerations = [{ key = "dedicated", operator = "Equal", value = "perf", effect = "NoSchedule" }]'
    out, runs, _ = run(study(f'node_access = true\nnodes = ["n1", "n2"]\n{tol}'), tmp_path)
    assert out.failed == 0, runs[0]["error"]
    pods = [m for m in fake.manifests if m["kind"] == "Pod"]
    assert {fake.placed[(m["metadata"]["namespace"], m["metadata"]["name"])] for m in pods} == {"n1", "n2"}
    for m in pods:  # node pods too: the study's toleration, never "tolerate everything"
        assert m["spec"]["tolerations"] == [{"key": "dedicated", "operator": "Equal", "value": "perf", "effect": "NoSchedule"}]


def test_an_evicted_pod_fails_its_test_with_the_reason_and_is_remade(fake, tmp_path):
    def evict(pod, argv):
        if pod == "nettune-client" and "iperf3" in argv and "-c" in argv[argv.index("iperf3"):] and not fake.evicted.get("done"):
            fake.evicted["nettune-client"] = "The node was low on resource: memory."
            fake.evicted["done"] = "1"

    fake.on_exec = evict
    s = study('placement = "cross-node"', "[sweep]\nstreams = [1, 2]", 'parallel = "{streams}"')
    out, runs, _ = run(s, tmp_path)
    assert out.failed == 1
    bad, ok = runs
    assert "Evicted: The node was low on resource: memory." in bad["error"]
    assert ok["ok"] and ok["settings"]["test_pods"]["why"].startswith("re-made: nettune-client")


def test_cpu_throttling_of_a_test_pod_is_recorded(fake, tmp_path):
    fake.cgroup_root = tmp_path / "cg"
    for pod in ("nettune-server", "nettune-client"):
        (fake.cgroup_root / f"pod-{pod}").mkdir(parents=True)
        (fake.cgroup_root / f"pod-{pod}/cpu.stat").write_text("usage_usec 1000\nnr_periods 10\nnr_throttled 0\nthrottled_usec 0\n")

    def throttle(pod, argv):
        if "iperf3" in argv and "-c" in argv[argv.index("iperf3"):]:
            (fake.cgroup_root / "pod-nettune-client/cpu.stat").write_text("usage_usec 900000\nnr_periods 20\nnr_throttled 7\nthrottled_usec 350000\n")

    fake.on_exec = throttle
    out, runs, _ = run(study("cpu = 1"), tmp_path)
    r = runs[0]
    assert r["extra"]["cgroup_throttling"]["pod:client"] == {"nr_periods": 10, "nr_throttled": 7, "throttled_usec": 350000}
    assert r["extra"]["cgroup_throttling"]["pod:server"] == {"nr_periods": 0, "nr_throttled": 0, "throttled_usec": 0}
    assert any("pod:client was CPU-throttled in 7 of 10 periods (0.350 s)" in w for w in r["warnings"])
    assert next(m for m in fake.manifests if m["kind"] == "Pod")["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "1"


def test_pod_and_node_mtu_are_host_facts(fake, tmp_path):
    fake.net_root = tmp_path / "net"
    for pod in ("nettune-server", "nettune-client"):
        net_tree(fake.net_root, f"pod-{pod}", "eth0", 1450)
    for node in ("n1", "n2"):
        net_tree(fake.net_root, node, "ens5", 9001)
    out, runs, facts = run(study('node_access = true\nnodes = ["n1", "n2"]'), tmp_path)
    assert out.failed == 0, runs[0]["error"]
    assert facts["client"]["cni_mtu"] == 1450 and facts["client"]["interface"] == "eth0" and facts["client"]["node_mtu"] == 9001
    assert facts["node:n1"]["mtu"] == 9001 and facts["node:n1"]["interface"] == "ens5"


def test_what_the_target_says_reaches_the_run(fake, tmp_path):
    """Target warnings used to go nowhere: said before the study (here: an image by tag) and,
    what it found since (objects it could not delete), in the run's outcome."""
    def down(pod, argv):
        if "iperf3" in argv and "-c" in argv[argv.index("iperf3"):]:
            fake.down = True

    fake.on_exec = down
    from nettune.run.study import NoProgress

    said = []

    class Said(NoProgress):
        def message(self, text: str) -> None:
            said.append(text)

    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(study('image = "nicolaka/netshoot:v0.13"'), store, doctor=False, progress=Said())
    assert any("image nicolaka/netshoot:v0.13 is a tag, not a digest" in m for m in said), said
    assert any("nettune k8s clean --context fake-ctx --run" in w for w in out.warnings), out.warnings
