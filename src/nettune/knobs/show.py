"""Current values of knobs: a study's knobs on its hosts, or the usual ones on this machine."""
from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .base import KnobError, Loc
from .places import machine, netns_ino
from .registry import KINDS
from .spec import parse_key

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


def _read(place_ex: Any, loc: Loc) -> str:
    from .restore import show

    try:
        return show(KINDS[loc.kind].read(place_ex, loc))
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
    from ..plan.points import expand_and_check
    from ..targets import make_target
    from ..targets.lab import LabHost
    from .probe import probe_namespace
    from .session import _Where, plan

    if not study.knobs:
        return []
    resolved = expand_and_check(study, text, file)
    target = make_target(study)
    hosts = dict(target.hosts)
    lab = {n: h for n, h in hosts.items() if getattr(h, "netns", None)}
    down = {n for n, h in lab.items() if netns_ino(h.netns) is None}
    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        # one stand-in namespace per host whose lab is down, so scopes are found as in a run
        for n in sorted(down):
            probe = stack.enter_context(probe_namespace([lab[n].interface], 1, f"-{n}"))
            if probe is not None:
                hosts[n] = LabHost(n, probe.netns, "", lab[n].interface)
        for it in plan(resolved[0], hosts, {}, _Where(file, text)):
            if host and it.host != host and it.place.label != host:
                continue
            if it.place.type == "netns" and it.host in down:
                value = f"lab not up (nettune lab up {file})"
            else:
                value = _read(it.place.ex, it.loc)
            rows.append({"host": it.place.label, "knob": it.loc.key, "device": it.loc.device or "", "value": value})
    close = getattr(target, "close", None)
    if close is not None and not lab:
        close()
    return rows
