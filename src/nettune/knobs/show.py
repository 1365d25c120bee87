"""Current values of knobs: a study's knobs on its hosts, or the usual ones on this machine."""
from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ..plan.points import expand_and_check
from ..targets import make_target
from ..targets.base import Host
from .base import KnobError, Loc
from .items import SpecLocator, point_items
from .keys import parse_key
from .places import machine, netns_ino
from .registry import KINDS

DEFAULT_KEYS = [
    "sysctl:net.core.rmem_max", "sysctl:net.core.wmem_max", "sysctl:net.ipv4.tcp_rmem", "sysctl:net.ipv4.tcp_wmem",
    "sysctl:net.core.netdev_max_backlog", "sysctl:net.core.optmem_max", "sysctl:net.core.somaxconn",
    "sysctl:net.ipv4.tcp_mtu_probing", "sysctl:net.core.default_qdisc", "cc", "tuned",
    "mtu", "txqueuelen", "offload:gro", "offload:gso", "offload:tso", "offload:lro", "offload:rx", "offload:tx",
    "channels", "ring", "qdisc", "rps", "xps", "irq_affinity",
]


def default_interface() -> str | None:
    """The interface of the default route (from /proc/net/route), else the first non-lo."""
    try:
        for line in Path("/proc/net/route").read_text().splitlines()[1:]:
            parts = line.split()
            if len(parts) > 2 and parts[1] == "00000000":
                return parts[0]
    except OSError:
        pass
    try:
        return next((n for n in sorted(p.name for p in Path("/sys/class/net").iterdir()) if n != "lo"), None)
    except OSError:
        return None


def _read(ex: Host, loc: Loc) -> str:
    kind = KINDS[loc.kind]
    try:
        return kind.show(kind.read(ex, loc))
    except KnobError as e:
        return f"n/a: {str(e).removeprefix(loc.key + ': ')}"


def machine_values(interface: str | None = None) -> list[dict[str, Any]]:
    dev = interface or default_interface()
    ex = machine().ex
    rows = []
    for key in DEFAULT_KEYS:
        kk = parse_key(key)
        kind = KINDS[kk.kind]
        loc = Loc(key, kk.kind, kk.arg, dev if kind.needs_device else None)
        rows.append({"host": "machine", "knob": key, "device": loc.device or "", "value": _read(ex, loc)})
    return rows


def study_values(study: Any, text: str, file: str, host: str | None = None) -> list[dict[str, Any]]:
    """Current values of the study's knobs on each of its hosts (as the first point places them)."""
    if not study.knobs:
        return []
    resolved = expand_and_check(study, text, file)
    target = make_target(study)
    rows: list[dict[str, Any]] = []
    try:
        down = sorted(n for n, h in target.hosts.items() if h.netns and netns_ino(h.netns) is None)
        # a stand-in namespace per host whose lab is down, so scopes are found as in a run
        with target.scratch(1, only=down, each=True) if down else nullcontext(None) as scratch:
            hosts = dict(target.hosts) | (scratch.hosts if scratch is not None else {})
            for it in point_items(resolved[0], hosts, {}, SpecLocator(file, text)):
                if host and it.host != host and it.place.label != host:
                    continue
                if it.place.type == "netns" and it.host in down:
                    value = f"lab not up (nettune lab up {file})"
                else:
                    value = _read(it.place.ex, it.loc)
                rows.append({"host": it.place.label, "knob": it.loc.key, "device": it.loc.device or "", "value": value})
    finally:
        target.close()  # removes only what it created: never a lab that was up before
    return rows
