"""`nettune hosts` on a kubernetes study: the hosts a run will make (test pods, node
access pods), and whether the cluster answers: the kubeconfig context exists, the API
server gives its version (the one the run plans sysctl classes for), and the nodes the
study names exist. Nothing is created."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import NettuneError
from ...studyfile.kubernetes_target import NODE_PREFIX
from .k8s_cluster import named_nodes

CLUSTER = "api-server"  # the row of the API server itself


def host_rows(spec: Any) -> list[tuple[Any, ...]]:
    """HostCheck fields (name, role, address, port, user, key, jump, known_hosts, sudo, source)
    of the API server, each test pod and each node access pod."""
    ctx = f"context {spec.context or '(current)'}"
    cfg = spec.kubeconfig or "$KUBECONFIG or ~/.kube/config"
    rows: list[tuple[Any, ...]] = [(CLUSTER, "cluster", ctx, None, "-", cfg, "-", "-", False, "the kubeconfig")]
    rows += [(h, "test", f"pod, {ctx}", None, "-", "kubeconfig", "-", "-", False, f"made by the run from {spec.image} (see run --dry-run)")
             for h in spec.test_hosts]
    rows += [(h, "node", f"privileged pod on node {h.removeprefix(NODE_PREFIX)}, {ctx}", None, "-", "kubeconfig", "-", "-", True,
              "made by the run (node_access): node CPU and node knobs") for h in spec.node_hosts]
    return rows


@dataclass
class ClusterAnswer:
    version: str = ""
    error: str = ""  # why the cluster cannot be used (the context, the API server, a node)
    missing: list[str] = field(default_factory=list)  # nodes the study names that the cluster lacks
    not_ready: dict[str, str] = field(default_factory=dict)  # nodes the study names that are not Ready, and why

    def status(self, host: str) -> tuple[bool, str]:
        if self.error:
            return False, self.error if host == CLUSTER else f"not checked: the cluster does not answer ({CLUSTER} above)"
        node = host.removeprefix(NODE_PREFIX)
        if host.startswith(NODE_PREFIX) and node in self.missing:
            return False, f"node {node} is not in the cluster"
        if host.startswith(NODE_PREFIX) and node in self.not_ready:
            return False, f"node {node} is not Ready ({self.not_ready[node]})"
        if host == CLUSTER and self.missing:
            return False, f"node(s) {', '.join(self.missing)} named in [target] are not in the cluster (kubectl get nodes)"
        if host == CLUSTER and self.not_ready:
            return False, f"node(s) {', '.join(self.not_ready)} named in [target] are not Ready (kubectl describe node)"
        return True, ""


def ask_cluster(spec: Any) -> ClusterAnswer:
    from . import kubernetes  # noqa: PLC0415 - API_FACTORY, the test seam

    try:
        api = kubernetes.API_FACTORY(spec)
        version = api.server_version()
        have = {n.name: n for n in api.node_info()}
    except NettuneError as e:  # a KubeError: no such context, a bad kubeconfig, an API server that does not answer
        return ClusterAnswer(error=str(e))
    named = named_nodes(spec)
    return ClusterAnswer(version, missing=[n for n in named if n not in have],
                         not_ready={n: have[n].not_ready for n in named if n in have and not have[n].ready})
