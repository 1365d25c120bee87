"""The test NIC: driver, link, channels vs CPUs, offloads, rings, IRQ spread, RPS.

Sources of truth: ethtool -i/-l/-k/-g (ethtool netlink/*.c output), /sys/class/net/IF/
{speed,mtu,queues/*/rps_cpus}, /proc/interrupts and /proc/irq/N/smp_affinity_list
(kernel Documentation/networking/scaling.rst); FreeBSD ifconfig(8) options= and
capabilities= lines.
"""
from __future__ import annotations

import re

from .base import Check, Finding, HostView, q

NET = "/sys/class/net/"


def _rows(text: str, section: str) -> dict[str, str]:
    """The `name: value` rows of one section of ethtool -l / -g output."""
    out: dict[str, str] = {}
    part = text.split(section, 1)[1] if section in text else ""
    for line in part.splitlines()[1:]:
        if not line.strip() or line.rstrip().endswith(":") and not line.startswith(("RX", "TX", "Combined", "Other")):
            break
        k, _, v = line.partition(":")
        out[k.strip()] = v.strip()
    return out


def _num(v: str | None) -> int | None:
    return int(v) if v and v.isdigit() else None


class Link(Check):
    id, title = "nic.link", "Driver, link speed and MTU of the test NIC"
    source = "ethtool -i IF; /sys/class/net/IF/{speed,mtu,operstate}"

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return [Finding(self.id, h.name, "warn", "no test interface found (no default route, no interface named)", "/proc/net/route",
                            "the NIC checks need one: set `interface` for the host")]
        drv = re.search(r"^driver:\s*(\S+)", h.run(["ethtool", "-i", dev]).stdout, re.M)
        speed, mtu = h.read(f"{NET}{dev}/speed"), h.read(f"{NET}{dev}/mtu")
        sp = _num(speed)
        seen = f"{dev}: driver {drv.group(1) if drv else '?'}, " + (f"{sp / 1000:g} Gbit/s link" if sp and sp > 0 else "no link speed (virtual NIC)") + f", MTU {mtu}"
        return [Finding(self.id, h.name, "info", seen, f"ethtool -i {dev}; {NET}{dev}/speed: {speed}; mtu: {mtu}")]


class Channels(Check):
    id, title = "nic.channels", "NIC channels (queues) vs CPUs"
    source = "ethtool -l IF (Pre-set maximums / Current hardware settings)"

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        r = h.run(["ethtool", "-l", dev]) if dev else None
        if r is None or r.returncode != 0 or "Pre-set maximums" not in r.stdout:
            return []
        mx, cur = _rows(r.stdout, "Pre-set maximums"), _rows(r.stdout, "Current hardware settings")
        kind = "Combined" if (_num(mx.get("Combined")) or 0) > 0 else "RX"
        m, c, cpus = _num(mx.get(kind)) or 0, _num(cur.get(kind)) or 0, h.cpus()
        ev = f"ethtool -l {dev}: {kind.lower()} {c} of max {m}; {cpus} CPUs"
        want = min(m, cpus)
        if m <= 1 or c >= want:
            return [Finding(self.id, h.name, "info", f"{dev}: {c} {kind.lower()} channel(s) of {m}, {cpus} CPUs", ev)]
        key = f"channels:{kind.lower()}@{dev}"
        return [Finding(self.id, h.name, "warn", f"{dev}: {c} {kind.lower()} channel(s) in use, {m} possible, {cpus} CPUs", ev,
                        "fewer queues than CPUs puts all receive work of a fast link on a few cores (study A)",
                        f"ethtool -L {q(dev)} {kind.lower()} {want}", f"ethtool -L {q(dev)} {kind.lower()} {c}", {"key": key, "value": want})]


class Offloads(Check):
    id, title = "nic.offloads", "Receive and segmentation offloads (GRO, GSO, TSO, LRO)"
    source = "ethtool -k IF ([fixed] = cannot change); FreeBSD: ifconfig IF options= vs capabilities="
    oses = ("linux", "freebsd")
    NAMES = {"generic-receive-offload": "gro", "generic-segmentation-offload": "gso", "tcp-segmentation-offload": "tso", "large-receive-offload": "lro"}

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return []
        return self._freebsd(h, dev) if h.os == "freebsd" else self._linux(h, dev)

    def _linux(self, h: HostView, dev: str) -> list[Finding]:
        r = h.run(["ethtool", "-k", dev])
        feats = {}
        for line in r.stdout.splitlines():
            name, _, rest = line.strip().partition(":")
            if name in self.NAMES:
                feats[self.NAMES[name]] = (rest.split()[0] if rest.split() else "?", "[fixed]" in rest)
        out = []
        for short in ("gro", "gso", "tso"):
            state, fixed = feats.get(short, ("?", True))
            if state == "off" and not fixed:
                out.append(Finding(self.id, h.name, "warn", f"{dev}: {short.upper()} off", f"ethtool -k {dev}: {short}: off",
                                   f"without {short.upper()} the stack handles every packet separately: more CPU per Gbit/s, lower ceilings",
                                   f"ethtool -K {q(dev)} {short} on", f"ethtool -K {q(dev)} {short} off", {"key": f"offload:{short}@{dev}", "value": "on"}))
        if not out:
            shown = ", ".join(f"{k} {v[0]}{' [fixed]' if v[1] else ''}" for k, v in sorted(feats.items()))
            out.append(Finding(self.id, h.name, "info", f"{dev}: {shown}", f"ethtool -k {dev}"))
        return out

    def _freebsd(self, h: HostView, dev: str) -> list[Finding]:
        text = h.run(["ifconfig", "-m", dev]).stdout
        opts = set(re.findall(r"options=\w+<([^>]*)>", text)[0].split(",")) if "options=" in text else set()
        caps = set(re.findall(r"capabilities=\w+<([^>]*)>", text)[0].split(",")) if "capabilities=" in text else set()
        out = []
        for label, bits, word in (("LRO", ("LRO",), "lro"), ("TSO", ("TSO4", "TSO6"), "tso")):
            missing = [b for b in bits if b in caps and b not in opts]
            if missing:
                out.append(Finding(self.id, h.name, "warn", f"{dev}: {label} supported but off ({', '.join(missing)})",
                                   f"ifconfig -m {dev}: capabilities has {', '.join(missing)}, options lacks it",
                                   "study B: FreeBSD on vmx ran 7x slower than Debian until LRO was on",
                                   f"ifconfig {q(dev)} {word}", f"ifconfig {q(dev)} -{word}", {"key": f"offload:{word}@{dev}", "value": "on"}))
        if not out:
            out.append(Finding(self.id, h.name, "info", f"{dev}: options {','.join(sorted(opts)) or 'none'}", f"ifconfig -m {dev}"))
        return out


class Rings(Check):
    id, title = "nic.rings", "Descriptor ring sizes vs their maximum"
    source = "ethtool -g IF"

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        r = h.run(["ethtool", "-g", dev]) if dev else None
        if r is None or r.returncode != 0 or "Pre-set maximums" not in r.stdout:
            return []
        mx, cur = _rows(r.stdout, "Pre-set maximums"), _rows(r.stdout, "Current hardware settings")
        m, c = _num(mx.get("RX")), _num(cur.get("RX"))
        if not m or not c:
            return []
        ev = f"ethtool -g {dev}: RX {c} of max {m}"
        if c * 4 > m:
            return [Finding(self.id, h.name, "info", f"{dev}: RX ring {c} of {m}", ev)]
        return [Finding(self.id, h.name, "warn", f"{dev}: RX ring {c}, a quarter or less of its maximum {m}", ev,
                        "a short ring overflows during bursts (rx_missed/rx_no_buffer counters): drops that look like a slow path",
                        f"ethtool -G {q(dev)} rx {m}", f"ethtool -G {q(dev)} rx {c}", {"key": f"ring:rx@{dev}", "value": m})]


class IrqSpread(Check):
    id, title = "nic.irq", "Where the NIC's interrupts land"
    source = "/proc/interrupts (lines naming the interface or its PCI function), /proc/irq/N/smp_affinity_list"

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        text = h.read("/proc/interrupts") or ""
        if not dev or not text:
            return []
        bus = (h.run(["ethtool", "-i", dev]).stdout.split("bus-info:", 1) + [""])[1].split("\n")[0].strip()
        # a virtio-net NIC's IRQs are named after its virtio device (virtio2-input.0), not the interface
        target = h.run(["readlink", "-f", f"{NET}{dev}/device"]).stdout.strip().rsplit("/", 1)[-1]
        vname = target if target.startswith("virtio") else ""
        irqs = []
        for line in text.splitlines()[1:]:
            parts = line.split()
            if not parts or not parts[0].rstrip(":").isdigit():
                continue
            label = line.rsplit(None, 1)[-1]
            if label.startswith(dev + "-") or label == dev or (bus and bus in line) or (vname and label.startswith(vname + "-")):
                irqs.append(parts[0].rstrip(":"))
        if not irqs:
            return []
        aff = {n: h.read(f"/proc/irq/{n}/smp_affinity_list") or "?" for n in irqs}
        distinct = set(aff.values())
        ev = f"/proc/interrupts: {len(irqs)} IRQs of {dev}; smp_affinity_list: " + ", ".join(f"{n}={a}" for n, a in list(aff.items())[:8])
        if len(irqs) > 1 and len(distinct) == 1 and "-" not in next(iter(distinct)) and "," not in next(iter(distinct)):
            cpu = next(iter(distinct))
            return [Finding(self.id, h.name, "warn", f"all {len(irqs)} IRQs of {dev} on CPU {cpu}", ev,
                            "one CPU takes every queue's interrupts: the queues do not spread the work",
                            "start irqbalance, or spread them: [knobs] \"irq_affinity:N\" per IRQ", "the same files back to " + cpu)]
        return [Finding(self.id, h.name, "info", f"{len(irqs)} IRQs of {dev} on {len(distinct)} CPU set(s)", ev)]


class Rps(Check):
    id, title = "nic.rps", "Receive packet steering with fewer queues than CPUs"
    source = "/sys/class/net/IF/queues/rx-*/rps_cpus (kernel Documentation/networking/scaling.rst)"

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return []
        rps = h.files(f"{NET}{dev}/queues/rx-*/rps_cpus")
        cpus = h.cpus()
        if not rps or len(rps) >= cpus:
            return []
        off = all(set(v.replace(",", "")) <= {"0"} for v in rps.values())
        ev = f"{NET}{dev}/queues/rx-*/rps_cpus: " + ", ".join(sorted(set(rps.values()))) + f"; {len(rps)} RX queue(s), {cpus} CPUs"
        if not off:
            return [Finding(self.id, h.name, "info", f"{dev}: RPS on for {len(rps)} RX queue(s)", ev)]
        mask = format((1 << cpus) - 1, "x")
        return [Finding(self.id, h.name, "warn", f"{dev}: {len(rps)} RX queue(s) for {cpus} CPUs and RPS off", ev,
                        "receive processing of the whole link stays on the CPUs that take its interrupts",
                        f"for f in {NET}{dev}/queues/rx-*/rps_cpus; do echo {mask} > $f; done", f"for f in {NET}{dev}/queues/rx-*/rps_cpus; do echo 0 > $f; done",
                        {"key": f"rps@{dev}", "value": mask})]


CHECKS = (Link(), Channels(), Offloads(), Rings(), IrqSpread(), Rps())
