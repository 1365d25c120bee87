"""Point order for boot-time knobs (cmdline:KEY): each change is a reboot, so the tests of
points that boot alike run together.

boot_ordered() keeps the schedule's own order (interleaved rounds, shuffled, sequential)
inside each group of points with the same boot-time values, and runs the groups one
after the other in the order their first test had: the boot-time values change once per
group (the fewest possible), and only the points of a group interleave.
split_by_boot() does the same to the groups adaptive repeats run rounds over.
reboots() lists where the values change (for `nettune run --dry-run`), and
check_boot_hosts() refuses, when the study is read, a boot-time knob on a host that may
not be rebooted: this machine (local, lab) or an ssh host without allow_reboot = true.

The plan stage comes before the knobs layer, so boot-time kinds are named here by their
key prefix (BOOT_KINDS); knobs/kinds/cmdline.py is the kind itself.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import SpecError
from ..studyfile.load import find_line
from ..studyfile.models import Study
from .points import Slot

BOOT_KINDS = ("cmdline",)


def is_boot_key(key: str) -> bool:
    return key.split(":", 1)[0].split("@", 1)[0] in BOOT_KINDS


def boot_values(rp: Any) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """A point's boot-time knobs: (key, value, hosts) sorted; () when it has none."""
    knobs = dict(rp.extra.get("knobs") or {})
    hosts = knobs.pop("hosts", None) or {}
    return tuple(sorted((k, v if isinstance(v, str) else json.dumps(v), tuple(hosts.get(k) or ())) for k, v in knobs.items() if is_boot_key(k)))


def boot_ordered(slots: list[Slot], resolved: list[Any]) -> list[Slot]:
    """The slots grouped by boot-time values, each group in the schedule's order."""
    sig = {rp.point.index: boot_values(rp) for rp in resolved}
    if not any(sig.values()):
        return slots
    groups: dict[Any, list[Slot]] = {}
    for s in slots:
        groups.setdefault(sig.get(s.point.index, ()), []).append(s)
    return [s for g in groups.values() for s in g]


def split_by_boot(groups: list[list[int]], by_index: dict[int, Any]) -> list[list[int]]:
    """Adaptive repeats' groups of point indices, each split by boot-time values."""
    out: list[list[int]] = []
    for g in groups:
        parts: dict[Any, list[int]] = {}
        for i in g:
            parts.setdefault(boot_values(by_index[i]), []).append(i)
        out += list(parts.values())
    return out


def reboots(slots: list[Slot], resolved: list[Any]) -> list[tuple[int, str]]:
    """(point index, what changes) before each test whose boot-time values differ from
    the previous test's, and ("end", ...) for the reboot that restores them."""
    by = {rp.point.index: rp for rp in resolved}
    out: list[tuple[int, str]] = []
    prev: tuple = ()
    for s in slots:
        now = boot_values(by[s.point.index])
        if now != prev:
            shown = ", ".join(f"{k}={v}" + (f" ({','.join(h)})" if h else "") for k, v, h in now) or "the original values"
            out.append((s.point.index, shown))
            prev = now
    if prev:
        out.append((-1, "the original values (restore at the end)"))
    return out


def check_boot_hosts(study: Study, resolved: list[Any], text: str = "", file: str = "<study>") -> None:
    """SpecError (one line, naming the knob) for a boot-time knob on a host that may not be rebooted."""
    for rp in resolved:
        for key, _v, hosts in boot_values(rp):
            where = ["knobs", key]
            why = study.target.reboot_refusal(tuple(hosts or ()))  # the target spec knows which of its hosts may reboot
            if why:
                raise SpecError(file, ".".join(where), why, find_line(text, where))
