"""The test NIC: link state and speed, channels vs CPUs, offloads, rings, RPS.

Sources of truth: ethtool -i/-l/-k/-g and `ethtool IF` (ethtool netlink/*.c output),
/sys/class/net/IF/{operstate,carrier,speed,duplex,mtu,queues/*/rps_cpus}
(Documentation/ABI/testing/sysfs-class-net, Documentation/networking/scaling.rst);
FreeBSD ifconfig(8) options= and capabilities= lines. Interrupts are nic_irq.py's,
counters and kernel-log events nic_health.py's.
"""
from __future__ import annotations

import re

from .base import Check, Finding, HostView, cannot, q
from .kernel_log import nic_events
from .link import NET, link_facts
from .parsers import ethtool_features, ethtool_rows, num


def _g(mbps: int) -> str:
    return f"{mbps / 1000:g} Gbit/s" if mbps >= 1000 else f"{mbps} Mbit/s"


class LinkState(Check):
    id, title = "nic.link", "Link state, carrier, duplex and speed (negotiated vs the NIC's maximum)"
    source = "/sys/class/net/IF/{operstate,carrier,speed,duplex,mtu}; ethtool -i IF; ethtool IF (link modes, Link detected); a capture's ip -s -d link"

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return [self.no_interface(h)]
        f = link_facts(h, dev)
        if f.driver is None and f.carrier is None and f.operstate is None:
            return [cannot(self.id, h.name, f"anything about {dev}'s link", *f.gone)]
        ev = (f"ethtool -i {dev}: driver {f.driver or '?'}; operstate {f.operstate or '?'}, carrier {'?' if f.carrier is None else int(f.carrier)}, "
              f"speed {f.speed if f.speed is not None else '?'}, duplex {f.duplex or '?'}, mtu {f.mtu if f.mtu is not None else '?'}")
        if f.carrier is False or f.operstate in ("down", "lowerlayerdown"):
            return [Finding(self.id, h.name, "problem", f"{dev}: no carrier (link down)", ev,
                            "nothing passes: a cable, transceiver or the peer's port is down, or the interface is administratively down",
                            f"ip link set dev {q(dev)} up; check the cable/transceiver and the switch port", "")]
        if f.kind == "virtual":
            nominal = f" (it reports {_g(f.speed)}: a nominal figure, not a limit)" if f.speed and f.speed > 0 else ""
            return [Finding(self.id, h.name, "info", f"{dev}: a virtual device ({f.driver}) with no physical rate{nominal}, MTU {f.mtu}", ev)]
        if f.kind == "paravirtual":
            shown = f"the hypervisor reports {_g(f.speed)}" if f.speed and f.speed > 0 else "no speed reported"
            return [Finding(self.id, h.name, "info", f"{dev}: a paravirtual NIC ({f.driver}), {shown}: the host's NIC and vhost set the real ceiling; MTU {f.mtu}", ev)]
        out = []
        s = f.settings
        if f.speed is None or f.speed <= 0:
            gone = [g for g in f.gone if not g.known] or ["no speed reported"]
            out.append(cannot(self.id, h.name, f"{dev}'s link speed", *gone))
        elif f.duplex == "half":
            out.append(Finding(self.id, h.name, "problem", f"{dev}: half duplex at {_g(f.speed)}", ev,
                               "half duplex means collisions and a fraction of the rate: almost always a failed autonegotiation (one side forced)",
                               f"set both sides to autonegotiate (ethtool -s {q(dev)} autoneg on) and check the switch port", ""))
        if s is not None and f.speed and f.speed > 0 and s.supported:
            best = max(s.supported)
            if f.speed < best:
                partner = f"; the link partner advertises at most {_g(max(s.partner))}" if s.partner else ""
                limited = f"; this NIC advertises only up to {_g(max(s.advertised))}" if s.advertised and max(s.advertised) < best else ""
                out.append(Finding(self.id, h.name, "warn", f"{dev}: link at {_g(f.speed)}, the NIC supports {_g(best)}{limited}{partner}",
                                   ev + f"; ethtool {dev}: supported up to {_g(best)}, advertised {_g(max(s.advertised)) if s.advertised else '?'}, autoneg {s.autoneg or '?'}",
                                   "a cable, transceiver, switch port or a restricted advertisement holds the link below what the NIC can do",
                                   f"check the cable, transceiver and switch port; where the advertisement was narrowed, let it negotiate every mode again (ethtool -s {q(dev)} autoneg on, no speed forced)", ""))
        if not out:
            out.append(Finding(self.id, h.name, "info", f"{dev}: driver {f.driver}, {_g(f.speed or 0)} {f.duplex or ''} duplex, carrier up, MTU {f.mtu}".replace("  ", " "), ev))
        return out


class Channels(Check):
    id, title = "nic.channels", "NIC channels (queues) vs CPUs"
    source = "ethtool -l IF (Pre-set maximums / Current hardware settings); CPUs online"

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return [self.no_interface(h)]
        r = h.cmd(["ethtool", "-l", dev])
        if not r.known:
            return [cannot(self.id, h.name, f"{dev}'s channels", r)]
        if r.rc != 0 or "Pre-set maximums" not in r.stdout:
            return []  # the driver has no channel control (a veth with one queue, a bridge)
        mx, cur = ethtool_rows(r.stdout, "Pre-set maximums"), ethtool_rows(r.stdout, "Current hardware settings")
        kind = "Combined" if (num(mx.get("Combined")) or 0) > 0 else "RX"
        m, c, cpus = num(mx.get(kind)) or 0, num(cur.get(kind)) or 0, h.cpus()
        if cpus is None:
            return [cannot(self.id, h.name, f"whether {dev}'s {c} channel(s) match the CPUs", *h.cpus_missing())]
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
    source = "ethtool -k IF ([fixed] = cannot change); the kernel log (a NIC hang TSO/GSO off works around); FreeBSD: ifconfig IF options= vs capabilities="
    oses = ("linux", "freebsd")
    NAMES = {"generic-receive-offload": "gro", "generic-segmentation-offload": "gso", "tcp-segmentation-offload": "tso", "large-receive-offload": "lro"}

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return [self.no_interface(h)]
        return self._freebsd(h, dev) if h.os == "freebsd" else self._linux(h, dev)

    def _linux(self, h: HostView, dev: str) -> list[Finding]:
        r = h.cmd(["ethtool", "-k", dev])
        if not r.known:
            return [cannot(self.id, h.name, f"{dev}'s offloads", r)]
        feats = {self.NAMES[k]: v for k, v in ethtool_features(r.stdout).items() if k in self.NAMES}
        off = [s for s in ("gro", "gso", "tso") if feats.get(s, ("?", True))[0] == "off" and not feats[s][1]]
        out = []
        hangs = nic_events(h)
        hang = next((e for e in hangs.events if e.dev == dev and e.kind == "hang" and e.workaround_offloads), None) if hangs.known else None
        for short in off:
            if short in ("tso", "gso") and hang is not None:
                out.append(Finding(self.id, h.name, "info", f"{dev}: {short.upper()} off, the known workaround for the {hang.driver} hang in the kernel log: keep it off",
                                   f"ethtool -k {dev}: {short}: off; {hangs.where}: {hang.line[:160]}",
                                   f"turning {short.upper()} back on brings back the transmit hang ({hang.count} in the log)"))
                continue
            caveat = "" if short == "gro" or hangs.known else f" (the kernel log was not read: if {dev} ever logged a hardware unit hang or TX timeout, it was turned off on purpose; keep it off)"
            out.append(Finding(self.id, h.name, "warn", f"{dev}: {short.upper()} off", f"ethtool -k {dev}: {short}: off",
                               f"without {short.upper()} the stack handles every packet separately: more CPU per Gbit/s, lower ceilings" + caveat,
                               f"ethtool -K {q(dev)} {short} on", f"ethtool -K {q(dev)} {short} off", {"key": f"offload:{short}@{dev}", "value": "on"}))
        if not out:
            shown = ", ".join(f"{k} {v[0]}{' [fixed]' if v[1] else ''}" for k, v in sorted(feats.items()))
            out.append(Finding(self.id, h.name, "info", f"{dev}: {shown}", f"ethtool -k {dev}"))
        return out

    def _freebsd(self, h: HostView, dev: str) -> list[Finding]:
        r = h.cmd(["ifconfig", "-m", dev])
        if not r.known:
            return [cannot(self.id, h.name, f"{dev}'s offloads", r)]
        text = r.stdout
        opts = set(re.findall(r"options=\w+<([^>]*)>", text)[0].split(",")) if "options=" in text else set()
        caps = set(re.findall(r"capabilities=\w+<([^>]*)>", text)[0].split(",")) if "capabilities=" in text else set()
        out = []
        for label, bits, word in (("LRO", ("LRO",), "lro"), ("TSO", ("TSO4", "TSO6"), "tso")):
            miss = [b for b in bits if b in caps and b not in opts]
            if miss:
                out.append(Finding(self.id, h.name, "warn", f"{dev}: {label} supported but off ({', '.join(miss)})",
                                   f"ifconfig -m {dev}: capabilities has {', '.join(miss)}, options lacks it",
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
        if not dev:
            return [self.no_interface(h)]
        r = h.cmd(["ethtool", "-g", dev])
        if not r.known:
            return [cannot(self.id, h.name, f"{dev}'s ring sizes", r)]
        if r.rc != 0 or "Pre-set maximums" not in r.stdout:
            return []  # no ring control (virtual device)
        mx, cur = ethtool_rows(r.stdout, "Pre-set maximums"), ethtool_rows(r.stdout, "Current hardware settings")
        m, c = num(mx.get("RX")), num(cur.get("RX"))
        if not m or not c:
            return []
        ev = f"ethtool -g {dev}: RX {c} of max {m}"
        if c * 4 > m:
            return [Finding(self.id, h.name, "info", f"{dev}: RX ring {c} of {m}", ev)]
        return [Finding(self.id, h.name, "warn", f"{dev}: RX ring {c}, a quarter or less of its maximum {m}", ev,
                        "a short ring overflows during bursts (rx_missed/rx_no_buffer counters): drops that look like a slow path",
                        f"ethtool -G {q(dev)} rx {m}", f"ethtool -G {q(dev)} rx {c}", {"key": f"ring:rx@{dev}", "value": m})]


class Rps(Check):
    id, title = "nic.rps", "Receive packet steering with fewer queues than CPUs"
    source = "/sys/class/net/IF/queues/rx-*/rps_cpus (kernel Documentation/networking/scaling.rst); CPUs online"

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return [self.no_interface(h)]
        got = h.files(f"{NET}{dev}/queues/rx-*/rps_cpus")
        cpus = h.cpus()
        if not got.known or cpus is None:
            return [cannot(self.id, h.name, f"whether RPS spreads {dev}'s receive work", *([got] if not got.known else h.cpus_missing()))]
        rps = got.texts
        if not rps or len(rps) >= cpus:
            return []
        off = all(set(v.replace(",", "")) <= {"0"} for v in rps.values())
        ev = f"{NET}{dev}/queues/rx-*/rps_cpus: " + ", ".join(sorted(set(rps.values()))) + f"; {len(rps)} RX queue(s), {cpus} CPUs"
        if not off:
            return [Finding(self.id, h.name, "info", f"{dev}: RPS on for {len(rps)} RX queue(s)", ev)]
        mask = format((1 << cpus) - 1, "x")
        return [Finding(self.id, h.name, "warn", f"{dev}: {len(rps)} RX queue(s) for {cpus} CPUs and RPS off", ev,
                        "receive processing of the whole link stays on the CPUs that take its interrupts",
                        f"for f in {NET}{q(dev)}/queues/rx-*/rps_cpus; do echo {mask} > $f; done", f"for f in {NET}{q(dev)}/queues/rx-*/rps_cpus; do echo 0 > $f; done",
                        {"key": f"rps@{dev}", "value": mask})]


CHECKS = (LinkState(), Channels(), Offloads(), Rings(), Rps())
