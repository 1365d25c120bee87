"""`[target] kind = "vmlab"` at run time: the study's VM lab, reached as ssh hosts.

The lab is brought up when it is not (vmlab.up; a lab `nettune lab up --vms` made is found
and used as it is) and stays up after the run, until `nettune lab down`. Then
every host, the guests and the hypervisor, is an SshHost of the ssh target, built from the
lab's record: its address, the lab's key and its known_hosts (strict host key checking),
so engines, probes, knobs, the journal's reach() and `nettune restore` are the ssh
target's, unchanged. What this adds: the guests' link shaping per point (vm_shaping.py),
and the accelerator in every host's facts and every run's state ("emulated": true under
TCG), which results, analyze and the report read.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ...record.point_state import PointState
from ...studyfile.ssh_hosts import SshTargetSpec
from ..ssh.ssh import SshTarget
from . import vm_shaping, vmlab

log = logging.getLogger("nettune.vmlab")


@dataclass
class _AsSsh:
    """What SshTarget reads of a study: its target."""

    target: SshTargetSpec


class VmlabTarget(SshTarget):
    kind = "vmlab"

    def __init__(self, study: Any):
        self.study_name = study.name
        self.rec, self.made = vmlab.up(study, echo=log.warning)
        self.accel = dict(self.rec["accel"])
        self.spec = study.target
        ssh = SshTargetSpec.model_validate({"kind": "ssh", "hosts": vmlab.ssh_hosts(self.rec, study.target),
                                            "reconnect_timeout": study.target.reconnect_timeout})
        self._shapes: dict[str, Any] = {}
        super().__init__(_AsSsh(ssh))

    @property
    def emulated(self) -> bool:
        return self.accel.get("name") != "kvm"

    @property
    def warnings(self) -> list[str]:
        out = list(super().warnings)
        if self.made:
            out.append(f"VM lab {self.study_name} brought up for this run; it stays up after it (`nettune lab down {self.study_name}` removes it)")
        if self.emulated:
            out.append(f"emulated CPU: throughput shows behaviour, not performance (the guests run on QEMU's TCG: {self.accel.get('why')})")
        return out

    def prepare(self, resolved: Any) -> PointState:
        link = resolved.target.link
        for g in self.spec.guests:
            shape = link.for_host(g) if link is not None else None
            dumped = shape.model_dump() if shape is not None else None
            if self._shapes.get(g) != dumped:
                if shape is None:
                    vm_shaping.clear(self.hosts[g])
                else:
                    vm_shaping.apply(self.hosts[g], shape)
                self._shapes[g] = dumped
        return self.state()

    def state(self) -> PointState:
        """The hosts, the accelerator, each guest's NIC queues as the guest itself reports
        them (`ethtool -l eth0` in the guest: what libvirt's <driver queues> gave it), and
        the link shaping in force. Read after every point's knobs, so a guest restarted by
        a knob is waited for here (the ssh target reconnects) and seen with its new NIC."""
        out = super().prepare(None).to_json()
        out["vmlab"] = {"accelerator": self.accel.get("name"), "emulated": self.emulated}
        out["guest_nic"] = {g: vm_shaping.channels(self.hosts[g]) for g in self.spec.guests}
        if any(self._shapes.values()):
            out["shaping"] = {g: vm_shaping.shown(self.hosts[g]) for g, s in self._shapes.items() if s}
        return PointState.model_validate(out)

    def facts(self) -> dict[str, dict[str, Any]]:
        facts = super().facts()
        guests = {g["name"]: g for g in self.rec["shape"]["guests"]}
        for name, f in facts.items():
            f["accelerator"] = self.accel.get("name")
            f["emulated"] = self.emulated and name in guests  # the hypervisor is this machine's real CPU
            if name in guests:
                g = guests[name]
                f["vm"] = {"domain": name, "vcpus": g["vcpus"], "memory_mib": g["memory_mib"], "queues_at_lab_up": g["queues"],
                           "image": self.rec["image"]["package"]}
            else:
                f["vm"] = {"hypervisor": "this machine: the VM lab's private libvirtd"}
        return facts

    def close(self) -> None:
        if self._closed:
            return
        try:
            for g, s in self._shapes.items():
                if s:
                    try:
                        vm_shaping.clear(self.hosts[g])
                    except Exception as e:  # noqa: BLE001 - a guest gone; its lab goes below or stays for lab down
                        log.warning("%s: could not remove its link shaping: %s", g, e)
        finally:
            super().close()
            vmlab.release(self.study_name)  # the lab stays up, free for the next run (or `lab down`)
