"""The VM lab by hand: `nettune lab up FILE --vms` (and what `lab down` and `lab status`
add for VM labs), as functions that return what they did; cli/lab_commands.py prints it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..plan.points import expand_and_check
from ..plan.study_file import load_study
from ..targets import require_kind


@dataclass
class VmHostRow:
    host: str
    role: str
    address: str
    ssh: str  # "root@ADDR" or "root@ADDR -p PORT"
    vcpus: str
    memory_mib: str
    queues: str


@dataclass
class VmLabUp:
    name: str
    hosts: list[VmHostRow]
    bridge: str
    accel: str  # "tcg: why" / "kvm: why"
    made: bool  # False: it was up already, with the same shape
    key: str
    known_hosts: str
    inventory: dict[str, dict[str, Any]]  # the hosts as ssh inventory entries


def vm_lab_up(file: Path, echo: Callable[[str], None] = print) -> VmLabUp:
    """Bring up the VM lab of study `file` ([target] kind = "vmlab") and leave it up."""
    from ..targets.vmlab import vmlab  # noqa: PLC0415 - pyroute2 and root

    study = load_study(file)
    require_kind(study, "vmlab", str(file), "`lab up --vms` (guests under [target.hosts.NAME] with vcpus, memory, queues; docs/targets.md)")
    expand_and_check(study, file.read_text(), str(file))  # a file whose points do not resolve brings nothing up
    rec, made = vmlab.up(study, echo)
    inv = vmlab.ssh_hosts(rec, study.target)
    rows = []
    for name, h in inv.items():
        g = next((g for g in rec["shape"]["guests"] if g["name"] == name), None)
        port = "" if h["port"] == 22 else f" -p {h['port']}"
        rows.append(VmHostRow(name, h.get("role", "test"), h["address"], f"root@{h['address']}{port}",
                              str(g["vcpus"]) if g else "-", str(g["memory_mib"]) if g else "-", str(g["queues"]) if g else "-"))
    return VmLabUp(study.name, rows, f"{rec['bridge']} {rec['bridge_address']}/24", f"{rec['accel']['name']}: {rec['accel']['why']}",
                   made, rec["keys"]["user"], rec["keys"]["known_hosts"], inv)


def vm_lab_down(name: str | None, force: bool) -> dict[str, list[str]]:
    from ..targets.vmlab import vmlab  # noqa: PLC0415

    if name is not None:
        return vmlab.down(name, force) if name in vmlab.labs() else {}
    return vmlab.down_all(force)


def vm_lab_names() -> list[str]:
    from ..targets.vmlab import vmlab  # noqa: PLC0415

    return vmlab.labs()


def vm_lab_subnets(name: str | None, force: bool = False) -> list[Any]:
    """The subnets of the VM labs `lab down` is about to remove (their settings go back first)."""
    from ..targets.vmlab import vmlab  # noqa: PLC0415

    return vmlab.subnets(name, force)
