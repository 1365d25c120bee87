"""The lab target kind: hosts are network namespaces on a bridge of this machine (lab.py).
What it answers from the study alone comes from the lab's layout (lab_layout.py: names
and addresses, creating nothing)."""
from __future__ import annotations

from ...studyfile.models import Study
from ..base import Target
from ..target_kind import TargetKindBase
from ..footprint import Footprint
from ..procs import start_time
from ..scratch import scratch_namespace
from .lab import LabTarget
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
