"""Every kind of knob by name, and the catalog `nettune knobs list` prints."""
from __future__ import annotations

from .base import Kind, catalog_row
from .cc import CongestionControl
from .channels import Channels
from .command import Command
from .irq import IrqAffinity
from .libvirt_queues import LibvirtQueues
from .libvirt_vcpupin import LibvirtVcpupin
from .mtu import Mtu
from .offload import Offload
from .proxmox_queues import ProxmoxQueues
from .qdisc import Qdisc
from .ring import Ring
from .rps import Rps
from .spec import FORBIDDEN
from .sysctl import Sysctl
from .tuned import Tuned
from .txqueuelen import TxQueueLen
from .xps import Xps

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Sysctl(), Mtu(), Offload(), Channels(), Ring(), Rps(), Xps(), IrqAffinity(), TxQueueLen(),
        CongestionControl(), Qdisc(), Tuned(), Command(),
        ProxmoxQueues(), LibvirtQueues(), LibvirtVcpupin(),
    )
}


def get(kind: str) -> Kind:
    return KINDS[kind]


def catalog() -> list[dict[str, str]]:
    rows = []
    for k in KINDS.values():
        rows += k.catalog()
    rows.append(catalog_row(
        "never", '"mitigations" / "cmdline" / "amd_pstate"', "machine (boot)", "kernel command line options (mitigations=off, amd_pstate=...)",
        "distribution's", "-", "reboot", "never changed automatically: " + FORBIDDEN["mitigations"] + "; persist documents them only", "loader.conf",
    ))
    return rows
