"""`nettune run --dry-run`: every disruptive step of the run, said at the point where it
happens: a host reboot (cmdline:KEY), a VM restart (pve_queues, libvirt_queues), a link
reset (mtu, channels, ring, offloads drivers apply by resetting the device), each with the
host it hits, the commands, and how it is put back after the last test.

The points are walked in the run's own order (plan/run_order.py run_order, the order
`nettune run` takes), so an announcement sits on the first test whose value differs from
the test before it; the restore after the last test is said on the last point printed.
Which kinds disrupt, how and when is each kind's answer (knobs Kind.disruption); the
study file has already refused a disruption on a host without its opt-in (knobs/offline.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..knobs.base import REBOOT, VM_RESTART, Kind, Loc
from ..knobs.kinds.cmdline import default_note, security_warning
from ..knobs.keys import knob_items, parse_key
from ..knobs.registry import KINDS
from ..plan.points import ResolvedPoint, Slot
from ..plan.run_order import shown_value
from ..studyfile.models import Study
from ..targets import target_kind

WORDS = {REBOOT: "REBOOT", VM_RESTART: "VM RESTART"}


@dataclass(frozen=True)
class Step:
    """One disruptive knob change: before the test of point `index` (-1: after the last test)."""

    index: int
    what: str  # REBOOT, VM_RESTART or LINK_RESET
    text: str


def disruptive_keys(rp: ResolvedPoint) -> dict[str, tuple[Kind, Loc, Any, list[str]]]:
    """The point's knobs whose change disrupts a host: key -> (kind, loc, value, hosts)."""
    knobs, hosts_map = knob_items(rp.extra.get("knobs"))
    out = {}
    for key, raw in knobs.items():
        kk = parse_key(key)
        kind = KINDS[kk.kind]
        loc = Loc(key, kk.kind, kk.arg, kk.device)
        if kind.disruption(loc) is not None:
            out[key] = (kind, loc, kind.parse(loc, raw), list(hosts_map.get(key) or []))
    return out


def steps(study: Study, resolved: list[ResolvedPoint], slots: list[Slot]) -> list[Step]:
    """Every disruptive change along the run's slots, and each restore after the last test."""
    by = {rp.point.index: rp for rp in resolved}
    prev: dict[str, Any] = {}
    last: dict[str, tuple[Kind, Loc, list[str]]] = {}
    out: list[Step] = []
    said: set[tuple[int, str, str]] = set()
    for s in slots:
        now = disruptive_keys(by[s.point.index])
        for key in list(prev):  # a knob this point does not set goes back to its original
            if key not in now:
                kind, loc, hosts = last[key]
                out.append(_restore_step(study, s.point.index, kind, loc, hosts, "before this point"))
                del prev[key]
        for key, (kind, loc, value, hosts) in now.items():
            if key in prev and kind.same(prev[key], value):
                continue
            prev[key], last[key] = value, (kind, loc, hosts)
            if (s.point.index, key, shown_value(value)) in said:
                continue
            said.add((s.point.index, key, shown_value(value)))
            out.append(_change_step(study, s.point.index, kind, loc, value, hosts))
    for key in prev:
        kind, loc, hosts = last[key]
        out.append(_restore_step(study, -1, kind, loc, hosts, "after the last test"))
    return out


def _affected(study: Study, kind: Kind, loc: Loc, hosts: list[str]) -> str:
    """Who the change hits, as the plan names it: the VM's study host, or the hosts."""
    on = ", ".join(hosts) or "every host"
    if kind.vm_field:
        vm = study.target.vm_host(kind.vm_field, kind.vm_name(loc))
        return f"on {on} restarts VM {kind.vm_name(loc)} (study host {vm})"
    return f"on {on}"


def _devices(study: Study, loc: Loc, hosts: list[str]) -> list[Loc]:
    """An interface knob's loc per default device of its hosts (the key's own @DEV wins)."""
    if loc.device is not None or not KINDS[loc.kind].needs_device:
        return [loc]
    devs = {target_kind(study).knob_os(study, h)[1] for h in hosts or list(study.target.hosts)}
    return [Loc(loc.key, loc.kind, loc.arg, d) for d in sorted(d for d in devs if d)] or [loc]


def _change_step(study: Study, index: int, kind: Kind, loc: Loc, value: Any, hosts: list[str]) -> Step:
    d = kind.disruption(loc)
    assert d is not None
    shown = "absent (removed from the command line)" if value is None and d.what == REBOOT else kind.show(value)
    cmds = [c for dl in _devices(study, loc, hosts) for c in kind.commands(dl, value)]
    if d.what == REBOOT:  # the three families' edits (the host's decides), then the reboot
        cmds = cmds[:3]
    restore = [c for dl in _devices(study, loc, hosts) for c in kind.restore_commands(dl)]
    when = d.when
    if d.what == REBOOT:
        when = default_note(loc.arg or "", value) or when
    text = (f"{WORDS.get(d.what, d.what.upper())} before this point: {loc.key} -> {shown} {_affected(study, kind, loc, hosts)}"
            + (f", {when}" if when else "") + f" ({d.does}); commands: {' | '.join(cmds)}; put back after the last test: "
            + (' | '.join(restore) if restore else "the value read before the change (journaled)"))
    warn = security_warning(loc.arg or "", value) if d.what == REBOOT else None
    return Step(index, d.what, text + (f"\nSECURITY: {warn}" if warn else ""))


def _restore_step(study: Study, index: int, kind: Kind, loc: Loc, hosts: list[str], when: str) -> Step:
    d = kind.disruption(loc)
    assert d is not None
    restore = [c for dl in _devices(study, loc, hosts) for c in kind.restore_commands(dl)]
    if d.what == REBOOT:
        restore = ["put the journaled boot files back", "reboot when the running value differs", "check /proc/cmdline"]
    text = (f"{WORDS.get(d.what, d.what.upper())} {when}: {loc.key} back to the value read before the study {_affected(study, kind, loc, hosts)}"
            + (f", {d.when}" if d.when else "") + f" ({d.does}); commands: {' | '.join(restore) or 'the journaled value set again'}")
    return Step(index, d.what, text)
