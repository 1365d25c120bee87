"""Every manifest the kubernetes target generates is valid against the Kubernetes
OpenAPI schemas (kubernetes-validate, strict: unknown fields rejected) for two
Kubernetes versions; `nettune run --dry-run` of examples/study-e.toml prints them
without a cluster; `nettune k8s clean` finds and deletes what a killed run left."""
import pytest
import yaml
import kubernetes_validate

from nettune import parse_study
from nettune.plan.points import expand_and_check
from nettune.targets.kubernetes.k8s_manifests import RunNames, all_manifests, point_manifests
from nettune.targets.kubernetes.k8s_plan import manifests_yaml

from conftest import EXAMPLES, nettune

VERSIONS = ["1.28", "1.36"]  # two-digit minors: the package compares versions as strings
TARGETS = [
    'placement = "cross-node"',
    'placement = "same-node"\nnodes = ["a", "b"]',
    'placement = { server = "a", client = "b" }\nnetwork = "host"',
    'via = "service"\npod_sysctls = { "net.ipv4.tcp_rmem" = "4096 87380 6291456", "net.ipv4.ip_local_port_range" = "1024 65000" }',
    'node_access = true\nnodes = ["a", "b.example.com"]\nnamespace = "perf"',
    'pods = "per-node"\nnodes = ["a", "b", "c"]\nnode_access = true\nvia = "service"',
    'cpu = 0\nrun_as_user = 0\nimage_pull_secrets = ["regcred"]\ntolerations = [{ key = "dedicated", value = "perf", effect = "NoSchedule" }, { operator = "Exists" }]',
    'node_access = true\nnodes = ["a"]\ncpu = 4\nmemory = "2Gi"\ntolerations = [{ key = "gpu", operator = "Exists" }]',
]


def spec(target: str, workload: str = "bind = false"):
    return parse_study(f'name = "Study_E.1"\n[target]\nkind = "kubernetes"\n{target}\n[workload]\n{workload}\n'
                       + ('pairs = "mesh"\n' if "per-node" in target else ""))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid(target, version):
    s = spec(target)
    names = RunNames.make(s.name, s.target.namespace)
    made = all_manifests(names, s.target, s.workload.pairs)
    assert made
    for m in made:
        assert kubernetes_validate.validate(m, version, strict=True) == version
        labels = m["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "nettune" and labels["nettune/run"] == names.run
        assert labels["nettune/study"] == "study-e-1"


def test_validation_would_catch_a_bad_field():
    """The check can fail: a misspelt field is refused in strict mode."""
    s = spec(TARGETS[0])
    pod = point_manifests(RunNames.make(s.name, None), s.target)[0]
    pod["spec"]["containers"][0]["imag"] = pod["spec"]["containers"][0].pop("image")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pod, VERSIONS[0], strict=True)


def test_placement_is_explicit():
    s = spec('placement = "cross-node"')
    server, client = point_manifests(RunNames.make(s.name, None, "r1"), s.target)
    assert "affinity" not in server["spec"]
    term = client["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term == {"labelSelector": {"matchLabels": {"nettune/run": "r1", "nettune/host": "server"}}, "topologyKey": "kubernetes.io/hostname"}
    s = spec('placement = { server = "a", client = "b" }')
    server, client = point_manifests(RunNames.make(s.name, None), s.target)
    linux = {"kubernetes.io/os": "linux"}
    assert (server["spec"]["nodeSelector"], client["spec"]["nodeSelector"]) == (linux | {"kubernetes.io/hostname": "a"}, linux | {"kubernetes.io/hostname": "b"})
    node = all_manifests(RunNames.make(s.name, None), spec('node_access = true\nnodes = ["a"]').target)[1]
    assert node["spec"]["hostPID"] and node["spec"]["hostNetwork"] and node["spec"]["containers"][0]["securityContext"] == {"privileged": True}
    assert node["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux", "kubernetes.io/hostname": "a"}


@pytest.mark.parametrize("version", VERSIONS)
def test_dry_run_of_study_e_prints_valid_manifests_without_a_cluster(version, tmp_path):
    p = nettune("run", "--dry-run", str(EXAMPLES / "study-e.toml"), env={"KUBECONFIG": str(tmp_path / "none")})
    assert p.returncode == 0, p.stderr
    assert "kubectl -n nettune-study-e-dryrun exec nettune-client -c tool -- iperf3 -c" in p.stdout
    text = p.stdout.split("kubectl apply -f` takes", 1)[1].split("\n", 1)[1]
    docs = [d for d in yaml.safe_load_all(text) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds == ["Namespace", "Pod", "Pod", "Pod", "Pod", "Pod", "Pod"]  # ns, 2 node pods, same-node pair, cross-node pair
    for d in docs:
        kubernetes_validate.validate(d, version, strict=True)
    # one consistent set of objects: no name twice (a second set is named apart, its affinity on its own server)
    names = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs]
    assert len(set(names)) == len(names) and ("Pod", "nettune-study-e-dryrun", "nettune-client-2") in names
    client2 = next(d for d in docs if d["metadata"]["name"] == "nettune-client-2")
    labels = next(d for d in docs if d["metadata"]["name"] == "nettune-server-2")["metadata"]["labels"]
    sel = [t for k, v in client2["spec"]["affinity"].items() if k != "nodeAffinity" for t in v["requiredDuringSchedulingIgnoredDuringExecution"]]
    assert all(labels[k] == v for k, v in sel[0]["labelSelector"]["matchLabels"].items())
    alone = nettune("k8s", "manifests", str(EXAMPLES / "study-e.toml"))
    assert alone.returncode == 0 and [d for d in yaml.safe_load_all(alone.stdout) if d] == docs


def test_manifests_of_a_swept_study_name_each_shape_once():
    s = spec('placement = "{p}"\nnetwork = "{n}"', "bind = true\n[sweep]\np = [\"same-node\", \"cross-node\"]\nn = [\"pod\", \"host\"]")
    docs = [d for d in yaml.safe_load_all(manifests_yaml(s, expand_and_check(s))) if d]
    assert [d["kind"] for d in docs] == ["Namespace"] + ["Pod"] * 8
    assert [d["spec"].get("hostNetwork", False) for d in docs[1::2]] == [False, True, False, True]
    assert len({d["metadata"]["name"] for d in docs}) == 9
    assert docs[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"  # hostNetwork pods


def test_manifests_in_two_parts_for_a_server_dry_run():
    """kubectl apply --dry-run=server cannot place pods in a namespace the same apply makes:
    the namespace alone first (for real), then the rest."""
    ns = nettune("k8s", "manifests", str(EXAMPLES / "study-e.toml"), "--only", "namespace")
    rest = nettune("k8s", "manifests", str(EXAMPLES / "study-e.toml"), "--only", "objects")
    assert ns.returncode == 0 and rest.returncode == 0, ns.stderr + rest.stderr
    assert [d["kind"] for d in yaml.safe_load_all(ns.stdout) if d] == ["Namespace"]
    objs = [d for d in yaml.safe_load_all(rest.stdout) if d]
    assert objs and all(d["kind"] != "Namespace" for d in objs)
    bad = nettune("k8s", "manifests", str(EXAMPLES / "study-e.toml"), "--only", "pods")
    assert bad.returncode != 0 and "--only 'pods': use one of namespace, objects" in bad.stdout + bad.stderr


def test_hosts_command_without_a_cluster_lists_every_host_and_fails(tmp_path):
    r = nettune("hosts", str(EXAMPLES / "study-e.toml"), "--no-connect", env={"COLUMNS": "250"})
    assert r.returncode == 0, r.stdout + r.stderr
    for host in ("api-server", "server", "client", "node:node-a", "node:node-b"):
        assert f"│ {host} " in r.stdout
    assert "Kubernetes version: unknown until connected" in r.stdout
    assert "lab namespace" not in r.stdout and "not honoured" not in r.stdout + r.stderr
    r = nettune("hosts", str(EXAMPLES / "study-e.toml"), env={"COLUMNS": "250", "KUBECONFIG": str(tmp_path / "none")})
    assert r.returncode == 1 and "failed" in r.stdout and f"kubeconfig {tmp_path}/none: no such file (from KUBECONFIG)" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr
