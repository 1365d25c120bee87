"""`nettune k8s clean` and pairs over nodes, against the recording fake of the API layer."""
import pytest

from nettune import parse_study
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.targets.kubernetes import kubernetes as k8s
from nettune.targets import make_target
from nettune.targets.kubernetes.k8s_clean import clean_cluster

from conftest import needs_iperf3
from k8s_fake import FakeKube


@pytest.fixture
def fake(monkeypatch, tmp_path):
    f = FakeKube()
    monkeypatch.setattr(k8s, "API_FACTORY", lambda spec, *flags: f)
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))
    return f


def study(name: str, target: str = "", workload: str = "") -> object:
    return parse_study(f'name = "{name}"\n[target]\nkind = "kubernetes"\nready_timeout = 2\n{target}\n[workload]\nduration = 1\n{workload}\n')


def test_clean_removes_what_killed_runs_left_and_only_that(fake):
    a = make_target(study("left-a"))  # never closed: as after kill -9
    b = make_target(study("left-b"))
    fake.objects[("Pod", "other", "someone-elses")] = {"metadata": {"labels": {"app": "web"}}}
    found, failed = clean_cluster(None, None, "left-a", None, dry_run=True)
    assert {f[0] for f in found} == {"Namespace", "Pod"} and len(found) == 3 and not failed
    assert ("Namespace", None, a.names.namespace) in fake.objects  # a dry run deletes nothing
    found, failed = clean_cluster(None, None, "left-a", None)
    assert [f[0] for f in found] == ["Pod", "Pod", "Namespace"]  # pods first, namespaces last
    assert not any(k[1] == a.names.namespace or k[2] == a.names.namespace for k in fake.objects)
    assert ("Namespace", None, b.names.namespace) in fake.objects
    found, _ = clean_cluster(None, None, None, b.names.run)
    assert len(found) == 3
    assert set(fake.objects) == {("Pod", "other", "someone-elses")}  # never an object nettune did not make
    assert fake.calls[-4][0] == "find" and fake.calls[-4][1] == f"app.kubernetes.io/managed-by=nettune,nettune/run={b.names.run}"


@needs_iperf3
def test_mesh_over_nodes_one_pinned_pod_each(fake, tmp_path):
    s = study("mesh", 'pods = "per-node"\nnodes = ["n1", "n2", "n3"]', 'pairs = "mesh"')
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(s, store, doctor=False)
        runs = store.runs(out.study_id)
    assert out.status == "done" and out.failed == 0
    pairs = sorted(r["extra"]["pair"] for r in runs)
    assert len(pairs) == 3 and all(r["receiver_bps"] > 0 for r in runs)
    ns = fake.made()[0][2]
    assert {fake.placed[(ns, f"nettune-{n}")] for n in ("n1", "n2", "n3")} == {"n1", "n2", "n3"}
    assert fake.objects == {}


@needs_iperf3
def test_via_service_connects_to_the_cluster_ip(fake, tmp_path):
    s = study("svc", 'via = "service"', "bind = false")
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(s, store, doctor=False)
        runs = store.runs(out.study_id)
    assert out.status == "done" and out.failed == 0
    assert [m[0] for m in fake.made()] == ["Namespace", "Pod", "Pod", "Service"]
    assert runs[0]["settings"]["hosts"]["server"]["address"] == "127.0.0.1"  # the fake's ClusterIP
    assert fake.objects == {}


@needs_iperf3
def test_a_run_with_the_host_audit_and_facts_goes_through_exec(fake, tmp_path):
    """The default run (doctor on) audits and collects facts through the pods' exec."""
    s = study("audit", 'node_access = true\nnodes = ["n1", "n2"]')
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(s, store)
        facts = store.facts(out.study_id)
    assert out.status == "done" and out.failed == 0
    assert facts["server"]["pod"] == "nettune-server" and facts["server"]["context"] == "fake-ctx"
    assert facts["node:n1"]["node"] == "n1" and facts["client"]["iperf3_version"]
    assert fake.objects == {}
