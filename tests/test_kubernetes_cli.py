"""What a user of the kubernetes target sees without a cluster: one line per bad kubeconfig
(through run, doctor, hosts and k8s clean), a dry run of knobs of every kind, the sysctl
table, and the RBAC example covering what an unprivileged run does."""
import os

import kubernetes_validate
import pytest
import yaml

from nettune import parse_study
from nettune.run.study import run_study  # the run layer: into an open StoreWriter
from nettune.store.writer import StoreWriter
from nettune.targets.kubernetes import kubernetes as k8s

from conftest import EXAMPLES, needs_iperf3, nettune, write_study
from k8s_fake import UNREACHABLE_KUBECONFIG, FakeKube

GOOD = UNREACHABLE_KUBECONFIG
BAD = {
    "not YAML": ("apiVersion: v1\nclusters: [\n  - a: b\n  c: {\n", "not valid YAML at line 3"),
    "a list": ("- a\n- b\n", "a YAML list, not a kubeconfig"),
    "empty": ("", "empty file"),
}


def one_line(p) -> str:
    out = (p.stdout + p.stderr).strip()
    assert "Traceback" not in out and len(out.splitlines()) == 1, out
    return out


def kstudy(tmp_path, target: str = "") -> str:
    return str(write_study(tmp_path, f'name = "kcli"\n[target]\nkind = "kubernetes"\n{target}\n[workload]\nduration = 1\n'))


# every bad file once, the one the issue showed (not YAML) through every way in; each case
# starts nettune (seconds each), so not the whole cross product
@pytest.mark.parametrize("case, via", [("not YAML", "target"), ("not YAML", "env"), ("not YAML", "clean"), ("a list", "env"), ("empty", "clean")])
def test_a_bad_kubeconfig_is_one_line_naming_the_file_and_the_fix(tmp_path, case, via):
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(BAD[case][0])
    if via == "target":
        p = nettune("run", kstudy(tmp_path, f'kubeconfig = "{cfg}"'), "--db", str(tmp_path / "r.db"))
        fix = "fix [target] kubeconfig"
    elif via == "env":
        p = nettune("doctor", kstudy(tmp_path), env={"KUBECONFIG": str(cfg)})
        fix = "fix KUBECONFIG"
    else:
        p = nettune("k8s", "clean", "--kubeconfig", str(cfg))
        fix = "fix --kubeconfig"
    line = one_line(p)
    assert p.returncode != 0 and f"kubeconfig {cfg}: {BAD[case][1]}" in line and fix in line, line


def test_missing_kubeconfig_and_missing_context_name_their_source(tmp_path):
    line = one_line(nettune("k8s", "clean", env={"KUBECONFIG": f"{tmp_path}/a{os.pathsep}{tmp_path}/b"}))
    assert f"kubeconfig {tmp_path}/a, {tmp_path}/b: no such file (from KUBECONFIG); fix KUBECONFIG" in line
    cfg = tmp_path / "good"
    cfg.write_text(GOOD)
    line = one_line(nettune("k8s", "clean", "--kubeconfig", str(cfg), "--context", "prod"))
    assert "has no context 'prod' (--context names it; contexts: lab); fix --context" in line
    p = nettune("hosts", kstudy(tmp_path, f'kubeconfig = "{cfg}"\ncontext = "prod"'), env={"COLUMNS": "400"})
    assert p.returncode == 1 and "api-server: kubeconfig" in p.stdout and "([target] context names it; contexts: lab); fix [target] context" in p.stdout
    assert "Traceback" not in p.stdout + p.stderr and "│ ok" not in p.stdout


def test_an_api_server_that_does_not_answer_fails_hosts(tmp_path):
    cfg = tmp_path / "good"
    cfg.write_text(GOOD)
    p = nettune("hosts", kstudy(tmp_path, f'kubeconfig = "{cfg}"'), env={"COLUMNS": "400"})
    assert p.returncode == 1 and "cannot reach the API server of context 'lab': [Errno 111] Connection refused" in p.stdout
    assert "server: not checked: the cluster does not answer" in p.stdout and "Kubernetes version: unknown until connected" in p.stdout


def test_hosts_with_a_cluster_prints_the_version_it_plans_for(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from nettune.cli.main import app

    fake = FakeKube(nodes=("node-a", "node-b"), version="v1.32.4")
    monkeypatch.setattr(k8s, "API_FACTORY", lambda spec, *flags: fake)
    r = CliRunner().invoke(app, ["hosts", str(EXAMPLES / "study-e.toml")], env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.stdout
    assert "plans for Kubernetes v1.32.4" in r.stdout and "from 1.32, kernel 4.15+: yes here" in r.stdout
    assert r.stdout.count("│ ok") == 5  # api-server, server, client, node:node-a, node:node-b
    fake.node_names = ["node-a"]
    r = CliRunner().invoke(app, ["hosts", str(EXAMPLES / "study-e.toml")], env={"COLUMNS": "300"})
    assert r.exit_code == 1 and "node:node-b: node node-b is not in the cluster" in r.stdout


# a node's default interface is not known before the run (nor read by it): interface knobs name theirs
NEUTRAL = {"cc": '"bbr"', '"mtu@eth0"': "9000", '"sockbuf:max"': "8388608", '"offload:gro@eth0"': '"off"'}


def test_dry_run_of_a_kubernetes_study_with_neutral_knobs(tmp_path):
    """cc and mtu used to crash the dry run (TypeError in dry_run_knobs); now they are shown
    as Linux commands on the node hosts, with where each knob acts (one study, one dry run)."""
    knobs = "".join(f"{k} = {v}\n" for k, v in NEUTRAL.items())
    hosts = "".join(f'{k} = ["node:a", "node:b"]\n' for k in NEUTRAL)
    path = write_study(tmp_path, 'name = "kdry"\n[target]\nkind = "kubernetes"\nnode_access = true\nnodes = ["a", "b"]\n'
                       f'[workload]\nduration = 1\n[knobs]\n{knobs}[knobs.hosts]\n{hosts}')
    p = nettune("run", "--dry-run", str(path))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "knobs on node:a (linux):" in p.stdout
    want = {"cc": "net.ipv4.tcp_congestion_control: per pod network namespace, copied from the node", "sockbuf:max": "net.core.rmem_max: ",
            "mtu@eth0": "writes no sysctl: acts on the node's devices", "offload:gro@eth0": "writes no sysctl: acts on the node's devices"}
    for key, text in want.items():
        said = [x for x in p.stdout.splitlines() if x.startswith(f"{key} on node:a, node:b: ")]
        assert any(text in x for x in said), (key, p.stdout)
    # without a device: refused in one line before anything connects
    path.write_text(path.read_text().replace('"mtu@eth0"', "mtu"))
    p = nettune("run", "--dry-run", str(path))
    assert p.returncode == 2 and "host node:a has no default interface" in p.stderr and "Traceback" not in p.stderr


def test_sysctl_table_command():
    p = nettune("k8s", "sysctls", "--version", "1.29", "net.ipv4.tcp_rmem", "net.core.rmem_max", env={"COLUMNS": "250"})
    assert p.returncode == 0
    assert "from 1.32, kernel 4.15+: no here" in p.stdout and "cannot be a pod sysctl: a knob on node:NAME hosts" in p.stdout
    p = nettune("k8s", "sysctls", "--version", "1.32", "--kernel", "4.14.1", "net.ipv4.tcp_rmem", env={"COLUMNS": "250"})
    assert "│ node " in p.stdout  # before 4.15 one value per machine


def rules(doc):
    return {(res, verb) for r in doc["rules"] for res in r["resources"] for verb in r["verbs"]}


@needs_iperf3
def test_rbac_example_is_valid_and_the_role_covers_an_unprivileged_run(monkeypatch, tmp_path):
    docs = [d for d in yaml.safe_load_all((EXAMPLES / "k8s-rbac.yaml").read_text()) if d]
    for d in docs:
        for v in ("1.28", "1.36"):
            kubernetes_validate.validate(d, v, strict=True)
    role = next(d for d in docs if d["kind"] == "Role")
    read = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "nettune-read")
    node = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "nettune-node-access")
    assert role["metadata"]["namespace"] == "nettune" and ("namespaces", "create") not in rules(role) | rules(read)
    assert ("namespaces", "create") in rules(node)
    assert not any(d["kind"].endswith("Binding") and d["roleRef"]["name"] == "nettune-node-access" for d in docs)  # node-root: bound by hand
    # every call an unprivileged run makes, as (resource, verb), is granted by the Role or nettune-read
    fake = FakeKube()
    fake.objects[("Namespace", None, "given")] = {"metadata": {"name": "given", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    monkeypatch.setattr(k8s, "API_FACTORY", lambda spec, *flags: fake)
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))
    s = parse_study('name = "rbac"\n[target]\nkind = "kubernetes"\nnamespace = "given"\nready_timeout = 2\n[workload]\nduration = 1\n')
    with StoreWriter(tmp_path / "r.db") as store:
        assert run_study(s, store, doctor=False).failed == 0
    verb = {"create": "create", "delete": "delete", "exec": "create", "find": "list"}
    resource = {"Pod": "pods", "Service": "services", "Namespace": "namespaces"}
    need = {("pods/exec" if c[0] == "exec" else resource[c[1]], verb[c[0]]) for c in fake.calls if c[0] in ("create", "delete", "exec")}
    need |= {("pods", "get"), ("nodes", "list"), ("namespaces", "get")}  # readiness, node_info, namespace_labels
    assert need <= rules(role) | rules(read), need - (rules(role) | rules(read))


def test_docs_and_example_show_the_table_as_nettune_prints_it():
    from conftest import ROOT

    docs = (ROOT / "docs" / "kubernetes.md").read_text()
    table = nettune("k8s", "sysctls", "--version", "1.29", "--markdown").stdout.strip()
    assert table in docs
    example = (EXAMPLES / "study-e.toml").read_text()
    mine = nettune("k8s", "sysctls", "--version", "1.29", "--markdown", "--study", str(EXAMPLES / "study-e.toml")).stdout
    assert "".join(("# " + ln if ln else "#") + "\n" for ln in mine.splitlines()) in example
