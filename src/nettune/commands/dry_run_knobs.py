"""`nettune run --dry-run`: the commands each host of a point gets for its OS-neutral knobs
(mtu, offload:FEATURE, cc, sockbuf:max|default), in that host's OS's form.

Lab and local hosts are this machine (Linux); an ssh host's OS is known only once
connected (`uname -s`), so both forms are shown, each marked with the OS it is for. The
device of an interface knob is the lab host's veth, an ssh host's `interface`, else $IFACE.
"""
from __future__ import annotations

from ..knobs.keys import knob_items, parse_key
from ..knobs.os_commands import NEUTRAL, OSES, knob_commands
from ..plan.points import ResolvedPoint
from ..studyfile.models import Study
from ..targets import target_kind


def host_forms(study: Study, host: str) -> tuple[list[str], bool, str | None]:
    """(OSes to show, whether the OS is known, default device) of a host of the study, as
    its target kind knows them from the study alone."""
    known, device = target_kind(study).knob_os(study, host)
    return ([known], True, device) if known is not None else (list(OSES), False, device)


def knob_lines(study: Study, rp: ResolvedPoint) -> list[str]:
    """One line per host and OS: 'knobs on freebsd-a (freebsd, if it is): ifconfig vmx0 mtu 9000; ...'."""
    knobs, hosts_map = knob_items(rp.extra.get("knobs"))
    neutral = {k: v for k, v in knobs.items() if parse_key(k).kind in NEUTRAL}
    by_host: dict[str, list[str]] = {}
    for key in neutral:
        for h in hosts_map.get(key) or list(study.target.hosts):
            by_host.setdefault(h, []).append(key)
    lines = []
    for host, keys in by_host.items():
        oses, known, dev = host_forms(study, host)
        for os in oses:
            cmds = [c for k in keys for c in knob_commands(os, k, neutral[k], dev)]
            lines.append(f"knobs on {host} ({os}{'' if known else ', if it is'}): " + "; ".join(cmds))
    return lines
