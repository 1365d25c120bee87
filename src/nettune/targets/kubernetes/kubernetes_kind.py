"""The kubernetes target kind: iperf3/iperf between pods of a real cluster (kubernetes.py).
Its pods exist only while a run lasts, so what it answers from the study alone names
where they will be: node knobs by node name, servers at the pod's (or its Service's) IP."""
from __future__ import annotations

from typing import Any

from ...studyfile.kubernetes_target import KubernetesTargetSpec
from ...studyfile.models import Study
from ..base import Host, Target
from ..footprint import Footprint
from ..target_kind import HostCheck, HostReconnector, TargetKindBase
from .k8s_hosts import ask_cluster, host_rows
from .k8s_reach import NodeReach
from .kubernetes import KubeTarget


def _spec(study: Study) -> KubernetesTargetSpec:
    spec = study.target
    assert isinstance(spec, KubernetesTargetSpec)  # TARGETS["kubernetes"] is only asked about kubernetes studies
    return spec


class NodeReconnector:
    """A cluster's nodes again, each through a privileged pod (k8s_reach.py), one per
    (context, node) for as long as the restore lasts."""

    def __init__(self) -> None:
        self._reach = NodeReach()
        self._hosts: dict[tuple[Any, Any], Host] = {}

    def host(self, label: str, reach: dict[str, Any]) -> Host:
        key = (reach.get("context"), reach.get("node"))
        if key not in self._hosts:
            self._hosts[key] = self._reach.host(label, reach)
        return self._hosts[key]

    def close(self) -> None:
        for h in self._hosts.values():
            h.close()
        self._hosts.clear()
        self._reach.close()


class KubernetesKind(TargetKindBase):
    name = "kubernetes"

    def make(self, study: Study) -> Target:
        return KubeTarget(study)

    def footprint(self, study: Study) -> Footprint:
        return Footprint(remotes={(n.lower(), 0) for n in _spec(study).nodes})  # node knobs, journaled by node name (kubernetes_host.reach)

    def server_address(self, study: Study, host: str) -> str:
        return f"<{'ClusterIP of' if _spec(study).via == 'service' else 'IP of pod'} {host}>"  # known once the pod (or its Service) exists

    def describe_hosts(self, study: Study) -> list[HostCheck]:
        """The API server, then where the run will make each test pod and node access pod."""
        return [HostCheck(*row) for row in host_rows(_spec(study))]

    def check_hosts(self, study: Study, rows: list[HostCheck]) -> None:
        """The API server answers (context, version, nodes); the pods, and the tools their
        image brings, come with the run."""
        answer = ask_cluster(_spec(study))
        for r in rows:
            r.ok, r.reason = answer.status(r.name)
            r.version = answer.version

    def reaches(self, reach: dict[str, Any]) -> bool:
        return bool(reach.get("kubernetes"))  # a node of a cluster (kubernetes_host.reach)

    def reconnector(self) -> HostReconnector:
        return NodeReconnector()
