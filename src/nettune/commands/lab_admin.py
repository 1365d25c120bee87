"""The built-in lab by hand (`nettune lab up`, `nettune lab down`), as functions that
return what they did; cli/lab_commands.py prints it. Up: a study's lab at its first point, with
sshds if asked. Down: settings changed on the lab hosts put back first (while the hosts
are still there), then the labs, their sshds and the test credentials of killed runs."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..plan.points import expand_and_check
from ..plan.study_file import load_study
from ..targets import require_kind


@dataclass
class LabHostRow:
    host: str
    namespace: str
    interface: str
    address: str
    mtu: str
    queues: str


@dataclass
class LabUp:
    name: str
    hosts: list[LabHostRow]
    bridge: str  # "ntXXXXXbr 198.18.71.1/24"
    first_namespace: str  # where `ip netns exec NS COMMAND` runs a command
    layout: Any = field(repr=False, default=None)  # targets.labnet.LabLayout, for start_sshds


def lab_up(file: Path) -> LabUp:
    """Create the lab of study `file` (its first point's MTU and queues) and leave it up."""
    from ..targets.lab.lab import LabTarget  # noqa: PLC0415 - pyroute2, only for the lab

    study = load_study(file)
    require_kind(study, "lab", str(file), "`lab up`")
    first = expand_and_check(study, file.read_text(), str(file))[0]
    target = LabTarget(study)
    state = target.prepare(first)
    target.keep()  # the user's lab: a run of this study uses it and leaves it up; `nettune lab down` removes it
    layout = target.layout
    rows = [LabHostRow(h, layout.ns(h), str(s.interface), str(s.address), str(s.mtu), str(s.tx_queues)) for h, s in state.hosts.items()]
    return LabUp(study.name, rows, f"{layout.bridge} {layout.bridge_address}/{layout.subnet.prefixlen}",
                 layout.ns(study.target.hosts[0]), layout)


def start_sshds(lab: LabUp, inventory: Path | None = None, bastion: bool = False, ssh_config: Path | None = None,
                ansible: Path | None = None) -> dict[str, dict[str, Any]]:
    """An sshd in each host of a lab that is up (and its inventory written to `inventory`);
    bastion: behind a jump host namespace; ssh_config / ansible: also write an OpenSSH client
    config and an Ansible inventory (group = the study's name) for the same hosts.
    Returns {host: {address, port, user, key, known_hosts, pid[, jump, role]}}."""
    from ..targets.ssh import sshlab, sshlab_files  # noqa: PLC0415

    hosts = sshlab.up(lab.layout, inventory, bastion=bastion)
    note = f"lab {lab.name} (nettune lab up --ssh); valid until nettune lab down"
    if ssh_config is not None:
        sshlab_files.write_ssh_config(ssh_config, hosts, note)
    if ansible is not None:
        sshlab_files.write_ansible(ansible, hosts, lab.name, note)
    return hosts


def settle_before_down(name: str | None, force: bool) -> tuple[Any, list[tuple[str, str]]]:
    """Put back settings a killed run left changed on the lab hosts about to go; returns
    (restore outcome or None, (host, command) lines given up)."""
    from ..knobs.gate import settle_labs  # noqa: PLC0415
    from ..targets.lab import labnet  # noqa: PLC0415
    from .vmlab_admin import vm_lab_subnets  # noqa: PLC0415

    namespaces, subnets = labnet.removal_plan(name, force)
    return settle_labs(namespaces, subnets + vm_lab_subnets(name, force))  # VM labs: guests and hypervisor over SSH


def lab_down(name: str | None, force: bool) -> dict[str, list[str]]:
    """Remove lab `name` (or every lab), their sshds and keys, and the test credentials of
    runs killed with -9. Returns {what: names}, e.g. {"namespaces": [...], "kept ...": [...]}."""
    from ..targets.lab import labnet
    from ..targets.ssh import sshlab  # noqa: PLC0415
    from ..targets.procs import remove_stale_dirs  # noqa: PLC0415
    from ..run.credentials import DIR_PREFIX  # noqa: PLC0415

    from .vmlab_admin import vm_lab_down  # noqa: PLC0415

    vms = vm_lab_down(name, force)  # VM labs (kind = "vmlab"): domains, libvirtd, bridge, files
    if name is not None:
        removed = labnet.down_one(name, force) if not vms or name in labnet.leftovers()["labs"] else {}
        if "labs" in removed:
            sshlab.down(name)
    else:
        removed = labnet.down_all(force)
        removed["ssh keys"] = sshlab.down_all_ssh()  # their sshds died with the namespaces
    removed.update(vms)
    removed["test credentials"] = remove_stale_dirs(DIR_PREFIX, force)  # of runs killed with -9
    return removed
