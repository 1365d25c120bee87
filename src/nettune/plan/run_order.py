"""The order a study's tests run in, as blocks: each block is a set of points whose tests
interleave, run to its end (adaptive repeats included) before the next block's settings
are applied. A configuration is never revisited.

- `order = "sequential"`: one point per block. Every run of a configuration, its extra
  adaptive runs too, finishes before the next configuration is applied: with min_runs 2
  and max_runs 4, s=1 runs 1 to 4, then s=2 runs 1 to 4 (never s=1, s=2, s=1, s=2).
- `order = "interleaved"` or `"shuffled"`: one block per group of points with the same
  disruptive values (boot-time knobs, `plan/boot_order.py`): inside a block the points
  interleave (so drift over time spreads evenly), and its adaptive rounds are decided
  while its boot-time values are in force, so a reboot is never made twice for one value.

`run_blocks()` is what `run/study.py` loops over; `first_pass()` is the same order
flattened (the warm-up and min_runs slots of every block, the adaptive runs each block
may add come right after its own slots), for the dry run and the ETA.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable

from ..studyfile.models import Study
from .boot_order import boot_values
from .points import Slot, schedule


@dataclass(frozen=True)
class Block:
    """Points run together: their first-pass slots in order; adaptive rounds over `points`."""

    points: tuple[int, ...]  # point indices, in the order their first slot runs
    slots: tuple[Slot, ...]  # warm-up and min_runs (or runs) slots, in the order they run


def disruption_key(rp: Any) -> Hashable:
    """What makes changing a point's settings expensive: its boot-time values (a reboot).
    Points with the same key can interleave without an extra reboot."""
    return boot_values(rp)


def run_blocks(study: Study, resolved: list[Any], key: Callable[[Any], Hashable] = disruption_key) -> list[Block]:
    """The study's blocks in the order they run (see the module's docstring)."""
    sig = {rp.point.index: key(rp) for rp in resolved}
    slots = schedule(study, [rp.point for rp in resolved])
    # groups of the same disruptive values, in the order their first slot comes
    groups: dict[Hashable, list[Slot]] = {}
    for s in slots:
        groups.setdefault(sig.get(s.point.index, ()), []).append(s)
    blocks: list[Block] = []
    for group in groups.values():
        if study.repeat.order == "sequential":
            per_point: dict[int, list[Slot]] = {}
            for s in group:
                per_point.setdefault(s.point.index, []).append(s)
            blocks += [Block((i,), tuple(ss)) for i, ss in per_point.items()]
        else:
            points = tuple(dict.fromkeys(s.point.index for s in group))
            blocks.append(Block(points, tuple(group)))
    return blocks


def first_pass(study: Study, resolved: list[Any]) -> list[Slot]:
    """Every block's first-pass slots, in run order (adaptive runs follow each block's own)."""
    return [s for b in run_blocks(study, resolved) for s in b.slots]
