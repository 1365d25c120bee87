"""Where the NIC's interrupts really land (the per-CPU counts of /proc/interrupts, not only
the affinity someone configured), and whether they and the application are on the NIC's
NUMA node.

Queue vectors by driver, as the drivers name them (request_irq names): Intel i40e/ice/iavf
"DRIVER-IF-TxRx-N", ixgbe/igb/igc/bnxt_en "IF-TxRx-N" (igb/e1000e also "IF-rx-N"/"IF-tx-N"),
ena "IF-Tx-Rx-N", vmxnet3 "IF-rxtx-N", sfc/tg3 "IF-N", mlx5 "mlx5_compN@pci:BUS",
mlx4 "mlx4-N@BUS", gve "gve-ntfy-blkN@pci:BUS", virtio-net "virtioN-input.Q"/"-output.Q"
(N the virtio device under /sys/class/net/IF/device). A NIC whose vectors carry none of
these names (hv_netvsc takes its interrupts through VMBus) is "cannot tell", not "spread".
NUMA: /sys/class/net/IF/device/numa_node, /sys/devices/system/node/node*/cpulist.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..knobs.base import cpu_list, cpu_list_text
from .base import Check, Finding, HostView, cannot
from .link import NET, device_path, link_facts
from .parsers import IrqLine, ethtool_info, interrupts

INTERRUPTS = "/proc/interrupts"
ONE_CPU = 0.9  # this share of the queue interrupts on one CPU is "all on one CPU"
MIN_COUNT = 1000  # fewer interrupts than this say nothing about where the load lands


def queue_patterns(dev: str, bus: str, virtio: str) -> list[re.Pattern[str]]:
    d, b = re.escape(dev), re.escape(bus) if bus else "(?!)"
    pats = [rf"^(?:(?:i40e|ice|iavf|ixgbe|igb|igc|bnxt_en)-)?{d}-TxRx-\d+$", rf"^{d}-(?:rx|tx)-\d+$", rf"^{d}-Tx-Rx-\d+$", rf"^{d}-rxtx-\d+$",
            rf"^{d}-\d+$", rf"^mlx5_comp\d+@pci:{b}$", rf"^mlx4-\d+@(?:pci:)?{b}$", rf"^gve-ntfy-blk\d+@pci:{b}$"]
    if virtio:
        pats.append(rf"^{re.escape(virtio)}-(?:input|output)\.\d+$")
    return [re.compile(p) for p in pats]


@dataclass
class Vectors:
    cpus: list[int]  # CPU number of each count column
    queue: list[IrqLine]  # the NIC's queue vectors
    other: list[IrqLine]  # its other vectors (misc, async, config), and lines naming it of unknown kind
    header: bool
    driver: str
    where: str


def nic_vectors(h: HostView, dev: str, text: str, where: str) -> Vectors:
    info = h.cmd(["ethtool", "-i", dev])
    i = ethtool_info(info.stdout) if info.known and info.ok else {}
    bus, driver = i.get("bus-info", ""), i.get("driver", "?")
    path, _ = device_path(h, dev)
    target = path.rsplit("/", 1)[-1] if path else ""
    virtio = target if target.startswith("virtio") else ""
    cpus, lines, header = interrupts(text)
    pats = queue_patterns(dev, bus, virtio)
    queue, other = [], []
    for ln in lines:
        if any(p.match(n) for n in ln.names for p in pats):
            queue.append(ln)
        elif any(n == dev or n.startswith(dev + "-") or (bus and bus in n) or (virtio and n.startswith(virtio + "-")) for n in ln.names):
            other.append(ln)
    if not queue and len(other) == 1 and dev in other[0].names:
        queue, other = other, []  # one vector named after the NIC (e1000e with MSI): it is its queue
    return Vectors(cpus, queue, other, header, driver, where)


def per_cpu(v: Vectors, lines: list[IrqLine]) -> dict[int, int]:
    out: dict[int, int] = {}
    for ln in lines:
        for col, n in enumerate(ln.counts):
            if n and col < len(v.cpus):
                out[v.cpus[col]] = out.get(v.cpus[col], 0) + n
    return out


def landing(h: HostView, dev: str) -> tuple[Vectors | None, dict[int, int], str]:
    """(the NIC's vectors, interrupts per CPU over its queue vectors, "in the interval" or
    "since boot"): the counts of the interval when enough arrived in it, else since boot."""
    key = f"landing:{dev}"
    if key not in h.memo:
        h.memo[key] = _landing(h, dev)
    v = h.memo[key][0]
    if v is not None:
        h.note(v.where)
    return h.memo[key]  # type: ignore[no-any-return]


def _landing(h: HostView, dev: str) -> tuple[Vectors | None, dict[int, int], str]:
    a = h.sample(INTERRUPTS)
    if a.text is None:
        return None, {}, ""
    v = nic_vectors(h, dev, a.text, a.where)
    first = per_cpu(v, v.queue)
    b = h.again(INTERRUPTS)
    if b.text is not None:
        names = {ln.irq for ln in v.queue}
        _, later, _ = interrupts(b.text)
        second = per_cpu(v, [ln for ln in later if ln.irq in names])
        delta = {c: second.get(c, 0) - first.get(c, 0) for c in second if second.get(c, 0) > first.get(c, 0)}
        if sum(delta.values()) >= MIN_COUNT:
            return v, delta, "in the interval"
    return v, first, "since boot"


class IrqSpread(Check):
    id, title = "nic.irq", "Where the NIC's queue interrupts land (per-CPU counts)"
    source = "/proc/interrupts read twice (the NIC's queue vectors by the drivers' names; per-CPU counts), /proc/irq/N/smp_affinity_list"

    def prepare(self, h: HostView) -> None:
        h.sample(INTERRUPTS)

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return [self.no_interface(h)]
        got = h.sample(INTERRUPTS)
        if got.text is None:
            return [cannot(self.id, h.name, f"where {dev}'s interrupts land", got)]
        v, counts, when = landing(h, dev)
        assert v is not None
        facts = link_facts(h, dev)
        if not v.queue and facts.kind == "virtual":
            return [Finding(self.id, h.name, "info", f"{dev} is a virtual device ({facts.driver}): no interrupts of its own; the NIC under it takes them", got.where)]
        if not v.queue:
            names = sorted({n for ln in v.other for n in ln.names})
            what = (f"which of {dev}'s interrupts carry its queues: its lines are named {', '.join(names[:6])}, a naming doctor does not know" if names else
                    f"which interrupts are {dev}'s: no line of /proc/interrupts names it, its PCI function or its virtio device (driver {v.driver}"
                    + (": hv_netvsc's interrupts arrive through VMBus, not per NIC" if v.driver == "hv_netvsc" else "") + ")")
            return [cannot(self.id, h.name, what, f"{v.where}: {len(v.queue) + len(v.other)} line(s) of {dev}",
                           how="if it is a virtual device (veth, bridge), it has no interrupts of its own; else name the driver's vectors in an issue")]
        total = sum(counts.values())
        spread = ", ".join(f"CPU{c} {n}" for c, n in sorted(counts.items(), key=lambda kv: -kv[1])[:6])
        names = f"{v.queue[0].names[-1]}" + (f" .. {v.queue[-1].names[-1]}" if len(v.queue) > 1 else "")
        ev = f"{v.where}: {len(v.queue)} queue vector(s) of {dev} ({names}); interrupts {when}: {spread or 'none'}" + ("" if v.header else " (no CPU header: columns taken as CPU0..N)")
        aff = {ln.irq: h.read(f"/proc/irq/{ln.irq}/smp_affinity_list") for ln in v.queue[:8]}
        if any(aff.values()):
            ev += "; smp_affinity_list: " + ", ".join(f"{k}={a}" for k, a in aff.items() if a)
        if len(v.cpus) <= 1:
            return [Finding(self.id, h.name, "info", f"{dev}: one CPU takes all interrupts (the host has one)", ev)]
        if total < MIN_COUNT:
            return [Finding(self.id, h.name, "info", f"{dev}: {total} queue interrupts so far: too few to see where the load lands", ev)]
        top_cpu, top = max(counts.items(), key=lambda kv: kv[1])
        if len(v.queue) == 1:
            return [Finding(self.id, h.name, "info", f"{dev}: one queue vector, on CPU{top_cpu} by design (RPS spreads its receive work: nic.rps)", ev)]
        if top / total >= ONE_CPU:
            return [Finding(self.id, h.name, "warn", f"{dev}: its {len(v.queue)} queue interrupts land on CPU{top_cpu} ({top / total:.0%} of {total} {when})", ev,
                            "one CPU takes every queue's interrupts and their receive work: the queues do not spread the load, that CPU saturates first",
                            "start irqbalance (systemctl enable --now irqbalance), or spread them: [knobs] \"irq_affinity:N\" per IRQ, or the driver's set_irq_affinity script",
                            "the smp_affinity_list values shown back")]
        return [Finding(self.id, h.name, "info", f"{dev}: {len(v.queue)} queue vectors over {len(counts)} CPU(s) ({when})", ev)]


class Numa(Check):
    id, title = "nic.numa", "The NIC's interrupts and the application's CPUs on the NIC's NUMA node"
    source = "/sys/class/net/IF/device/numa_node, /sys/devices/system/node/node*/cpulist, /proc/interrupts (where the queue interrupts land), --app-cpus"

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return [self.no_interface(h)]
        nodes = h.files("/sys/devices/system/node/node*/cpulist")
        if not nodes.known:
            return [cannot(self.id, h.name, "how many NUMA nodes this host has", nodes)]
        cpus_of = {int(re.search(r"node(\d+)/", p).group(1)): set(cpu_list(t)) for p, t in nodes.texts.items() if re.search(r"node(\d+)/", p) and t}  # type: ignore[union-attr]
        if len(cpus_of) <= 1:
            return [Finding(self.id, h.name, "info", "one NUMA node: nothing to place", nodes.where)]
        node = h.get(f"{NET}{dev}/device/numa_node")
        if node.absent:
            return [Finding(self.id, h.name, "info", f"{dev} is no PCI device: it has no NUMA node", node.where)]
        if node.text is None:
            return [cannot(self.id, h.name, f"which NUMA node {dev} is on", node)]
        n = int(node.text) if node.text.lstrip("-").isdigit() else -1
        if n < 0 or n not in cpus_of:
            return [Finding(self.id, h.name, "info", f"the platform reports no NUMA node for {dev} (numa_node {node.text})", node.where)]
        local = cpus_of[n]
        ev = f"{node.where}: {n}; node{n} CPUs {cpu_list_text(local)}"
        out = []
        v, counts, when = landing(h, dev) if h.read(INTERRUPTS) is not None else (None, {}, "")
        if v is None or not v.queue:
            out.append(cannot(self.id, h.name, f"whether {dev}'s interrupts land on node {n}", h.get(INTERRUPTS) if v is None else f"{dev}'s queue vectors not identified (nic.irq)"))
        else:
            remote = {c: k for c, k in counts.items() if c not in local}
            total = sum(counts.values())
            if total >= MIN_COUNT and sum(remote.values()) > 0.1 * total:
                out.append(Finding(self.id, h.name, "warn", f"{dev} is on node {n}, but {sum(remote.values()) / total:.0%} of its queue interrupts land on other nodes' CPUs ({when})",
                                   ev + "; remote: " + ", ".join(f"CPU{c} {k}" for c, k in sorted(remote.items())[:6]),
                                   "every received packet then crosses the interconnect between sockets: more latency, less throughput",
                                   f"pin its IRQs to node {n}'s CPUs ({cpu_list_text(local)}): irqbalance does it when not restricted; or [knobs] \"irq_affinity:N\"", ""))
        if h.app_cpus is None:
            out.append(Finding(self.id, h.name, "info", f"{dev} is on node {n} (CPUs {cpu_list_text(local)}): run the application there (where it runs was not given: --app-cpus)", ev))
        elif not set(h.app_cpus) <= local:
            out.append(Finding(self.id, h.name, "warn", f"the application's CPUs {cpu_list_text(set(h.app_cpus))} are not all on {dev}'s node {n} ({cpu_list_text(local)})", ev,
                               "its data crosses between sockets on every packet", f"pin it to node {n}: taskset -c {cpu_list_text(local)} / numactl -N {n}", ""))
        elif not out:
            out.append(Finding(self.id, h.name, "info", f"{dev}, its interrupts and the application are on node {n}", ev))
        return out


CHECKS = (IrqSpread(), Numa())
