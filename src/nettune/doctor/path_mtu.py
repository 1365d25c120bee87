"""Across the study's hosts: one MTU everywhere, and frames of that size really passing
between them (ping with don't-fragment), plus the RTT the buffer check uses.

Source of truth: /sys/class/net/IF/mtu on each host; `ping -M do -s SIZE` (Linux
iputils) / `ping -D -s SIZE` (FreeBSD): SIZE = MTU - 28 (IPv4 20 + ICMP 8 bytes).
"""
from __future__ import annotations

import re
from typing import Any

from .base import Finding, HostView, StudyCheck, cannot, q

HEADERS = 28


def _ping(v: HostView, address: str, size: int) -> tuple[bool | None, float | None]:
    """(the reply came back, its RTT); None: not known (a capture without this ping)."""
    argv = (["ping", "-D", "-s", str(size), "-c", "1", "-t", "2", address] if v.os == "freebsd"
            else ["ping", "-M", "do", "-s", str(size), "-c", "1", "-W", "1", address])
    r = v.cmd(argv, timeout=10)
    if not r.known:
        return None, None
    m = re.search(r"time[=<]([\d.]+) ms", r.stdout)
    return r.rc == 0 and " 0% packet loss" in r.stdout, float(m.group(1)) if m else None


def _mtu(v: HostView) -> int | None:
    if v.os == "freebsd":
        m = re.search(r"mtu (\d+)", v.cmd(["ifconfig", v.interface]).stdout) if v.interface else None
        return int(m.group(1)) if m else None
    text = v.read(f"/sys/class/net/{v.interface}/mtu") if v.interface else None
    return int(text) if text and text.isdigit() else None


class PathMtu(StudyCheck):
    id, title = "path.mtu", "One MTU on every host, and frames of that size passing between them"
    source = "/sys/class/net/IF/mtu per host; ping -M do -s MTU-28 from each host to each other (RTT from the same pings)"

    def run_all(self, views: list[HostView], peers: dict[str, str]) -> list[Finding]:
        views = [v for v in views if v.name in peers]
        if len(views) < 2:
            return []
        mtus = {v.name: _mtu(v) for v in views}
        out: list[Finding] = []
        known = {n: m for n, m in mtus.items() if m}
        if len(set(known.values())) > 1:
            top = max(known.values())
            listing = ", ".join(f"{n} {m}" for n, m in known.items())
            for v in views:
                if known.get(v.name) and known[v.name] < top:
                    out.append(Finding(self.id, v.name, "problem", f"MTU mismatch: {listing}", f"/sys/class/net/{v.interface}/mtu: {known[v.name]} (peers: {listing})",
                                       "a host with the larger MTU sends frames the smaller one drops: stalls, retransmits, or TCP falling back to small segments",
                                       f"ip link set dev {q(v.interface or '')} mtu {top}   (or lower the others; every device on the path must carry it)",
                                       f"ip link set dev {q(v.interface or '')} mtu {known[v.name]}", {"key": f"mtu@{v.interface}", "value": top}))
        for a in views:
            w = a.which("ping")
            if not w.known:
                out.append(cannot(self.id, a.name, "the path MTU and RTT (whether ping is installed is not known)", w))
                continue
            if w.absent:
                out.append(Finding(self.id, a.name, "cannot_tell", "cannot tell the path MTU or the RTT: ping is not installed", "ping: not on PATH",
                                   "without the RTT net.buffers cannot judge the buffers against the bandwidth-delay product",
                                   "apt-get install iputils-ping (dnf install iputils; nettune setup)", ""))
                continue
            for b in views:
                if b is a or not mtus.get(a.name):
                    continue
                out += self._pair(a, b.name, peers[b.name], mtus[a.name])  # type: ignore[arg-type]
        return out

    def _pair(self, a: HostView, peer: str, address: str, mtu: int) -> list[Finding]:
        ok, rtt = _ping(a, address, 56)
        if ok is None:
            return [cannot(self.id, a.name, f"the path to {peer} (the capture holds no ping to {address})", f"ping {address}")]
        if not ok:
            return [Finding(self.id, a.name, "problem", f"{peer} ({address}) does not answer ping from {a.name}", f"ping -c 1 {address} on {a.name}: no reply",
                            "without replies neither the path MTU nor the RTT can be checked (a firewall dropping ICMP also breaks path-MTU discovery)", "", "")]
        if rtt is not None and (a.rtt_ms is None or rtt > a.rtt_ms):
            a.rtt_ms, a.rtt_peer = rtt, peer  # the longest path sets the buffer need
        if _ping(a, address, mtu - HEADERS)[0]:
            return [Finding(self.id, a.name, "info", f"{mtu}-byte frames pass from {a.name} to {peer} (RTT {rtt} ms)", f"ping -M do -s {mtu - HEADERS} {address}: reply")]
        lo, hi = 1500 - HEADERS if mtu > 1500 else 548, mtu - HEADERS  # largest passing payload, binary search
        if not _ping(a, address, lo)[0]:
            lo = 0
        while lo and hi - lo > 8:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if _ping(a, address, mid)[0] else (lo, mid)
        largest = f"{lo + HEADERS} bytes" if lo else "not even 576 bytes"
        return [Finding(self.id, a.name, "problem", f"{mtu}-byte frames from {a.name} do not reach {peer}; the largest that passes is {largest}",
                        f"ping -M do -s {mtu - HEADERS} {address}: no reply; -s {lo}: reply",
                        "something on the path (a peer, bridge or switch) has a smaller MTU: large frames are dropped",
                        f"give every device on the path MTU {mtu}, or lower {a.name}'s to {lo + HEADERS if lo else 1500}", "")]


def peers_of(views: list[HostView], addresses: dict[str, Any]) -> dict[str, str]:
    return {v.name: str(addresses[v.name]) for v in views if addresses.get(v.name)}


CHECKS = (PathMtu(),)
