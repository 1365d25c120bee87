"""The kubernetes target's logic against a recording fake of its API layer
(tests/k8s_fake.py): placement, waits, exec (real iperf3/iperf on loopback), failure
paths, cleanup at the end, on error and on SIGTERM. No cluster exists on this machine."""
import os
import signal

import pytest

from nettune import parse_study
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.errors import NettuneError

from conftest import needs_iperf2, needs_iperf3
from k8s_fake import install

pytestmark = needs_iperf3


def study(target: str, workload: str = "", extra: str = "") -> object:
    return parse_study(study_text(target, workload, extra))


def study_text(target: str, workload: str = "", extra: str = "") -> str:
    return (f"""
name = "nettune-t-k8s"
[target]
kind = "kubernetes"
ready_timeout = 2
{target}
[workload]
duration = 1
{workload}
{extra}
""")


@pytest.fixture
def fake(monkeypatch, tmp_path):
    return install(monkeypatch, tmp_path, sysctl_root=tmp_path / "nodes")


def is_client(argv):
    """An iperf3 client command (not the PATH search `sh -c SCRIPT sh iperf3`)."""
    return "iperf3" in argv and "-c" in argv[argv.index("iperf3"):]


def run(s, tmp_path):
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(s, store, doctor=False)
        return out, store.runs(out.study_id)


def test_cross_then_same_node_real_iperf3_and_everything_deleted(fake, tmp_path):
    s = study('placement = "{placement}"', extra='[sweep]\nplacement = ["cross-node", "same-node"]')
    out, runs = run(s, tmp_path)
    assert out.status == "done" and out.failed == 0, runs
    assert all(r["receiver_bps"] and r["receiver_bps"] > 0 for r in runs)
    made = fake.made()
    ns = made[0][2]
    assert made[0] == ("Namespace", None, ns) and ns.startswith("nettune-nettune-t-k8s-")
    # the server first, then the client placed relative to it; re-created when placement changes
    assert [m for m in made if m[0] == "Pod"] == [("Pod", ns, "nettune-server"), ("Pod", ns, "nettune-client")] * 2
    nodes = [fake.placed[(ns, "nettune-server")], fake.placed[(ns, "nettune-client")]]
    assert nodes[0] == nodes[1]  # the last point is same-node
    for r in runs:  # each pod's own CPU from its cgroup (here: this machine's root cgroup), in % of the node's cores
        assert 0 < r["cpu_extra"]["pod:server"] <= 100 and 0 < r["cpu_extra"]["pod:client"] <= 100, r["cpu_extra"]
    read = {e[2] for e in fake.execs("nettune-client") if e[:2] == ("cat", "--")}
    assert "/sys/fs/cgroup/cpu.stat" in read  # cgroup v2 first; v1 (cpuacct.usage) where v2 is absent, as here
    assert os.path.exists("/sys/fs/cgroup/cpu.stat") or "/sys/fs/cgroup/cpuacct/cpuacct.usage" in read
    settings = [r["settings"] for r in runs]
    assert [x["same_node"] for x in settings] == [False, True]
    # the engines ran through exec, under the PID wrapper, and were parsed for real
    server_execs = [e for e in fake.execs("nettune-server") if "iperf3" in e and "-s" in e]
    assert len(server_execs) == 2 and server_execs[0][:2] == ("sh", "-c") and "NETTUNE-RUSAGE" in server_execs[0][2]
    # the end: the namespace deleted (its pods with it), nothing of ours left
    assert fake.calls[-1] == ("delete", "Namespace", None, ns)
    assert fake.objects == {}


@needs_iperf2
def test_iperf2_udp_reverse_named_nodes_in_a_given_namespace(fake, tmp_path):
    fake.objects[("Namespace", None, "given")] = {"metadata": {"labels": {}}}
    s = study('namespace = "given"\nplacement = { server = "n3", client = "n1" }', 'engine = "iperf2"\nprotocol = "udp"\nbitrate = "10M"')
    out, runs = run(s, tmp_path)
    assert out.status == "done" and out.failed == 0, runs[0]["error"]
    assert fake.placed[("given", "nettune-server")] == "n3" and fake.placed[("given", "nettune-client")] == "n1"
    deleted = [c[1:] for c in fake.calls if c[0] == "delete"]
    assert ("Namespace", None, "given") not in deleted  # not ours: only what nettune made goes
    assert set(deleted) == {("Pod", "given", "nettune-server"), ("Pod", "given", "nettune-client")}
    assert set(fake.objects) == {("Namespace", None, "given")}


def test_pod_never_ready_fails_with_the_reason_and_cleans_up(fake, tmp_path):
    fake.failing["nettune-client"] = ("ImagePullBackOff", 'Back-off pulling image "nope:1"')
    with pytest.raises(NettuneError, match=r"nettune-client \(client\): not Ready after 2s \(ImagePullBackOff: Back-off pulling"):
        run(study(""), tmp_path)
    assert fake.objects == {}  # the namespace made before the failure is gone


def test_hopeless_reason_fails_at_once(fake, tmp_path):
    fake.failing["nettune-server"] = ("SysctlForbidden", "forbidden sysctl: net.core.somaxconn not allowlisted")
    with pytest.raises(NettuneError, match="SysctlForbidden: forbidden sysctl"):
        run(study('pod_sysctls = { "net.core.somaxconn" = 1024 }'), tmp_path)
    assert len(fake.reads) <= 4  # no waiting for a pod that cannot start
    assert fake.objects == {}


def test_a_later_point_whose_pod_cannot_start_fails_only_that_point(fake, tmp_path):
    """same-node first; the cross-node point's client is unschedulable (one node left)."""
    fake.node_names = ["n1"]
    s = study('placement = "{placement}"', extra='[sweep]\nplacement = ["same-node", "cross-node"]')
    out, runs = run(s, tmp_path)
    assert out.status == "done" and out.failed == 1
    ok, bad = runs
    assert ok["ok"] and not bad["ok"]
    assert "nettune-client (client) is not ready" in bad["error"] and "Unschedulable" in bad["error"]
    assert fake.objects == {}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_test_deletes_everything(fake, tmp_path, sig):
    def term(pod, argv):
        if is_client(argv):  # the client is starting: as if `kill PID` (or Ctrl-C) came now
            os.kill(os.getpid(), sig)

    fake.on_exec = term
    with pytest.raises(KeyboardInterrupt):
        run(study(""), tmp_path)
    assert fake.objects == {}
    with StoreWriter(tmp_path / "r.db") as store:
        assert store.studies()[0]["status"] == "interrupted"


def test_api_down_at_the_end_says_how_to_clean(fake, tmp_path):
    out_holder = {}

    def down(pod, argv):
        if is_client(argv):
            fake.down = True

    fake.on_exec = down
    s = study("")
    from nettune.targets import make_target

    t = make_target(s)
    out_holder["t"] = t
    t.hosts["client"].run(["iperf3", "-c", "127.0.0.1", "-t", "0"], timeout=5)
    t.close()
    assert any("nettune k8s clean --context fake-ctx --run " + t.names.run in w for w in t.warnings)


def test_via_service_needs_bind_false(fake, tmp_path):
    with pytest.raises(NettuneError, match="bind = false"):
        run(study('via = "service"'), tmp_path)
    assert fake.calls == []  # refused before anything was created


NODE_KNOBS = """
[sweep]
rmem = [212992, 4194304]
[knobs]
"sysctl:net.core.rmem_max" = "{rmem}"
[knobs.hosts]
"sysctl:net.core.rmem_max" = ["node:n1", "node:n2"]
"""


def node_study_text(extra: str = NODE_KNOBS) -> str:
    return study_text('node_access = true\nnodes = ["n1", "n2"]\nplacement = "cross-node"', extra=extra)


def node_study(extra: str = NODE_KNOBS) -> object:
    return parse_study(node_study_text(extra))


def rmem(tmp_path, node):
    return (tmp_path / "nodes" / node / "proc/sys/net/core/rmem_max").read_text().strip()


def test_node_knobs_through_privileged_pods_journaled_and_restored(fake, tmp_path):
    from k8s_fake import sysctl_tree

    sysctl_tree(tmp_path / "nodes", ["n1", "n2"], {"net.core.rmem_max": "1000"})
    seen = []

    def watch(pod, argv):  # what the node holds while the second point's test runs
        if is_client(argv):
            seen.append((rmem(tmp_path, "n1"), rmem(tmp_path, "n2")))

    fake.on_exec = watch
    out, runs = run(node_study(), tmp_path)
    assert out.status == "done" and out.failed == 0, runs
    assert seen == [("212992", "212992"), ("4194304", "4194304")]
    assert rmem(tmp_path, "n1") == rmem(tmp_path, "n2") == "1000"  # restored at the end
    ns = fake.made()[0][2]
    node_pods = [m for m in fake.made() if m[0] == "Pod" and m[2].endswith("-node")]
    assert node_pods == [("Pod", ns, "nettune-n1-node"), ("Pod", ns, "nettune-n2-node")]
    # the test pods were kept to the listed nodes; node CPU sampled through the node pods
    assert {runs[0]["settings"]["hosts"][h]["node"] for h in ("server", "client")} == {"n1", "n2"}
    assert ("cat", "--", "/proc/stat") in fake.execs("nettune-n1-node")
    # the journal says which cluster, node and pod each change went through
    import json

    lines = [json.loads(x) for x in (tmp_path / "state" / "journal.jsonl").read_text().splitlines()]
    reach = [x["place"]["reach"] for x in lines if x.get("place", {}).get("type") == "remote"]
    assert reach and {r["node"] for r in reach} == {"n1", "n2"} and {r["context"] for r in reach} == {"fake-ctx"}
    assert fake.objects == {}


KILLED_RUN = """
import os, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from k8s_fake import FakeKube
from nettune.targets import make_target
from nettune.targets.kubernetes import kubernetes as k8s
from nettune.knobs.apply import KnobSession
from nettune.plan.points import expand_and_check
from nettune import parse_study
fake = FakeKube(sysctl_root=Path({root!r}))
k8s.API_FACTORY = lambda spec, *flags: fake
s = parse_study({text!r})
t = make_target(s)
rp = expand_and_check(s)[1]
t.prepare(rp)
KnobSession(s, t, 1).apply_point(rp)
os._exit(9)  # killed: nothing restored, nothing deleted
"""


def test_restore_after_a_killed_run_reaches_the_node_again(fake, tmp_path):
    """A run killed with node knobs in force: `nettune restore` finds each node by the
    journal's context and node, through a new privileged pod, and deletes that pod."""
    import subprocess
    import sys
    from pathlib import Path

    from k8s_fake import sysctl_tree
    from nettune.knobs.gate import restore_journal

    sysctl_tree(tmp_path / "nodes", ["n1", "n2"], {"net.core.rmem_max": "1000"})
    text = node_study_text()
    code = KILLED_RUN.format(tests=str(Path(__file__).parent), root=str(tmp_path / "nodes"), text=text)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert p.returncode == 9, p.stderr
    assert rmem(tmp_path, "n1") == rmem(tmp_path, "n2") == "4194304"
    report = restore_journal()
    assert rmem(tmp_path, "n1") == rmem(tmp_path, "n2") == "1000", report
    made = fake.made()
    assert [m[0] for m in made] == ["Namespace", "Pod"] * 2  # the killed run's pods are gone with its process here
    assert all((m[1] or m[2]).startswith("nettune-restore-") for m in made)  # (kind, namespace, name)
    assert {fake.placed[(m[1], m[2])] for m in made if m[0] == "Pod"} == {"n1", "n2"}
    assert fake.objects == {}  # the restore's own pods deleted again


def test_a_node_that_does_not_exist_is_refused_before_anything_is_made(fake, tmp_path):
    with pytest.raises(NettuneError, match=r"names node\(s\) n9, not in cluster context 'fake-ctx' \(nodes: n1, n2, n3\)"):
        run(study('placement = { server = "n1", client = "n9" }'), tmp_path)
    assert fake.made() == []


def test_a_node_knob_aimed_at_test_pods_is_refused_when_the_file_is_read(fake, tmp_path):
    """A pod cannot change its own /proc/sys: refused before anything exists (it used to be
    found only once the pods were made)."""
    from nettune.errors import SpecError

    with pytest.raises(SpecError) as e:
        study('placement = "cross-node"', extra='[knobs]\n"sysctl:net.core.rmem_max" = 4194304')
    assert "would act on test pod(s) server, client" in str(e.value) and "node:NAME" in str(e.value) and "\n" not in str(e.value)
    assert fake.calls == []


def test_exec_refused_mid_study_fails_the_test_with_the_reason(fake, tmp_path):
    from nettune.targets.kubernetes.k8s_api import KubeError

    def refuse(pod, argv):
        if is_client(argv):
            raise KubeError("exec in pod nettune-client: 403 Forbidden: pods/exec is forbidden")

    fake.on_exec = refuse
    out, runs = run(study(""), tmp_path)
    assert out.status == "done" and out.failed == 1
    assert "pods/exec is forbidden" in runs[0]["error"]
    assert any(e[:2] == ("kill", "-TERM") for e in fake.execs("nettune-server"))  # the waiting server stopped by its PID
    assert fake.objects == {}
