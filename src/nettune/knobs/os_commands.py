"""The commands an OS-neutral knob runs on a host of each OS, as shell lines: what
`nettune run --dry-run` prints per host (the run itself goes through each kind's apply).

The OS-neutral kinds are those one name covers on Linux and FreeBSD: mtu, offload:FEATURE
(ethtool -K / ifconfig [-]flag), cc (net.ipv4.tcp_congestion_control / net.inet.tcp.cc.
algorithm) and sockbuf:max|default (sockbuf.py). The FreeBSD lines are the argv the kinds
run there (tests/test_neutral_knobs.py checks them against a FreeBSD host answering with
real ifconfig and sysctl outputs).
"""
from __future__ import annotations

import shlex
from typing import Any

from .base import KnobError, Loc
from .keys import parse_key
from .kinds.offload import FREEBSD as FREEBSD_OFFLOAD
from .registry import KINDS

NEUTRAL = ("mtu", "offload", "cc", "sockbuf")
OSES = ("linux", "freebsd")


def _freebsd(loc: Loc, value: Any) -> list[str]:
    dev = loc.device or "$IFACE"
    if loc.kind == "sysctl":
        return [f"sysctl {shlex.quote(f'{loc.arg}={value}')}"]
    if loc.kind == "cc":
        return [f"sysctl net.inet.tcp.cc.algorithm={shlex.quote(str(value))}"]
    if loc.kind == "mtu":
        return [f"ifconfig {dev} mtu {value}"]
    if loc.kind == "offload":
        if loc.arg not in FREEBSD_OFFLOAD:
            return [f"# {loc.key}: no FreeBSD form (ifconfig sets {', '.join(FREEBSD_OFFLOAD)}); refused before the study"]
        flag = FREEBSD_OFFLOAD[loc.arg or ""][0]
        return [f"ifconfig {dev} {flag if value == 'on' else '-' + flag}"]
    return [f"# {loc.key}: no FreeBSD form"]


def knob_commands(os: str, key: str, raw: Any, device: str | None = None) -> list[str]:
    """Shell lines that set knob `key` to `raw` (as the study file gives it, filled in) on
    a host of `os`; the device of an interface knob defaults to `device`."""
    kk = parse_key(key)
    kind = KINDS[kk.kind]
    loc = Loc(key, kk.kind, kk.arg, (kk.device or device or "$IFACE") if kind.needs_device else None)
    try:
        value = kind.parse(loc, raw)
        forms = kind.forms(os, loc, value)
    except KnobError as e:
        return [f"# {e}"]
    out: list[str] = []
    for sloc, v in forms:
        out += _freebsd(sloc, v) if os == "freebsd" else KINDS[sloc.kind].commands(sloc, v)
    return out
