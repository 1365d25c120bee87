"""Every kind of knob by name, the settings never changed automatically, and the catalog
`nettune knobs list` prints. The single source of what a knob key may name: the key check
(knobs/keys.py) and the catalog read the kinds listed here."""
from __future__ import annotations

from .base import Kind, catalog_row
from .cc import CongestionControl
from .channels import Channels
from .cmdline import Cmdline
from .command import Command
from .cpu_switches import AmdPstate, Smt
from .cpufreq import CpuFreq
from .cpuidle import CpuIdle
from .irq import IrqAffinity
from .libvirt_queues import LibvirtQueues
from .libvirt_vcpupin import LibvirtVcpupin
from .mtu import Mtu
from .offload import Offload
from .proxmox_queues import ProxmoxQueues
from .qdisc import Qdisc
from .ring import Ring
from .rps import Rps
from .sockbuf import SockBuf
from .sysctl import Sysctl
from .sysctl_field import SysctlField
from .tuned import Tuned
from .txqueuelen import TxQueueLen
from .xps import Xps

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Sysctl(), Mtu(), Offload(), Channels(), Ring(), Rps(), Xps(), IrqAffinity(), TxQueueLen(),
        CongestionControl(), Qdisc(), Tuned(), Command(),
        CpuFreq(), CpuIdle(), AmdPstate(), Smt(),
        ProxmoxQueues(), LibvirtQueues(), LibvirtVcpupin(), Cmdline(),
        SockBuf(), SysctlField(),  # OS-neutral socket buffers and the sysctl field they use on Linux
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
