"""NIC hangs, resets, TX timeouts and crashes in the kernel log, with the known workaround
per driver (nic.hangs); the same events tell nic.offloads that TSO/GSO are off on purpose.

Messages, as the drivers print them: e1000e "Detected Hardware Unit Hang" and "Reset
adapter unexpectedly" (drivers/net/ethernet/intel/e1000e/netdev.c); e1000/igb/igc/ixgbe
"Detected Tx Unit Hang"; the stack's "NETDEV WATCHDOG: IF (driver): transmit queue N timed
out" (net/sched/sch_generic.c; since 6.x "DRIVER BUS IF: NETDEV WATCHDOG: CPU: N: transmit
queue N timed out N ms"); bnxt_en "TX timeout detected, starting reset task!"; mlx5_core
"device's health compromised - reached miss count" (mlx5/core/health.c); ena "Keep alive
watchdog timeout." and "Found a Tx that wasn't completed on time"; r8169/r8125
"rtl_*_cond == N (loop: 42, delay: 100)"; virtio_net "TX timeout on queue"; i40e/ice
"tx_timeout recovery level"; a "BUG:"/"Oops"/"general protection fault" whose RIP is in a
network driver module; "dropped over-mtu packet: N > M" (openvswitch, net.tunnel).
Live: `dmesg` (this boot), else `journalctl -k -b`; a capture: what it holds
(sos_commands/kernel/dmesg, else var/log/kern.log or messages, which span older boots).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .base import Check, Finding, HostView, cannot, q
from .sources import Got, Ran

ASPM = "disable PCIe ASPM for the NIC (pcie_aspm=off on the kernel command line) and update the driver/firmware"
WORKAROUND = {
    "e1000e": "ethtool -K {dev} tso off gso off (the common workaround for this e1000e hang; if it persists, " + ASPM + ")",
    "e1000": "on a VM, give it a virtio NIC instead of the emulated e1000; on hardware, ethtool -K {dev} tso off",
    "igb": "update the igb driver and NIC firmware; check the log for PCIe (AER) errors; " + ASPM,
    "igc": "update the igc driver (early I225/I226 revisions); " + ASPM,
    "ixgbe": "update the ixgbe driver and NIC firmware; check PCIe (AER) errors and the transceiver",
    "r8169": ASPM + " (or use Realtek's r8168/r8125 driver)",
    "r8125": ASPM,
    "r8168": ASPM,
    "bnxt_en": "update the bnxt_en driver and the NIC firmware (bnxtnvm); the driver resets the NIC on each timeout",
    "mlx5_core": "update the NIC firmware (mlxfwmanager) and the driver; a health event resets the device",
    "ena": "update the ena driver; the device is reset on each event; check the instance's allowance counters (ethtool -S: *_allowance_exceeded)",
    "virtio_net": "the hypervisor stopped serving the queue: check the host's vhost threads and load",
    "i40e": "update the i40e driver and NVM firmware",
    "ice": "update the ice driver, the DDP package and the NVM firmware",
}
NET_MODULES = {"e1000e", "e1000", "igb", "igc", "ixgbe", "i40e", "ice", "iavf", "mlx5_core", "mlx4_en", "bnxt_en", "tg3", "bnx2x", "r8169",
               "virtio_net", "vmxnet3", "hv_netvsc", "uio_hv_generic", "ena", "gve", "sfc", "nfp", "qede", "be2net", "vxlan", "geneve", "wireguard", "openvswitch"}

_PREFIX = r"(?P<drv>[\w-]+) (?P<bus>[\w:.]+)(?: (?P<dev>[^\s:]+))?: "
PATTERNS = (
    ("hang", re.compile(_PREFIX + r"Detected (?:Hardware|Tx) Unit Hang")),
    ("reset", re.compile(_PREFIX + r"Reset adapter unexpectedly")),
    ("timeout", re.compile(r"NETDEV WATCHDOG: (?P<dev>[^\s(]+) \((?P<drv>[^)]+)\): transmit queue \d+ timed out")),
    ("timeout", re.compile(_PREFIX + r"NETDEV WATCHDOG: CPU: \d+: transmit queue \d+ timed out")),
    ("timeout", re.compile(_PREFIX + r"(?:TX timeout detected|TX timeout on queue|tx_timeout recovery level|TX driver issue detected)")),
    ("health", re.compile(_PREFIX + r".*?(?:device's health compromised|Fatal error \d+ detected|Keep alive watchdog timeout|Found a Tx that wasn't completed on time)")),
    ("stall", re.compile(_PREFIX + r"rtl_\w+_cond == \d+ \(loop")),
)
CRASH = re.compile(r"RIP: \S+:\S+\+\S+ \[(?P<drv>\w+)\]")
FLAP = re.compile(r"(?:^|\s)(?P<dev>[\w.-]+): (?:NIC )?Link is Down")
OVERMTU = re.compile(r"(?P<dev>[\w.-]+): dropped over-mtu packet: (?P<size>\d+) > (?P<mtu>\d+)")
FLAPS = 3  # link-down messages of one device before it counts as flapping


@dataclass
class Event:
    kind: str  # hang | reset | timeout | health | stall | crash | flap | overmtu
    driver: str
    dev: str | None
    line: str
    count: int = 1

    @property
    def workaround(self) -> str:
        w = WORKAROUND.get(self.driver, "update the driver and the NIC's firmware; report it with this log")
        return w.format(dev=q(self.dev) if self.dev else "IF")  # a name from the log, quoted for the shell

    @property
    def workaround_offloads(self) -> bool:
        """TSO/GSO off is this hang's known workaround."""
        return self.driver in ("e1000e", "e1000") and self.kind in ("hang", "reset")


@dataclass
class KernelLog:
    known: bool
    where: str = ""
    lines: int = 0
    events: list[Event] = field(default_factory=list)
    gone: list[Got | Ran] = field(default_factory=list)


def read_log(h: HostView) -> tuple[str | None, str, list[Got | Ran]]:
    gone: list[Got | Ran] = []
    for argv in (["dmesg"], ["journalctl", "-k", "-b", "--no-pager", "-q"]):
        r = h.cmd(argv)
        if r.known and r.ok and r.stdout.strip():
            return r.stdout, r.where, gone
        gone.append(r)
    for path in ("/var/log/kern.log", "/var/log/messages"):
        g = h.get(path)
        if g.text:
            return g.text, g.where + " (may span older boots)", gone
        gone.append(g)
    return None, "", gone


def parse_events(text: str) -> list[Event]:
    found: dict[tuple[str, str, str | None], Event] = {}
    crash_pending = False
    flaps: Counter[str] = Counter()
    for line in text.splitlines():
        if "BUG:" in line or "Oops" in line or "general protection fault" in line:
            crash_pending = True
        for kind, pat in PATTERNS:
            m = pat.search(line)
            if m:
                drv, dev = m.group("drv"), m.groupdict().get("dev")
                _add(found, Event(kind, drv, dev, line.strip()))
                break
        m = CRASH.search(line)
        if m and crash_pending and m.group("drv") in NET_MODULES:
            _add(found, Event("crash", m.group("drv"), None, line.strip()))
            crash_pending = False
        m = FLAP.search(line)
        if m:
            flaps[m.group("dev")] += 1
        m = OVERMTU.search(line)
        if m:
            _add(found, Event("overmtu", "", m.group("dev"), line.strip()))
    out = list(found.values())
    out += [Event("flap", "", dev, f"{dev}: Link is Down ({n} times)", n) for dev, n in flaps.items() if n >= FLAPS]
    return out


def _add(found: dict[tuple[str, str, str | None], Event], e: Event) -> None:
    key = (e.kind, e.driver, e.dev)
    if key in found:
        found[key].count += 1
    else:
        found[key] = e


def nic_events(h: HostView) -> KernelLog:
    if "kernel_log" not in h.memo:
        text, where, gone = read_log(h)
        h.memo["kernel_log"] = (KernelLog(False, gone=gone) if text is None
                                else KernelLog(True, where, len(text.splitlines()), parse_events(text)))
    log: KernelLog = h.memo["kernel_log"]
    h.note(log.where.removesuffix(" (may span older boots)"))
    return log


class Hangs(Check):
    id, title, per_machine = "nic.hangs", "NIC hangs, resets, TX timeouts, health events and driver crashes in the kernel log", True
    source = "dmesg (else journalctl -k -b); a capture: sos_commands/kernel/dmesg, var/log/kern.log or messages"
    NAMES = {"hang": "hardware/TX unit hang", "reset": "adapter reset", "timeout": "TX timeout", "health": "device health event",
             "stall": "the chip did not drain its queues on reset", "crash": "kernel crash in the driver"}

    def run(self, h: HostView) -> list[Finding]:
        log = nic_events(h)
        if not log.known:
            return [cannot(self.id, h.name, "whether a NIC hung, reset or timed out (no kernel log)", *log.gone,
                           how="run as root (dmesg), or send `dmesg` / `journalctl -k -b` output or a capture")]
        out = []
        for e in log.events:
            if e.kind in self.NAMES:
                who = f"{e.dev} ({e.driver})" if e.dev else e.driver
                out.append(Finding(self.id, h.name, "problem", f"{who}: {self.NAMES[e.kind]}, {e.count} time(s) in the kernel log", f"{log.where}: {e.line[:200]}",
                                   "the NIC stops sending until the driver resets it: stalls, lost connections, throughput collapses", e.workaround, ""))
            elif e.kind == "flap":
                out.append(Finding(self.id, h.name, "warn", f"{e.dev}: link went down {e.count} times", f"{log.where}: {e.line}",
                                   "a flapping link (cable, transceiver, switch port, or a driver resetting the NIC) interrupts every test",
                                   "check the cable/transceiver and the switch port's log; look for resets of this NIC just before", ""))
        if not out:
            out.append(Finding(self.id, h.name, "info", f"no NIC hang, reset, TX timeout, health event or driver crash in the kernel log ({log.lines} lines)", log.where))
        return out


CHECKS = (Hangs(),)
