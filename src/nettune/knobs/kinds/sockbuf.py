"""sockbuf:max / sockbuf:default = BYTES: socket buffer sizes under one name on every OS.

One study compares FreeBSD and Linux hosts (study B) with "larger socket buffers"; each OS
spells that differently, so the knob names the concept and each host gets its own OS's
sysctls (`Kind.forms`), every one set, journaled and restored by the sysctl kinds:

    sockbuf:max      the most a socket may use, and the TCP autotuning ceiling
        linux    net.core.rmem_max, net.core.wmem_max,
                 net.ipv4.tcp_rmem and tcp_wmem field 3 (min and default kept)
        freebsd  kern.ipc.maxsockbuf, net.inet.tcp.sendbuf_max, net.inet.tcp.recvbuf_max
    sockbuf:default  the buffer a new TCP socket starts with
        linux    net.ipv4.tcp_rmem and tcp_wmem field 2 (min and max kept)
        freebsd  net.inet.tcp.recvspace, net.inet.tcp.sendspace

Sources: FreeBSD sys/sys/sockbuf.h (SB_MAX 2 MiB: kern.ipc.maxsockbuf), sys/netinet/
tcp_output.c and tcp_input.c (sendbuf_max / recvbuf_max 2 MiB), tcp_usrreq.c (sendspace
32 KiB, recvspace 64 KiB); Linux Documentation/networking/ip-sysctl.rst (tcp_rmem/tcp_wmem:
min, default, max; rmem_max caps SO_RCVBUF). The stored values name the real sysctls:
"sockbuf:max (sysctl:kern.ipc.maxsockbuf)".
"""
from __future__ import annotations

import re
from typing import Any

from ..base import Kind, KnobError, Loc, Persisted, catalog_row
from .sysctl import Sysctl
from .sysctl_field import SysctlField

_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]i?)?[bB]?\s*$")
_UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

# (kind, arg) per OS and concept; sysctl_field values are patterns ("* * N": keep, keep, set)
FORMS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "max": {
        "linux": [("sysctl", "net.core.rmem_max"), ("sysctl", "net.core.wmem_max"),
                  ("sysctl_field", "net.ipv4.tcp_rmem:3"), ("sysctl_field", "net.ipv4.tcp_wmem:3")],
        "freebsd": [("sysctl", "kern.ipc.maxsockbuf"), ("sysctl", "net.inet.tcp.sendbuf_max"), ("sysctl", "net.inet.tcp.recvbuf_max")],
    },
    "default": {
        "linux": [("sysctl_field", "net.ipv4.tcp_rmem:2"), ("sysctl_field", "net.ipv4.tcp_wmem:2")],
        "freebsd": [("sysctl", "net.inet.tcp.recvspace"), ("sysctl", "net.inet.tcp.sendspace")],
    },
}

# the kinds its forms are made of (the registry lists these same kinds; the dry run and
# persist ask them for a form's commands without importing the registry, which imports this)
PARTS: dict[str, Kind] = {"sysctl": Sysctl(), "sysctl_field": SysctlField()}


def size(loc: Loc, raw: Any) -> int:
    """Bytes from 8388608, "8M", "8Mi" or "512K" (K, M, G: powers of 1024, as sysctl values are)."""
    if isinstance(raw, bool):
        raise KnobError(f"{loc.key}: expected a size in bytes (e.g. 8388608 or \"8M\"), got {raw!r}")
    m = _SIZE.match(str(raw)) if not isinstance(raw, float) or raw.is_integer() else None
    if not m:
        raise KnobError(f"{loc.key}: expected a size in bytes (e.g. 8388608, \"8M\" = 8 MiB), got {raw!r}")
    v = int(m.group(1)) * _UNIT[(m.group(2) or "").rstrip("i")]
    if not 4096 <= v <= 1 << 31:
        raise KnobError(f"{loc.key}: {v} bytes is out of range (4096..2147483648)")
    return v


def sub_value(kind: str, arg: str, v: int) -> str:
    if kind == "sysctl_field":
        return " ".join(["*"] * (int(arg.rsplit(":", 1)[1]) - 1) + [str(v)])
    return str(v)


class SockBuf(Kind):
    name = "sockbuf"
    takes_arg, example_arg = "required", "max"

    def parse(self, loc: Loc, raw: Any) -> int:
        if loc.arg not in FORMS:
            raise KnobError(f"{loc.key}: use sockbuf:max (the most a socket may use) or sockbuf:default (what a TCP socket starts with)")
        return size(loc, raw)

    def forms(self, os: str, loc: Loc, value: Any) -> list[tuple[Loc, Any]]:
        per_os = FORMS[loc.arg or ""]
        if os not in per_os:
            raise KnobError(f"{loc.key}: no form for {os} hosts (known: {', '.join(per_os)})")
        return [(Loc(f"{loc.key} ({kind}:{arg})", kind, arg, None), sub_value(kind, arg, int(value))) for kind, arg in per_os[os]]

    def read(self, ex: Any, loc: Loc) -> Any:  # never set as itself: forms() gives what is
        raise KnobError(f"{loc.key}: set through its per-OS sysctls")

    def linux_sysctls(self, loc: Loc) -> list[str] | None:
        return [a.split(":")[0] for _, a in FORMS.get(loc.arg or "", {}).get("linux", [])]

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return [c for sloc, v in self.forms("linux", loc, value) for c in PARTS[sloc.kind].commands(sloc, v)]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        out = Persisted()
        for sloc, v in self.forms("linux", loc, value):
            p = PARTS[sloc.kind].persisted(sloc, v)
            out.shell += p.shell
            out.sysctl += p.sysctl
            out.notes += p.notes
        return out

    def catalog(self) -> list[dict[str, str]]:
        return [
            catalog_row("sockbuf", '"sockbuf:max" = "8M"', "per OS (rmem_max: host-wide)", "most a socket may use, TCP autotuning ceiling",
                        "Linux ~208 KiB / 6 MiB; FreeBSD 2 MiB", "BDP (10 Gbit/s x 100 ms = 125 MB)", "no (new sockets)", "memory",
                        "kern.ipc.maxsockbuf, net.inet.tcp.sendbuf_max/recvbuf_max"),
            catalog_row("sockbuf", '"sockbuf:default" = "4M"', "per OS", "buffer a new TCP socket starts with",
                        "Linux 131072 / 16384; FreeBSD 65536 / 32768", "rarely needed (autotuning)", "no (new sockets)",
                        "memory per socket; study B: bigger FreeBSD buffers were slower", "net.inet.tcp.recvspace/sendspace"),
        ]

