"""Costs along a swept parameter, the way throughput is analysed: is the cost flat, and
from which value on does it climb faster than the throughput it buys?

Along a numeric parameter (3 or more values, the other swept parameters held fixed), each
cost (CPU in cores, watts) gets its mean per value, the one-way ANOVA across the values
(single runs have no noise estimate: the curve is only described, and never called flat),
the change per doubling between neighbours next to the throughput's, and the first value
from which the cost grows by CLIMB per doubling more than the throughput does ("climbs from
queues=16 on"). A study without throughput (a timed command) compares nothing with
throughput: its costs are described along the parameter in their own words.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .costs import Cost
from .data import METRICS, PointData, StudyData
from .serial import JsonRecord
from .policy import adjusted
from .sweep import ALPHA, anova, num, per_doubling, pval

CLIMB = 0.10  # cost gain per doubling above the throughput's gain that counts as "climbing"


@dataclass
class CostCurve(JsonRecord):
    param: str
    fixed: dict[str, Any]
    cost: str  # cpu_host, hypervisor:NAME, watts:machine...
    name: str
    unit: str
    shape: str  # flat, climbing, falling
    x: list[Any]
    mean: list[float]
    n: list[int]
    p_value: float | None = None
    gains: list[float] = field(default_factory=list)  # cost change per doubling between neighbours
    throughput_gains: list[float] = field(default_factory=list)
    climbs_from: Any = None  # the value from which cost outgrows throughput
    text: str = ""


def cost_curve(param: str, fixed: dict[str, Any], xs: list[Any], pts: list[PointData], cost: Cost, data: StudyData,
               family: int = 1) -> CostCurve | None:
    """The cost along one line; `family` the cost curves tested in the analysis (each ANOVA's
    p-value is adjusted over them: analysis/policy.py)."""
    vals = [cost.values(p) for p in pts]
    keep = [(x, p, v) for x, p, v in zip(xs, pts, vals) if v]
    if len(keep) < 3:
        return None
    xs = [x for x, _, _ in keep]
    vals = [v for _, _, v in keep]
    means = [sum(v) / len(v) for v in vals]
    tput = [sum(g) / len(g) if (g := p.values(METRICS["total"])) else 0.0 for _, p, _ in keep]
    log_x = all(float(x) > 0 for x in xs)
    p = anova(vals)
    c = CostCurve(param, fixed, cost.key, cost.name, cost.unit, "flat", xs, means, [len(v) for v in vals],
                  None if p is None else adjusted(p, family))
    idx = range(len(xs) - 1)
    c.gains = [per_doubling(float(xs[i]), means[i], float(xs[i + 1]), means[i + 1], i, i + 1, log_x) for i in idx]
    c.throughput_gains = [per_doubling(float(xs[i]), tput[i], float(xs[i + 1]), tput[i + 1], i, i + 1, log_x) for i in idx]
    where = (", ".join(f"{k}={v}" for k, v in fixed.items()) + ": ") if fixed else ""
    span = f"{num(means[0])} to {num(means[-1])} {cost.unit} from {param}={xs[0]} to {param}={xs[-1]}"
    single = c.p_value is None
    if not single and c.p_value >= ALPHA:  # type: ignore[operator]
        c.text = f"{where}{cost.name}: no change shown along {param} ({span}; {pval(c.p_value)})"
        return c
    if single and min(means) == max(means):  # the same figure at every value: nothing to describe
        c.text = f"{where}{cost.name}: {num(means[0])} {cost.unit} at every {param} (single runs)"
        return c
    c.shape = "climbing" if means[-1] > means[0] else "falling"
    step = "doubling" if log_x else "step"
    throughput = any(METRICS["total"].value(r) is not None for p in data.points for r in p.counted)
    if not throughput:  # a timed command: nothing to set the cost against but the parameter
        c.throughput_gains = []
        c.text = f"{where}{cost.name} {'rises' if c.shape == 'climbing' else 'falls'} along {param} ({span})"
        if single:
            c.text = "single runs, no noise estimate: " + c.text
        return c
    climb = next((i for i in idx if c.gains[i] > CLIMB and c.gains[i] - c.throughput_gains[i] > CLIMB), None)
    if c.shape == "climbing" and climb is not None:
        c.climbs_from = xs[climb]
        c.text = (f"{where}{cost.name} climbs faster than throughput from {param}={xs[climb]} on "
                  f"(+{c.gains[climb] * 100:.0f}% {cost.name} per {step} vs {c.throughput_gains[climb] * 100:+.0f}% throughput; {span})")
    else:
        verb = "rises" if c.shape == "climbing" else "falls"
        c.text = f"{where}{cost.name} {verb} along {param} no faster than throughput ({span})"
    if single:
        c.text = "single runs, no noise estimate: " + c.text
    return c


def cost_findings(curves: list[CostCurve]) -> list[str]:
    """One sentence per cost and parameter: the curve's own when the other parameters were
    not swept, else where it climbs for each of their values (flat curves: JSON only)."""
    by: dict[tuple[str, str], list[CostCurve]] = {}
    for c in curves:
        if c.shape != "flat":
            by.setdefault((c.param, c.cost), []).append(c)
    out = []
    for (param, _), cs in by.items():
        if len(cs) == 1:
            out.append(cs[0].text)
            continue
        climbing = [c for c in cs if c.climbs_from is not None]
        name = cs[0].name
        single = "single runs, no noise estimate: " if any(n < 2 for c in cs for n in c.n) else ""
        if not climbing:
            than = " no faster than throughput" if any(c.throughput_gains for c in cs) else ""  # a timed command has none
            out.append(f"{single}{name} {'rises' if cs[0].shape == 'climbing' else 'changes'} along {param}{than} "
                       f"({len(cs)} lines of the other parameters)")
            continue
        where = "; ".join(f"{', '.join(f'{k}={v}' for k, v in c.fixed.items())}: from {param}={c.climbs_from}" for c in climbing)
        worst = max(climbing, key=lambda c: c.mean[-1])
        out.append(f"{single}{name} climbs faster than throughput along {param} ({where}); up to {num(worst.mean[-1])} {worst.unit} at "
                   f"{param}={worst.x[-1]}")
    return out
