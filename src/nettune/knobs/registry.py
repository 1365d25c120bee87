"""Every kind of knob by name, the settings never changed automatically, and the catalog
`nettune knobs list` prints. The single source of what a knob key may name: the key check
(knobs/keys.py) and the catalog read the kinds listed here."""
from __future__ import annotations

from .base import Kind, catalog_row
from .kinds.cc import CongestionControl
from .kinds.channels import Channels
from .kinds.cmdline import Cmdline
from .kinds.command import Command
from .kinds.cpu_switches import AmdPstate, Smt
from .kinds.cpufreq import CpuFreq
from .kinds.cpuidle import CpuIdle
from .kinds.irq import IrqAffinity
from .kinds.libvirt_queues import LibvirtQueues
from .kinds.libvirt_vcpupin import LibvirtVcpupin
from .kinds.mtu import Mtu
from .kinds.offload import Offload
from .kinds.proxmox_queues import ProxmoxQueues
from .kinds.qdisc import Qdisc
from .kinds.ring import Ring
from .kinds.rps import Rps
from .kinds.sockbuf import SockBuf
from .kinds.sysctl import Sysctl
from .kinds.sysctl_field import SysctlField
from .kinds.sysctl_unsafe import UnsafeSysctl
from .kinds.tuned import Tuned
from .kinds.txqueuelen import TxQueueLen
from .kinds.xps import Xps

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Sysctl(), Mtu(), Offload(), Channels(), Ring(), Rps(), Xps(), IrqAffinity(), TxQueueLen(),
        CongestionControl(), Qdisc(), Tuned(), Command(),
        CpuFreq(), CpuIdle(), AmdPstate(), Smt(),
        ProxmoxQueues(), LibvirtQueues(), LibvirtVcpupin(), Cmdline(),
        SockBuf(), SysctlField(),  # OS-neutral socket buffers and the sysctl field they use on Linux
        UnsafeSysctl(),  # the denylist's override, by name
    )
}


# Never changed automatically: they need a reboot or weaken the machine's security.
NEVER = {
    "kernel_cmdline": "the kernel command line is the cmdline:KEY knob (a reboot, only on hosts with allow_reboot = true)",
    "grub": "boot loader settings need a reboot and can leave a machine unbootable",
    "bootloader": "boot loader settings need a reboot and can leave a machine unbootable",
    "mitigations": "a kernel boot option under this name; write \"cmdline:mitigations\" (nettune then reboots a host with allow_reboot = true)",
    "intel_pstate": "intel_pstate is a kernel command line option (needs a reboot); write \"cmdline:intel_pstate\"",
}


def get(kind: str) -> Kind:
    return KINDS[kind]


def catalog() -> list[dict[str, str]]:
    rows = []
    for k in KINDS.values():
        rows += k.catalog()
    rows.append(catalog_row(
        "never", '"mitigations" / "grub" / "bootloader"', "machine (boot)", "bare boot options: write cmdline:KEY instead (amd_pstate:mode switches at run time)",
        "distribution's", "-", "reboot", "never changed under these names: " + NEVER["mitigations"], "loader.conf",
    ))
    return rows
