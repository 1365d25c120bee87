"""cc = "bbr": TCP congestion control of new sockets (net.ipv4.tcp_congestion_control).

Per network namespace. The algorithm must be built in or loaded (tcp_available_
congestion_control); inside a non-initial namespace it must also be in the machine's
tcp_allowed_congestion_control. nettune never loads kernel modules by itself.
"""
from __future__ import annotations

import re
from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, KnobError, Loc, Persisted, catalog_row, read_file, run_ok, write_file

PATH = "/proc/sys/net/ipv4/tcp_congestion_control"
FREEBSD_AVAILABLE = "net.inet.tcp.cc.available"


def freebsd_available(text: str) -> list[str]:
    """The algorithms `sysctl -n net.inet.tcp.cc.available` lists: FreeBSD 13 and later
    print a table (CCmod, D, PCB count: sys/netinet/cc/cc.c), older ones a comma list."""
    rows = [ln.split() for ln in text.splitlines() if ln.strip()]
    if rows and rows[0][0] == "CCmod":
        return [r[0] for r in rows[1:]]
    return [x.strip() for x in text.replace("\n", ",").split(",") if x.strip()]


class CongestionControl(Kind):
    name = "cc"
    takes_arg = "never"

    def parse(self, loc: Loc, raw: Any) -> str:
        v = str(raw).strip()
        if not re.fullmatch(r"[a-z0-9_]{1,16}", v):
            raise KnobError(f"{loc.key}: {raw!r} is not a congestion control name (e.g. cubic, bbr, htcp)")
        return v

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        if ex.os == "freebsd":
            avail = freebsd_available(run_ok(ex, ["sysctl", "-n", FREEBSD_AVAILABLE], loc.key))
            if avail and value not in avail:
                raise KnobError(f"{loc.key}: {value} is not loaded on this FreeBSD host (available: {' '.join(avail)}); load it first: kldload cc_{value}")
            return
        avail = read_file(ex, "/proc/sys/net/ipv4/tcp_available_congestion_control", loc.key).split()
        if value not in avail:
            raise KnobError(f"{loc.key}: {value} is not available in this kernel (available: {' '.join(avail)}); load it first: modprobe tcp_{value}")
        if ex.netns:
            allowed = read_file(ex, "/proc/sys/net/ipv4/tcp_allowed_congestion_control", loc.key).split()
            if value not in allowed:
                raise KnobError(
                    f"{loc.key}: {value} is not allowed inside a network namespace (allowed: {' '.join(allowed)}); "
                    f"add it on the machine: sysctl -w net.ipv4.tcp_allowed_congestion_control=\"{' '.join(allowed + [value])}\""
                )

    def read(self, ex: Host, loc: Loc) -> str:
        if ex.os == "freebsd":
            return run_ok(ex, ["sysctl", "-n", "net.inet.tcp.cc.algorithm"], loc.key).strip()
        return read_file(ex, PATH, loc.key).strip()

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        if ex.os == "freebsd":
            run_ok(ex, ["sysctl", f"net.inet.tcp.cc.algorithm={value}"], loc.key)
            return
        write_file(ex, PATH, str(value), loc.key)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return [f"sysctl -w net.ipv4.tcp_congestion_control={value}"]

    def linux_sysctls(self, loc: Loc) -> list[str] | None:
        return ["net.ipv4.tcp_congestion_control"]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted(shell=self.commands(loc, value), sysctl=[("net.ipv4.tcp_congestion_control", str(value))])

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "cc", '"cc" = "bbr"', "per namespace", "TCP congestion control for new sockets", "cubic", "bbr or htcp",
            "no (new sockets only)", "fairness to other flows; needs the module (modprobe tcp_bbr)", "net.inet.tcp.cc.algorithm (kldload cc_htcp)",
        )]
