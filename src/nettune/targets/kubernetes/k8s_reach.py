"""`nettune restore` for node knobs of the kubernetes target: reach the node again.

The journal recorded (kubernetes_host.KubeHost.reach) the kubeconfig context, the node
and the privileged pod the change went through. If that pod still runs (a killed run
leaves it until `nettune k8s clean`), it is used; otherwise a new privileged pod is
made on that node in a namespace of its own, and deleted when the restore is done.
"""
from __future__ import annotations

from typing import Any

from ...studyfile.kubernetes_target import NODE_PREFIX, KubernetesTargetSpec
from .k8s_api import KubeError
from .k8s_manifests import RunNames, namespace_manifest, node_pod

JOURNAL_FLAGS = ("the context the journal recorded", "KUBECONFIG")  # where a restore's context came from


class NodeReach:
    """The node hosts of one restore, and what it had to create to reach them."""

    def __init__(self) -> None:
        self._made: list[tuple[Any, RunNames]] = []

    def host(self, label: str, reach: dict[str, Any]) -> Any:
        from . import kubernetes  # noqa: PLC0415 - API_FACTORY, the test seam
        from .kubernetes_host import KubeHost  # noqa: PLC0415

        node = reach.get("node")
        if not node or not reach.get("context"):
            raise KubeError("the journal does not name the node or the kubeconfig context")
        spec = KubernetesTargetSpec(kind="kubernetes", context=reach["context"], kubeconfig=reach.get("kubeconfig"),
                                    nodes=[node], node_access=True, image=reach.get("image") or KubernetesTargetSpec.model_fields["image"].default,
                                    tolerations=reach.get("tolerations") or [], image_pull_secrets=reach.get("image_pull_secrets") or [])
        api = kubernetes.API_FACTORY(spec, JOURNAL_FLAGS)
        state = api.pod(reach["namespace"], reach["pod"]) if reach.get("namespace") and reach.get("pod") else None
        if state is not None and state.ready and state.node == node:
            host = KubeHost(label, api, reach["namespace"], reach["pod"], node)
            host.not_ready = None
            return host
        names = RunNames.make("restore", None)
        self._made.append((api, names))
        api.create(namespace_manifest(names, "privileged"))
        pod = node_pod(names, spec, node)
        api.create(pod)
        host = KubeHost(NODE_PREFIX + node, api, names.namespace, pod["metadata"]["name"], node)
        import time  # noqa: PLC0415

        deadline = time.monotonic() + spec.ready_timeout
        while time.monotonic() < deadline:
            st = api.pod(names.namespace, host.pod)
            if st is not None and st.ready:
                host.not_ready = None
                return host
            time.sleep(0.5)
        raise KubeError(f"a privileged pod on node {node} did not become ready within {spec.ready_timeout:.0f}s")

    def close(self) -> None:
        for api, names in self._made:
            try:
                api.delete("Namespace", None, names.namespace)
            except KubeError:
                pass
        self._made.clear()
