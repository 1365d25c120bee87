"""The vmlab target kind: QEMU guests under the lab's private libvirtd, reached over SSH
(vm_target.py). What it answers from the study alone comes from the lab's layout; its
hosts' journal records are ssh hosts' (SshHost.reach()), so `nettune restore` reaches them
again through the ssh kind's reconnector."""
from __future__ import annotations

from ...studyfile.models import Study
from ...studyfile.ssh_hosts import SshTargetSpec
from ...studyfile.vmlab_target import VmlabTargetSpec
from ..base import Target
from ..footprint import Footprint
from ..ssh.ssh_kind import SshKind
from ..target_kind import HostCheck, TargetKindBase
from . import guest_files as gf
from .vmlab import layout_of, read_record, running, ssh_hosts


def _spec(study: Study) -> VmlabTargetSpec:
    spec = study.target
    assert isinstance(spec, VmlabTargetSpec)  # TARGETS["vmlab"] is only asked about VM lab studies
    return spec


class VmlabKind(TargetKindBase):
    name = "vmlab"

    def make(self, study: Study) -> Target:
        from .vm_target import VmlabTarget  # noqa: PLC0415 - asyncssh, only for VM lab studies

        return VmlabTarget(study)

    def footprint(self, study: Study) -> Footprint:
        return Footprint(subnets=[layout_of(study).subnet])  # guests and the hypervisor's sshd, all in the lab's /24

    def server_address(self, study: Study, host: str) -> str:
        return layout_of(study).address(host)

    def describe_hosts(self, study: Study) -> list[HostCheck]:
        spec, layout = _spec(study), layout_of(study)
        rec = read_record(study.name)
        key = rec["keys"]["user"] if rec else "the lab's key (made by nettune lab up --vms)"
        known = rec["keys"]["known_hosts"] if rec else "the lab's known_hosts"
        out = [HostCheck(g, "test", layout.address(g), 22, "root", key, "direct", known, False, f"VM lab {study.name}: guest (domain {g})")
               for g in spec.guests]
        hv_port = (rec.get("hypervisor") or {}).get("port") if rec else None
        out += [HostCheck(h, "hypervisor", layout.bridge_address, hv_port, "root", key, "direct", known, False,
                          f"VM lab {study.name}: this machine's private libvirtd") for h in spec.hypervisors]
        return out

    def check_hosts(self, study: Study, rows: list[HostCheck]) -> None:
        rec = read_record(study.name)
        if rec is None or not running(rec):
            for r in rows:
                r.ok, r.reason = False, f"not connected: the VM lab is not up (nettune lab up {study.name}.toml --vms, or nettune run brings it up)"
            return
        as_ssh = SshTargetSpec.model_validate({"kind": "ssh", "hosts": ssh_hosts(rec, _spec(study))})
        SshKind().check_hosts(study.model_copy(update={"target": as_ssh}), rows)

    def knob_os(self, study: Study, host: str) -> tuple[str | None, str | None]:
        return "linux", gf.GUEST_IF if host in _spec(study).guests else None
