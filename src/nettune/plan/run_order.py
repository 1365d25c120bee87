"""The order a study's tests run in, the one both `nettune run` and its `--dry-run` use.

Some knob values cost a host reboot (cmdline:KEY) or a VM restart (pve_queues,
libvirt_queues) each time they change. run_order() keeps the schedule's own order
(interleaved rounds, shuffled, sequential: plan.points.schedule) inside each group of
points that share those values, and runs the groups one after the other: every such value
changes once per group, the fewest possible, and only the points of a group interleave.
Reboots weigh more than VM restarts: points are grouped by their boot-time values first,
then, inside each, by their VM-restart values (the first VM group of a boot group is the
last one of the group before it when it can be, so a reboot does not also restart VMs).

run_groups() gives the same slots cut where a costly value changes, and in sequential
order at every point (the run finishes a group, its adaptive rounds included, before the
next), and costly_changes() lists each
change with what it costs, for the plan and the ETA (commands/eta.py).

The plan stage comes before the knobs layer, so the costly kinds are named here by their
key prefix (COSTLY_KINDS); each kind declares its own disruption (knobs Kind.disruption),
and tests/test_run_order.py checks that the two agree.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..studyfile.models import Study
from .points import ResolvedPoint, Slot, schedule

REBOOT, VM_RESTART = "reboot", "VM restart"
# knob kind -> what a change of its value costs (the values the order groups by), in weight order
COSTLY_KINDS = {"cmdline": REBOOT, "pve_queues": VM_RESTART, "libvirt_queues": VM_RESTART}
LEVELS = (REBOOT, VM_RESTART)

Value = tuple[str, str, tuple[str, ...]]  # (key, value as shown, hosts it is set on)


def kind_of(key: str) -> str:
    return key.split(":", 1)[0].split("@", 1)[0]


def shown_value(v: Any) -> str:
    """A knob value as the plan prints it: false is 'absent' (the setting removed), true a bare flag."""
    if v is False:
        return "absent"
    if v is True:
        return "true"
    return v if isinstance(v, str) else json.dumps(v)


def costly_values(rp: ResolvedPoint, level: str) -> tuple[Value, ...]:
    """A point's values of the knobs whose change costs `level`, sorted; () when none."""
    knobs = dict(rp.extra.get("knobs") or {})
    hosts = knobs.pop("hosts", None) or {}
    return tuple(sorted((k, shown_value(v), tuple(hosts.get(k) or ())) for k, v in knobs.items() if COSTLY_KINDS.get(kind_of(k)) == level))


def signature(rp: ResolvedPoint) -> tuple[tuple[Value, ...], ...]:
    return tuple(costly_values(rp, level) for level in LEVELS)


def run_order(study: Study, resolved: list[ResolvedPoint]) -> list[Slot]:
    """Every slot of the study in the order the run takes them (see the module doc)."""
    slots = schedule(study, [r.point for r in resolved])
    sig = {rp.point.index: signature(rp) for rp in resolved}
    if not any(any(s) for s in sig.values()):
        return slots
    boot_groups: dict[Any, dict[Any, list[Slot]]] = {}
    for s in slots:
        boot, vm = sig[s.point.index]
        boot_groups.setdefault(boot, {}).setdefault(vm, []).append(s)
    out: list[Slot] = []
    last_vm: Any = None
    for vms in boot_groups.values():
        keys = list(vms)
        if last_vm in vms:  # start where the previous boot group ended: one VM restart fewer
            keys.remove(last_vm)
            keys.insert(0, last_vm)
        for k in keys:
            out += vms[k]
        last_vm = keys[-1]
    return out


def run_groups(study: Study, resolved: list[ResolvedPoint]) -> list[list[Slot]]:
    """run_order's slots cut where a costly value changes: the run finishes each group
    (its adaptive rounds too) before the next. One group when no knob is costly.
    `order = "sequential"` cuts at every point: all of a configuration's runs, its adaptive
    ones too, before the next configuration is applied (with min_runs 2 and max_runs 4:
    s=1 runs 1 to 4, then s=2; never s=1, s=2, s=1, s=2, which applies each twice)."""
    sig: dict[int, Any] = {rp.point.index: signature(rp) for rp in resolved}
    if study.repeat.order == "sequential":
        sig = {i: (v, i) for i, v in sig.items()}
    groups: list[list[Slot]] = []
    prev: Any = object()
    for s in run_order(study, resolved):
        if sig[s.point.index] != prev:
            groups.append([])
            prev = sig[s.point.index]
        groups[-1].append(s)
    return groups


@dataclass(frozen=True)
class Change:
    """Costly values changing before a test (index: its point) or, index -1, after the
    last test (the restore). `what` is REBOOT or VM_RESTART; `values` the new values
    (empty: the original ones, put back)."""

    index: int
    what: str
    values: tuple[Value, ...]
    changed: tuple[str, ...] = ()  # the keys whose value differs from before (each costs its own restart)
    at: int = 0  # its position in the slots it was found along (len(slots): after the last)

    def shown(self) -> str:
        return ", ".join(f"{k}={v}" + (f" ({','.join(h)})" if h else "") for k, v, h in self.values) or "the original values"


def costly_changes(slots: list[Slot], resolved: list[ResolvedPoint]) -> list[Change]:
    """Where the costly values change along `slots` (run_order's), level by level, and
    the restore after the last test for every level that was changed."""
    by = {rp.point.index: rp for rp in resolved}
    out: list[Change] = []
    prev: dict[str, tuple[Value, ...]] = {level: () for level in LEVELS}
    for at, s in enumerate(slots):
        for level in LEVELS:
            now = costly_values(by[s.point.index], level)
            if now != prev[level]:
                out.append(Change(s.point.index, level, now, _differ(prev[level], now), at))
                prev[level] = now
    out += [Change(-1, level, (), _differ(prev[level], ()), len(slots)) for level in LEVELS if prev[level]]
    return out


def _differ(a: tuple[Value, ...], b: tuple[Value, ...]) -> tuple[str, ...]:
    old, new = {k: v for k, v, _h in a}, {k: v for k, v, _h in b}
    return tuple(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)))
