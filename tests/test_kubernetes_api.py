"""The thin layer over the real `kubernetes` client (targets/kubernetes/k8s_api.py), as far as it
can run without a cluster: kubeconfig handling, an API server that does not answer, a
pod's readiness and reason read from the client's own V1Pod model; and `nettune k8s`
commands through the CLI."""
import pytest
from kubernetes import client as kc
from typer.testing import CliRunner

from nettune.cli.main import app
from nettune.targets.kubernetes import kubernetes as k8s
from nettune.targets.kubernetes.k8s_api import CLI_FLAGS, KubeApi, KubeError, pod_state

from k8s_fake import UNREACHABLE_KUBECONFIG as KUBECONFIG, FakeKube



def test_kubeconfig_context_and_an_api_server_that_does_not_answer(tmp_path):
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(KUBECONFIG)
    api = KubeApi(None, str(cfg))
    assert api.context == "lab"  # the current context
    with pytest.raises(KubeError, match=r"^list nodes: cannot reach the API server of context 'lab': ") as e:
        api.nodes()
    assert "\n" not in str(e.value)
    with pytest.raises(KubeError, match=r"^exec in pod p: cannot reach the API server of context 'lab': "):
        api.exec("ns", "p", ["true"])
    with pytest.raises(KubeError, match=r"has no context 'prod' \(\[target\] context names it; contexts: lab\); fix \[target\] context$"):
        KubeApi("prod", str(cfg))
    with pytest.raises(KubeError, match=r"has no context 'prod' \(--context names it; contexts: lab\); fix --context$"):
        KubeApi("prod", str(cfg), CLI_FLAGS)
    with pytest.raises(KubeError, match=f"^kubeconfig {tmp_path}/missing: no such file; fix \\[target\\] kubeconfig$"):
        KubeApi(None, str(tmp_path / "missing"))


def pod(**status) -> dict:
    return kc.V1Pod(metadata=kc.V1ObjectMeta(name="p"), spec=kc.V1PodSpec(containers=[], node_name=status.pop("node", None)),
                    status=kc.V1PodStatus(**status)).to_dict()


def test_pod_state_from_the_client_model():
    ready = pod(phase="Running", pod_ip="10.0.0.5", node="n1", conditions=[kc.V1PodCondition(type="Ready", status="True")])
    assert pod_state(ready).ready and pod_state(ready).ip == "10.0.0.5" and pod_state(ready).node == "n1"
    pull = pod(phase="Pending", node="n1", conditions=[kc.V1PodCondition(type="Ready", status="False")], container_statuses=[
        kc.V1ContainerStatus(name="tool", image="nope:1", image_id="", ready=False, restart_count=0,
                             state=kc.V1ContainerState(waiting=kc.V1ContainerStateWaiting(reason="ImagePullBackOff", message='Back-off pulling image "nope:1"')))])
    st = pod_state(pull)
    assert (st.ready, st.reason, st.message) == (False, "ImagePullBackOff", 'Back-off pulling image "nope:1"')
    unsched = pod(phase="Pending", conditions=[kc.V1PodCondition(type="PodScheduled", status="False", reason="Unschedulable",
                                                                 message="0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.")])
    st = pod_state(unsched)
    assert (st.ready, st.reason, st.node) == (False, "Unschedulable", None) and "anti-affinity" in st.message
    # an evicted pod: its own reason, not its container's (as the kubelet writes both)
    evicted = pod(phase="Failed", reason="Evicted", message="The node was low on resource: memory.", node="n1", container_statuses=[
        kc.V1ContainerStatus(name="tool", image="i", image_id="", ready=False, restart_count=0,
                             state=kc.V1ContainerState(terminated=kc.V1ContainerStateTerminated(exit_code=137, reason="ContainerStatusUnknown")))])
    st = pod_state(evicted)
    assert (st.phase, st.reason, st.message) == ("Failed", "Evicted", "The node was low on resource: memory.")
    rejected = pod(phase="Failed", reason="SysctlForbidden", message='Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted')
    assert pod_state(rejected).reason == "SysctlForbidden"


def test_k8s_clean_command(monkeypatch):
    fake = FakeKube()
    fake.objects[("Namespace", None, "nettune-x-abc123")] = {"metadata": {"labels": {"app.kubernetes.io/managed-by": "nettune", "nettune/study": "x", "nettune/run": "abc123"}}}
    monkeypatch.setattr(k8s, "API_FACTORY", lambda spec, *flags: fake)
    r = CliRunner().invoke(app, ["k8s", "clean", "--dry-run"])
    assert r.exit_code == 0 and "would delete Namespace nettune-x-abc123" in r.stdout
    assert fake.objects
    r = CliRunner().invoke(app, ["k8s", "clean", "--study", "x"])
    assert r.exit_code == 0 and "deleted Namespace nettune-x-abc123" in r.stdout and not fake.objects
    r = CliRunner().invoke(app, ["k8s", "clean"])
    assert r.exit_code == 0 and "nothing of nettune's found" in r.stdout
