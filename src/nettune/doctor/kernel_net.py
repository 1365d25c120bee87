"""Kernel network settings against the link: socket buffer limits vs the bandwidth-delay
product, congestion control and qdisc, backlog, listen queue, conntrack.

Sources of truth: kernel Documentation/networking/ip-sysctl.rst (tcp_rmem/tcp_wmem cap
autotuning; SO_RCVBUF is capped by rmem_max), ESnet fasterdata host tuning (BDP = rate x
RTT / 8), /proc/sys/net/netfilter/nf_conntrack_{count,max}, `tc qdisc show dev IF`.
"""
from __future__ import annotations

from .base import Check, Finding, HostView, q

SYS = "/proc/sys/net/"
MIB = 1 << 20


def link_bps(h: HostView) -> tuple[float, str]:
    """The test NIC's link rate (bit/s) and where it came from (10 Gbit/s assumed if unknown)."""
    speed = h.read(f"/sys/class/net/{h.interface}/speed") if h.interface else None
    if speed and speed.lstrip("-").isdigit() and int(speed) > 0:
        return int(speed) * 1e6, f"{h.interface} link {int(speed) / 1000:g} Gbit/s"
    return 10e9, "link speed unknown: 10 Gbit/s assumed"


def _mib(n: float) -> str:
    return f"{n / MIB:.1f} MiB" if n >= MIB else f"{n / 1024:.0f} KiB"


def _pow2(n: float) -> int:
    return 1 << max(int(n) - 1, 1).bit_length()


class Buffers(Check):
    id, title = "net.buffers", "Socket buffer limits vs the bandwidth-delay product"
    source = "/proc/sys/net/core/{r,w}mem_max, /proc/sys/net/ipv4/tcp_{r,w}mem; RTT measured to the study's peers (else 1 ms assumed)"

    def run(self, h: HostView) -> list[Finding]:
        bps, rate_src = link_bps(h)
        rtt = h.rtt_ms if h.rtt_ms else 1.0
        rtt_src = f"RTT {rtt:.3g} ms measured to {h.rtt_peer}" if h.rtt_ms else "RTT 1 ms assumed (give a study file to measure it)"
        bdp = bps * rtt / 1e3 / 8
        floor = 16 * MIB if bps >= 10e9 else 4 * MIB  # room for iperf -w and for RTT growth under load
        out = []
        for name, path in (("tcp_rmem", "ipv4/tcp_rmem"), ("tcp_wmem", "ipv4/tcp_wmem")):
            text = h.read(SYS + path)
            if not text or len(text.split()) != 3:
                continue
            lo, mid, mx = (int(x) for x in text.split())
            ev = f"{SYS}{path}: {text}; BDP {_mib(bdp)} ({rate_src}, {rtt_src})"
            if mx < 2 * bdp:
                want = _pow2(max(2 * bdp, floor))
                out.append(Finding(self.id, h.name, "problem", f"{name} max {_mib(mx)} is below twice the BDP ({_mib(bdp)})", ev,
                                   "TCP autotuning stops at this size, so one stream cannot fill the path (throughput <= window / RTT)",
                                   f"sysctl -w net.ipv4.{name}='{lo} {mid} {want}'", f"sysctl -w net.ipv4.{name}='{text}'",
                                   {"key": f"sysctl:net.ipv4.{name}", "value": f"{lo} {mid} {want}"}))
        for name in ("rmem_max", "wmem_max"):
            text, owner = h.setting(SYS + "core/" + name)  # host-wide in a lab namespace: once, for the machine
            if not text or not text.isdigit():
                continue
            v = int(text)
            ev = f"{SYS}core/{name}: {v}; BDP {_mib(bdp)} ({rate_src}, {rtt_src})"
            need = max(2 * bdp, floor)
            if v < need:
                want = _pow2(need)
                out.append(Finding(self.id, owner, "warn", f"{name} {v} ({_mib(v)}) is small for this link (want >= {_mib(need)})", ev,
                                   "a tool that sets its buffer (iperf3 -w, iperf -w) is silently capped here, and autotuning turns off (study E's 212992 on 100 Gbit/s)",
                                   f"sysctl -w net.core.{name}={want}", f"sysctl -w net.core.{name}={v}",
                                   {"key": f"sysctl:net.core.{name}", "value": want}))
        if not any(f.host == h.name for f in out):  # this host's own buffers are fine (host-wide ones go to the machine)
            seen = f"buffers cover twice the BDP ({_mib(bdp)})" if not out else \
                f"tcp_rmem and tcp_wmem cover twice the BDP ({_mib(bdp)}); rmem_max/wmem_max are {h.machine}'s"
            out.append(Finding(self.id, h.name, "info", seen, f"{SYS}ipv4/tcp_rmem, core/rmem_max; {rate_src}, {rtt_src}"))
        return out


class CongestionQdisc(Check):
    id, title = "net.cc", "Congestion control and the NIC's qdisc"
    source = "/proc/sys/net/ipv4/tcp_congestion_control; tc qdisc show dev IF"

    def run(self, h: HostView) -> list[Finding]:
        cc = h.read(SYS + "ipv4/tcp_congestion_control") or "?"
        dev = h.interface
        tc = h.run(["tc", "qdisc", "show", "dev", dev]).stdout if dev else ""
        root = next((ln.split()[1] for ln in tc.splitlines() if " root" in ln or ln.split()[2:3] == ["root"]), tc.split()[1] if tc.split() else "?")
        ev = f"{SYS}ipv4/tcp_congestion_control: {cc}; tc qdisc show dev {dev}: {root}"
        if cc == "bbr" and root not in ("fq", "mq"):
            return [Finding(self.id, h.name, "warn", f"congestion control bbr with qdisc {root} on {dev}", ev,
                            "BBR paces its sending; fq does that pacing efficiently (without it the kernel paces per socket, at a CPU cost)",
                            f"tc qdisc replace dev {q(dev)} root fq", f"tc qdisc replace dev {q(dev)} root {root}", {"key": f"qdisc@{dev}", "value": "fq"})]
        return [Finding(self.id, h.name, "info", f"congestion control {cc}, qdisc {root} on {dev}", ev)]


class Backlog(Check):
    id, title = "net.backlog", "netdev_max_backlog for the link rate"
    source = "/proc/sys/net/core/netdev_max_backlog (host-wide)"

    def run(self, h: HostView) -> list[Finding]:
        text, owner = h.setting(SYS + "core/netdev_max_backlog")  # not in a lab namespace: the machine's
        if not text or not text.isdigit():
            return []
        bps, src = link_bps(h)
        v = int(text)
        if bps >= 10e9 and v < 10000:
            return [Finding(self.id, owner, "warn", f"netdev_max_backlog {v} on a {bps / 1e9:g} Gbit/s link", f"{SYS}core/netdev_max_backlog: {v}; {src}",
                            "packets beyond this many per CPU are dropped before the stack sees them (softnet_stat drops)",
                            "sysctl -w net.core.netdev_max_backlog=250000", f"sysctl -w net.core.netdev_max_backlog={v}",
                            {"key": "sysctl:net.core.netdev_max_backlog", "value": 250000})]
        return [Finding(self.id, owner, "info", f"netdev_max_backlog {v}", f"{SYS}core/netdev_max_backlog: {v}")]


class Somaxconn(Check):
    id, title = "net.somaxconn", "Listen queue cap"
    source = "/proc/sys/net/core/somaxconn (per network namespace)"

    def run(self, h: HostView) -> list[Finding]:
        text = h.read(SYS + "core/somaxconn")
        if not text or not text.isdigit():
            return []
        v = int(text)
        if v < 1024:
            return [Finding(self.id, h.name, "warn", f"somaxconn {v}", f"{SYS}core/somaxconn: {v}",
                            "many parallel connections (iperf -P 128, a mesh) overflow the listen queue: refused or slow connects",
                            "sysctl -w net.core.somaxconn=4096", f"sysctl -w net.core.somaxconn={v}", {"key": "sysctl:net.core.somaxconn", "value": 4096})]
        return [Finding(self.id, h.name, "info", f"somaxconn {v}", f"{SYS}core/somaxconn: {v}")]


class Conntrack(Check):
    id, title = "net.conntrack", "Connection tracking table use"
    source = "/proc/sys/net/netfilter/nf_conntrack_{count,max} (only when the module is loaded)"

    def run(self, h: HostView) -> list[Finding]:
        count, mx = h.read(SYS + "netfilter/nf_conntrack_count"), h.read(SYS + "netfilter/nf_conntrack_max")
        if not count or not mx or not count.isdigit() or not mx.isdigit():
            return []
        c, m = int(count), int(mx)
        ev = f"{SYS}netfilter/nf_conntrack_count: {c}; nf_conntrack_max: {m}"
        if m and c > 0.8 * m:
            return [Finding(self.id, h.name, "problem", f"conntrack table {c / m:.0%} full ({c} of {m})", ev,
                            "when it is full, new flows are dropped: tests fail to connect or lose their first packets",
                            f"sysctl -w net.netfilter.nf_conntrack_max={2 * m}", f"sysctl -w net.netfilter.nf_conntrack_max={m}",
                            {"key": "sysctl:net.netfilter.nf_conntrack_max", "value": 2 * m})]
        return [Finding(self.id, h.name, "info", f"conntrack {c} of {m} entries", ev)]


CHECKS = (Buffers(), CongestionQdisc(), Backlog(), Somaxconn(), Conntrack())
