"""The lab target kind: hosts are network namespaces on a bridge of this machine (lab.py).
What it answers from the study alone comes from the lab's layout (lab_layout.py: names
and addresses, creating nothing)."""
from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from ...studyfile.models import Study
from ..base import Target
from ..target_kind import CeilingPath, TargetKindBase
from .lab_ceiling import ceiling_lab, lab_path_class
from ..footprint import Footprint
from ..procs import start_time
from ..scratch import scratch_namespace
from .lab import LabTarget
from .lab_host import LAB_PORT
from .lab_cleanup import clear_dead_lab, remove_namespace
from .lab_layout import study_layout
from .labnet import netns


class LabKind(TargetKindBase):
    name = "lab"

    def make(self, study: Study) -> Target:
        return LabTarget(study)

    def footprint(self, study: Study) -> Footprint:
        layout = study_layout(study)
        return Footprint(machine=True, namespaces={layout.ns(h) for h in layout.hosts}, subnets=[layout.subnet])

    def server_address(self, study: Study, host: str) -> str:
        return study_layout(study).address(host)

    def planned_port(self, study: Study) -> int | None:
        return LAB_PORT  # a namespace of the lab's own: nothing else listens there

    def ceiling_path(self, study: Study) -> AbstractContextManager[CeilingPath] | None:
        return ceiling_lab(study)

    def path_class(self, spec: dict[str, Any], settings: dict[str, Any], client: str | None) -> tuple[str | None, bool]:
        """"lab mtu=N queues=Q" of the client's interface as read back; its own path when
        nothing shaped it and no knob was set. A lab with nodes (VXLAN underlay) is a path
        no ceiling is measured on."""
        if (spec.get("target") or {}).get("nodes"):
            return None, False
        host = (settings.get("hosts") or {}).get(client or "") or {}
        if not isinstance(host, dict) or not host.get("mtu"):
            return None, False
        shaped = any((h or {}).get("shape") for h in (settings.get("shaping") or {}).values() if isinstance(h, dict))
        return lab_path_class(host["mtu"], host.get("tx_queues")), not shaped and not settings.get("knobs")

    def both_ends_here(self, spec: dict[str, Any]) -> bool:
        return True  # namespaces of this machine

    def where(self, study: Study, host: str) -> str:
        return f"lab namespace nettune-{study.name}-{host}"

    def knob_os(self, study: Study, host: str) -> tuple[str | None, str | None]:
        return "linux", study_layout(study).ns_if(host)  # the host's veth in its namespace

    def clear_dead(self, study: Study, owners: set[str]) -> list[str]:
        """The lab as its state file records it, if its owner is gone (a lab still owned by
        a live run is refused), and the knob-check namespace of a run killed while
        checking its knobs."""
        removed = clear_dead_lab(study.name)
        for owner in owners:
            pid = owner.split()[0]
            probe = scratch_namespace(pid)
            if pid.isdigit() and start_time(int(pid)) is None and probe in netns.listnetns():
                remove_namespace(probe)
                removed.append(probe)
        return removed
