"""`nettune analyze --by PARAM`: verdicts per group (study B: per OS).

A study that compares groups (operating systems, hypervisors, NICs) asks which knob
matters *in each group*: jumbo frames multiplied FreeBSD's throughput and changed nothing
on Debian. Pooled over groups, that effect is averaged away or blamed on the wrong side.
So, for every value of PARAM (a group) and every other swept parameter:

- the parameter's effect inside the group: the level furthest from its first level
  (the baseline), other parameters held fixed, as a ratio of means with the 95% interval of
  Welch's test (analysis.compare); where the group has several combinations of the other
  parameters, the one where it moved the metric most is the headline and the others follow;
  every level-against-baseline test of the --by analysis is one family (Bonferroni over
  them all, analysis/policy.py), which also pays for picking the level that moved most;
  with single runs there is no noise estimate: the ratio is shown, with no verdict;
- the interaction in one sentence: "mtu: x3.7 on freebsd, no difference shown on debian (the
  effect depends on os)". It depends on the group when the groups' intervals of the ratio
  do not overlap (one group significant and the other not is not enough); with single runs
  it cannot be told, and the sentence says so. Per-group Welch tests, not a two-way ANOVA: scipy has none, and the
  groups of a study B sweep are rarely a full factorial (FreeBSD was tuned more ways than Debian);
- efficiency per group: the best Gbit/s per core of client and server CPU, compared across
  groups ("server: freebsd 2.1x debian's Gbit/s per core").
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..errors import NettuneError
from .compare import compare_values
from .data import Metric, PointData, StudyData
from .frontier import frontiers
from .serial import JsonRecord
from .sweep import num, pval


@dataclass
class GroupEffect(JsonRecord):
    """One parameter's effect inside one group (level vs baseline, the others fixed)."""

    group: Any
    param: str
    baseline: Any
    level: Any
    fixed: dict[str, Any]
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    ratio: float
    ci_low: float | None  # of the ratio (None: single runs)
    ci_high: float | None
    p_value: float | None
    verdict: str  # faster / slower (better / worse for metrics that are not speeds), inconclusive, or untested (single runs)
    text: str
    others: list[str] = field(default_factory=list)  # the same comparison at the group's other combinations


@dataclass
class Interaction(JsonRecord):
    """Does a parameter's effect depend on the group? One sentence, and each group's effect."""

    param: str
    depends: bool
    text: str
    effects: list[GroupEffect]
    not_varied: list[Any] = field(default_factory=list)  # groups where the parameter had one level


@dataclass
class GroupEfficiency(JsonRecord):
    group: Any
    side: str  # client or server
    point: dict[str, Any]
    gbps: float
    cpu_percent: float
    gbps_per_core: float


@dataclass
class GroupAnalysis(JsonRecord):
    by: str
    groups: list[Any]
    metric: str
    unit: str
    interactions: list[Interaction] = field(default_factory=list)
    efficiency: list[GroupEfficiency] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


def _factor(ratio: float) -> str:
    """x3.7 for big changes, +12% / -10% for small ones."""
    if ratio >= 1.5 or (0 < ratio <= 1 / 1.5):
        return f"x{ratio:.2g}" if ratio < 10 else f"x{ratio:.0f}"
    pct = (ratio - 1) * 100
    return f"{pct:+.1f}%" if abs(pct) < 1 else f"{pct:+.0f}%"  # a tiny but significant change is not "+0%"


def _effect(group: Any, param: str, fixed: dict[str, Any], levels: list[Any], vals: list[list[float]], m: Metric,
            family: int = 1) -> GroupEffect | None:
    """The level furthest from the first one (the baseline), as a ratio of means."""
    base, base_v = levels[0], vals[0]
    if not base_v or _mean(base_v) == 0:
        return None
    k = max(range(1, len(levels)), key=lambda i: abs(math.log(max(_mean(vals[i]), 1e-300) / _mean(base_v))) if vals[i] else -1.0)
    lv, v = levels[k], vals[k]
    if not v:
        return None
    ma, mb = _mean(base_v), _mean(v)
    where = f" ({', '.join(f'{a}={b}' for a, b in fixed.items())})" if fixed else ""
    head = f"{param}={base} -> {lv}: {num(ma)} -> {num(mb)} {m.label}"
    if len(base_v) >= 2 and len(v) >= 2:
        c = compare_values(base_v, v, m.higher_is_better, (m.better, m.worse), m.name, family=family)
        moved = c.verdict not in ("inconclusive", "equivalent")
        ci = f"95% CI x{c.ci_low:.2f} to x{c.ci_high:.2f}" if c.ci_low is not None and c.ci_high is not None else "no finite 95% CI"
        adj = f", adjusted over {family} tests" if family > 1 else ""
        text = f"{head}, {_factor(c.ratio) if moved else 'no difference shown'} ({ci}, {pval(c.p_value)}{adj}){where}"
        return GroupEffect(group, param, base, lv, fixed, len(base_v), len(v), ma, mb, c.ratio, c.ci_low, c.ci_high, c.p_value, c.verdict, text)
    ratio = mb / ma
    text = f"{head}, {_factor(ratio)} (single runs: no noise estimate, no verdict){where}"
    return GroupEffect(group, param, base, lv, fixed, len(base_v), len(v), ma, mb, ratio, None, None, None, "untested", text)


def _sorted_levels(levels: list[Any]) -> list[Any]:
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in levels):
        return sorted(levels, key=float)
    return levels  # as the sweep lists them: its first is the baseline


def _combos(points: list[PointData], param: str, axes: list[str], m: Metric) -> list[tuple[dict[str, Any], list[Any], list[list[float]]]]:
    """`param`'s lines among these points: (the other axes that vary, levels with runs, values)."""
    others = [a for a in axes if a != param]
    combos: dict[tuple[Any, ...], dict[Any, PointData]] = defaultdict(dict)
    for p in points:
        combos[tuple(p.params.get(o) for o in others)][p.params.get(param)] = p
    levels = _sorted_levels(list(dict.fromkeys(p.params.get(param) for p in points)))
    out = []
    for key, by_level in combos.items():
        lv = [x for x in levels if x in by_level and by_level[x].values(m)]
        if len(lv) >= 2:
            fixed = {o: v for o, v in zip(others, key) if len({p.params.get(o) for p in points}) > 1}
            out.append((fixed, lv, [[v * m.scale for v in by_level[x].values(m)] for x in lv]))
    return out


def tests_in(points: list[PointData], param: str, axes: list[str], m: Metric) -> int:
    """The level-against-baseline tests these lines hold (each level with 2 runs, its baseline too)."""
    return sum(1 for _, _, vals in _combos(points, param, axes, m) for v in vals[1:] if len(v) >= 2 and len(vals[0]) >= 2)


def group_effects(points: list[PointData], group: Any, param: str, axes: list[str], m: Metric, family: int = 1) -> list[GroupEffect]:
    """`param`'s effect in each combination of the other axes among this group's points,
    the strongest first."""
    out = [e for fixed, lv, vals in _combos(points, param, axes, m) if (e := _effect(group, param, fixed, lv, vals, m, family))]
    out.sort(key=lambda e: -abs(math.log(e.ratio)) if e.ratio > 0 else 0.0)
    return out


def _depends(effects: list[GroupEffect]) -> bool:
    """Whether the groups' effects differ: their (simultaneous) 95% intervals of the ratio do not
    overlap, a conservative test of the difference. One group significant and another not is
    not enough: a difference in significance is not a significant difference."""
    if any(e.verdict == "untested" for e in effects):
        return False  # single runs: cannot be told (the sentence says so)
    have = [e for e in effects if e.ci_low is not None and e.ci_high is not None]
    return any(a.ci_high < b.ci_low or b.ci_high < a.ci_low for i, a in enumerate(have) for b in have[i + 1:])  # type: ignore[operator]


def _short(e: GroupEffect) -> str:
    return "no difference shown" if e.verdict == "inconclusive" else _factor(e.ratio)


def interaction(param: str, by: str, groups: list[Any], per_group: dict[Any, list[GroupEffect]]) -> Interaction:
    heads = [per_group[g][0] for g in groups if per_group.get(g)]
    for g in groups:
        if per_group.get(g):
            per_group[g][0].others = [e.text for e in per_group[g][1:]]
    missing = [g for g in groups if not per_group.get(g)]
    depends = _depends(heads) if len(heads) > 1 else False
    parts = [f"{_short(e)} on {e.group}" for e in heads] + [f"not varied on {g}" for g in missing]
    untested = any(e.verdict == "untested" for e in heads)
    tail = (f" (single runs: whether it depends on {by} cannot be told without repeats)" if untested and len(heads) > 1
            else " (single runs: no verdict)" if untested
            else f" (the effect depends on {by})" if depends else (f" (not shown to depend on {by})" if len(heads) > 1 else ""))
    return Interaction(param, depends, f"{param}: {', '.join(parts)}{tail}", heads, missing)


def group_efficiency(data: StudyData, by: str, groups: list[Any]) -> tuple[list[GroupEfficiency], list[str]]:
    """Gbit/s per core of client and server CPU at each group's recommended point (the knee
    of its throughput-vs-CPU frontier), and how the groups compare."""
    rows: list[GroupEfficiency] = []
    for g in groups:
        pts = [p for p in data.points if p.params.get(by) == g]
        sub = StudyData(data.study, pts, data.facts, [a for a in data.axes if a != by], data.derived)
        for e in frontiers(sub, data.params):  # each cost's recommended point (the frontier's knee), CPU in cores
            side = e.cost.removeprefix("cpu_")
            if side in ("client", "server") and e.unit == "cores" and e.cost_value > 0:
                rows.append(GroupEfficiency(g, side, e.point, e.gbps, e.cost_value * 100, e.gbps / e.cost_value))
    lines = []
    for side in ("client", "server"):
        mine = sorted((r for r in rows if r.side == side), key=lambda r: -r.gbps_per_core)
        if len(mine) < 2 or mine[-1].gbps_per_core <= 0:
            continue
        top, low = mine[0], mine[-1]
        each = ", ".join(f"{r.group} {num(r.gbps_per_core)} ({num(r.gbps)} Gbit/s at {r.cpu_percent:.0f}% of one core)" for r in mine)
        lines.append(f"efficiency, {side} CPU: {each} Gbit/s per core at each group's recommended point; "
                     f"{top.group} gets {top.gbps_per_core / low.gbps_per_core:.1f}x {low.group}'s throughput per {side} core")
    return rows, lines


def analyze_groups(data: StudyData, by: str, m: Metric) -> GroupAnalysis:
    """Per-group effects of every other swept parameter, their interaction with `by`, and
    efficiency per group."""
    known = list(data.points[0].params) if data.points else []
    if by not in known:
        raise NettuneError(f"--by {by!r}: {data.name} has no parameter {by!r}; its parameters are: {', '.join(known) or 'none'}")
    groups = list(dict.fromkeys(p.params.get(by) for p in data.points))
    if len(groups) < 2:
        raise NettuneError(f"--by {by}: every point has {by}={groups[0] if groups else '?'}; give a parameter with at least two values")
    out = GroupAnalysis(by, groups, m.name, m.label)
    axes = [a for a in data.axes if a != by]
    members = {g: [p for p in data.points if p.params.get(by) == g] for g in groups}
    family = sum(tests_in(members[g], param, axes, m) for param in axes for g in groups)
    for param in axes:
        per_group = {g: group_effects(members[g], g, param, axes, m, family) for g in groups}
        if not any(per_group.values()):
            continue
        it = interaction(param, by, groups, per_group)
        out.interactions.append(it)
        out.findings.append(it.text)
        for e in it.effects:
            out.findings += [f"  {e.group}: {e.text}"] + [f"  {e.group}, also: {o}" for o in e.others]
    out.efficiency, lines = group_efficiency(data, by, groups)
    out.findings += lines
    if not out.interactions:
        out.findings.insert(0, f"by {by}: no other parameter varies inside a group, so there is no per-group effect to show")
    return out
