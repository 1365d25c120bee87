"""Kernel network settings against the path: TCP autotuning's buffer ceiling vs the
bandwidth-delay product, congestion control and qdisc, backlog, listen queue, conntrack.

Sources of truth: kernel Documentation/networking/ip-sysctl.rst (tcp_rmem/tcp_wmem: the
third value caps autotuning; rmem_max/wmem_max cap only SO_RCVBUF/SO_SNDBUF a program sets,
which also turns autotuning off for that socket; with tcp_adv_win_scale = 1 about half of
the receive buffer is offered as window), ESnet fasterdata host tuning (BDP = rate x RTT
/ 8), /proc/sys/net/netfilter/nf_conntrack_{count,max}, `tc qdisc show dev IF`. The rate
is the NIC's physical one (a virtual NIC has none: link.py); the RTT is measured by
path.mtu between the study's hosts. Without both, the BDP is not known and doctor says so.
"""
from __future__ import annotations

from .base import NO_INTERFACE, Check, Finding, HostView, cannot, q
from .counters import SOFTNET
from .link import link_rate
from .parsers import softnet

MIB = 1 << 20
CEILING = 100e9  # a buffer that fills this rate at the measured RTT covers any NIC doctor meets


def _mib(n: float) -> str:
    return f"{n / MIB:.1f} MiB" if n >= MIB else f"{n / 1024:.0f} KiB"


def _rate(bps: float) -> str:
    return f"{bps / 1e9:.3g} Gbit/s" if bps >= 1e9 else f"{bps / 1e6:.3g} Mbit/s"


def _pow2(n: float) -> int:
    return 1 << max(int(n) - 1, 1).bit_length()


class Buffers(Check):
    id, title = "net.buffers", "TCP autotuning's buffer ceiling vs the bandwidth-delay product; rmem_max/wmem_max vs the study's -w"
    source = "/proc/sys/net/ipv4/tcp_{r,w}mem (else a capture's sysctl -a), the NIC's physical rate (link.py), the RTT path.mtu measured; /proc/sys/net/core/{r,w}mem_max with the study's window"

    def run(self, h: HostView) -> list[Finding]:
        bps, rate_src = link_rate(h)
        rtt = h.rtt_ms
        rtt_src = f"RTT {rtt:.3g} ms measured to {h.rtt_peer}" if rtt else "no RTT measured (doctor pings the peers of a study: give the study file)"
        out: list[Finding] = []
        fine = []
        for name in ("tcp_rmem", "tcp_wmem"):
            g = h.sysctl(f"net.ipv4.{name}")
            vals = (g.text or "").split()
            if g.text is None or len(vals) != 3 or not all(v.isdigit() for v in vals):
                out.append(cannot(self.id, h.name, f"whether {name} lets one stream fill the path", g))
                continue
            lo, mid, mx = (int(x) for x in vals)
            reach_at_1ms = mx / 2 * 8 / 1e-3  # bit/s one stream reaches with half the buffer as window at 1 ms
            ev = f"{g.where}: {g.text}; {rate_src}; {rtt_src}"
            if rtt and bps:
                bdp = bps * rtt / 1e3 / 8
                if mx < 2 * bdp:
                    want = _pow2(max(2 * bdp, 16 * MIB))
                    out.append(Finding(self.id, h.name, "problem", f"{name} max {_mib(mx)} is below twice the BDP ({_mib(bdp)})", ev + f"; BDP {_mib(bdp)}",
                                       "TCP autotuning stops at this size, so one stream cannot fill the path (throughput <= window / RTT)",
                                       f"sysctl -w net.ipv4.{name}='{lo} {mid} {want}'", f"sysctl -w net.ipv4.{name}='{g.text}'",
                                       {"key": f"sysctl:net.ipv4.{name}", "value": f"{lo} {mid} {want}"}))
                else:
                    fine.append(f"{name} max {_mib(mx)} covers twice the BDP ({_mib(bdp)})")
            elif rtt:
                reach = reach_at_1ms / rtt
                if reach >= CEILING:
                    fine.append(f"{name} max {_mib(mx)} fills {_rate(CEILING)} or more at RTT {rtt:.3g} ms")
                else:
                    out.append(cannot(self.id, h.name, f"whether {name} max {_mib(mx)} covers the path: one stream reaches about {_rate(reach)} at RTT {rtt:.3g} ms, the NIC's rate is not known",
                                      f"{rate_src}", how="compare with the rate you expect; doctor on the hypervisor or a physical NIC knows it"))
            elif bps:
                out.append(cannot(self.id, h.name, f"whether {name} max {_mib(mx)} covers the path: it fills {_rate(bps)} up to an RTT of {mx / 2 * 8 / bps * 1e3:.3g} ms",
                                  rtt_src, how="run doctor with the study file: it measures the RTT to the peers"))
            else:
                out.append(cannot(self.id, h.name, f"whether {name} max {_mib(mx)} covers the path (one stream: about {_rate(reach_at_1ms)} at 1 ms RTT, {_rate(reach_at_1ms / 10)} at 10 ms)",
                                  rtt_src, rate_src, how="run doctor with the study file (it measures the RTT); on a virtual NIC the rate is the path's, not the NIC's"))
        out += self._caps(h)
        if fine and not any(f.host == h.name and f.rank > 0 for f in out):
            out.append(Finding(self.id, h.name, "info", "; ".join(fine), f"{rate_src}; {rtt_src}"))
        return out

    def _caps(self, h: HostView) -> list[Finding]:
        """rmem_max/wmem_max matter to a program that sets its buffer (iperf -w): judged
        against the study's window, never on their own."""
        out = []
        for name in ("rmem_max", "wmem_max"):
            g, owner = h.setting(f"net.core.{name}")  # host-wide in a lab namespace: once, for the machine
            v = int(g.text) if g.text and g.text.isdigit() else None
            if h.window is None:
                if v is not None:
                    out.append(Finding(self.id, owner, "info", f"{name} {v} ({_mib(v)}): caps only programs that set their buffer (iperf -w); autotuning uses tcp_{name[0]}mem", g.where))
                continue
            if v is None:
                out.append(cannot(self.id, owner, f"whether the study's -w {_mib(h.window)} is capped by {name}", g))
            elif v < h.window:
                want = _pow2(h.window)
                out.append(Finding(self.id, owner, "problem", f"{name} {v} ({_mib(v)}) caps the study's -w {_mib(h.window)}", f"{g.where}: {v}; workload window {h.window}",
                                   "the tool asks for a buffer the kernel silently cuts to this size, and autotuning is off for its sockets (study E's 212992 on 100 Gbit/s)",
                                   f"sysctl -w net.core.{name}={want}", f"sysctl -w net.core.{name}={v}", {"key": f"sysctl:net.core.{name}", "value": want}))
        return out


class CongestionQdisc(Check):
    id, title = "net.cc", "Congestion control and the NIC's qdisc"
    source = "/proc/sys/net/ipv4/tcp_congestion_control; tc qdisc show dev IF (a capture: tc -s qdisc show)"

    def run(self, h: HostView) -> list[Finding]:
        g = h.sysctl("net.ipv4.tcp_congestion_control")
        dev = h.interface
        tc = h.first(["tc", "qdisc", "show", "dev", dev], ["tc", "-s", "qdisc", "show"]) if dev else None
        root = None
        if tc is not None and tc.known:
            for ln in tc.stdout.splitlines():
                w = ln.split()
                if w[:1] == ["qdisc"] and len(w) > 1 and (f"dev {dev} " in ln + " " or "dev" not in w) and " root" in ln:
                    root = w[1]
                    break
        if g.text is None:
            return [cannot(self.id, h.name, "the congestion control", g)]
        ev = f"{g.where}: {g.text}; " + (f"{tc.where}: root qdisc {root}" if root else f"qdisc of {dev}: not known")
        if g.text == "bbr":
            if root is None:
                return [cannot(self.id, h.name, f"whether BBR has the fq qdisc on {dev}", *([tc] if tc is not None else [NO_INTERFACE]))]
            if root not in ("fq", "mq"):
                return [Finding(self.id, h.name, "warn", f"congestion control bbr with qdisc {root} on {dev}", ev,
                                "BBR paces its sending; fq does that pacing efficiently (without it the kernel paces per socket, at a CPU cost)",
                                f"tc qdisc replace dev {q(dev)} root fq", f"tc qdisc replace dev {q(dev)} root {root}", {"key": f"qdisc@{dev}", "value": "fq"})]
        return [Finding(self.id, h.name, "info", f"congestion control {g.text}" + (f", qdisc {root} on {dev}" if root else ""), ev)]


class Backlog(Check):
    id, title = "net.backlog", "netdev_max_backlog against the softnet drops it causes"
    source = "/proc/sys/net/core/netdev_max_backlog (host-wide), /proc/net/softnet_stat (dropped column)"

    def run(self, h: HostView) -> list[Finding]:
        g, owner = h.setting("net.core.netdev_max_backlog")  # not in a lab namespace: the machine's
        if g.text is None or not g.text.isdigit():
            return [cannot(self.id, owner, "netdev_max_backlog", g)]
        v = int(g.text)
        sn = h.get(SOFTNET)
        if sn.text is None:
            return [cannot(self.id, owner, f"whether netdev_max_backlog {v} is too small (the softnet drops would show it)", sn)]
        rows, _ = softnet(sn.text)
        drops = sum(r.dropped for r in rows)
        ev = f"{g.where}: {v}; {sn.where}: {drops} dropped"
        if drops:
            want = max(250000, v)
            return [Finding(self.id, owner, "warn", f"netdev_max_backlog {v} and {drops} packets dropped by the per-CPU backlog", ev,
                            "packets beyond this many per CPU are dropped before the stack sees them (net.softnet says whether it still happens)",
                            f"sysctl -w net.core.netdev_max_backlog={want}", f"sysctl -w net.core.netdev_max_backlog={v}",
                            {"key": "sysctl:net.core.netdev_max_backlog", "value": want})]
        return [Finding(self.id, owner, "info", f"netdev_max_backlog {v}: no softnet drops, the backlog has not overflowed", ev)]


class Somaxconn(Check):
    id, title = "net.somaxconn", "Listen queue cap against the study's connections"
    source = "/proc/sys/net/core/somaxconn (per network namespace); the study's largest -P"

    def run(self, h: HostView) -> list[Finding]:
        g = h.sysctl("net.core.somaxconn")
        if g.text is None or not g.text.isdigit():
            return [cannot(self.id, h.name, "somaxconn", g)]
        v = int(g.text)
        ev = f"{g.where}: {v}" + (f"; the study's -P up to {h.max_streams}" if h.max_streams else "")
        if h.max_streams and h.max_streams * 2 > v:
            want = max(4096, _pow2(h.max_streams * 4))
            return [Finding(self.id, h.name, "warn", f"somaxconn {v} for up to {h.max_streams} streams connecting at once", ev,
                            "the streams of a test connect in one burst: past the listen queue they are refused or retried (slow, uneven starts)",
                            f"sysctl -w net.core.somaxconn={want}", f"sysctl -w net.core.somaxconn={v}", {"key": "sysctl:net.core.somaxconn", "value": want})]
        return [Finding(self.id, h.name, "info", f"somaxconn {v}" + ("" if h.max_streams else " (matters only when many connections arrive at once)"), ev)]


class Conntrack(Check):
    id, title = "net.conntrack", "Connection tracking table use"
    source = "/proc/sys/net/netfilter/nf_conntrack_{count,max} (only when the module is loaded)"

    def run(self, h: HostView) -> list[Finding]:
        count, mx = h.sysctl("net.netfilter.nf_conntrack_count"), h.sysctl("net.netfilter.nf_conntrack_max")
        if count.absent and mx.absent:
            return []  # no connection tracking loaded
        if not count.text or not mx.text or not count.text.isdigit() or not mx.text.isdigit():
            return [cannot(self.id, h.name, "how full the conntrack table is", *(g for g in (count, mx) if g.text is None))]
        c, m = int(count.text), int(mx.text)
        ev = f"{count.where}: {c}; {mx.where}: {m}"
        if m and c > 0.8 * m:
            return [Finding(self.id, h.name, "problem", f"conntrack table {c / m:.0%} full ({c} of {m})", ev,
                            "when it is full, new flows are dropped: tests fail to connect or lose their first packets",
                            f"sysctl -w net.netfilter.nf_conntrack_max={2 * m}", f"sysctl -w net.netfilter.nf_conntrack_max={m}",
                            {"key": "sysctl:net.netfilter.nf_conntrack_max", "value": 2 * m})]
        return [Finding(self.id, h.name, "info", f"conntrack {c} of {m} entries", ev)]


CHECKS = (Buffers(), CongestionQdisc(), Backlog(), Somaxconn(), Conntrack())
