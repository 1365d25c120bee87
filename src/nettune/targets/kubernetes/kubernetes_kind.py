"""The kubernetes target kind: iperf3/iperf between pods of a real cluster (kubernetes.py).
Its pods exist only while a run lasts, so what it answers from the study alone names
where they will be: node knobs by node name, servers at the pod's (or its Service's) IP."""
from __future__ import annotations

from ...studyfile.kubernetes_target import KubernetesTargetSpec
from ...studyfile.models import Study
from ..base import Target
from ..target_kind import HostCheck, TargetKindBase
from ..footprint import Footprint
from .kubernetes import KubeTarget


def _spec(study: Study) -> KubernetesTargetSpec:
    spec = study.target
    assert isinstance(spec, KubernetesTargetSpec)  # TARGETS["kubernetes"] is only asked about kubernetes studies
    return spec


class KubernetesKind(TargetKindBase):
    name = "kubernetes"

    def make(self, study: Study) -> Target:
        return KubeTarget(study)

    def footprint(self, study: Study) -> Footprint:
        return Footprint(remotes={(n.lower(), 0) for n in _spec(study).nodes})  # node knobs, journaled by node name (kubernetes_host.reach)

    def server_address(self, study: Study, host: str) -> str:
        return f"<{'ClusterIP of' if _spec(study).via == 'service' else 'IP of pod'} {host}>"  # known once the pod (or its Service) exists

    def describe_hosts(self, study: Study) -> list[HostCheck]:
        t = _spec(study)
        where = f"pod, context {t.context or '(current)'}"
        return [HostCheck(h, "test", where, None, "-", "kubeconfig", "-", "-", False, f"made by the run from {t.image} (see run --dry-run)")
                for h in t.test_hosts]

    def check_hosts(self, study: Study, rows: list[HostCheck]) -> None:
        return  # nothing to connect to before a run makes the pods; their tools come with the image
