"""Efficiency as a reader means it: the throughput-vs-cost frontier, and the point to use.

"Most Gbit/s per core" rewards the cheap corner: a point at 29 Gbit/s on 2% CPU divides to
a huge ratio nobody would choose. Instead, per cost (client, server, host, hypervisor CPU in
cores; watts where measured):

- the **frontier** (Pareto): the points no other point beats on both throughput and cost;
- the **recommended point**: the knee of the frontier among the points that reach a stated
  share of the best throughput (`analyze --share`, default 80%). The knee is the frontier
  point farthest above the straight line from the cheapest frontier point to the fastest
  (both axes scaled to 0..1, as Kneedle does), so the cheap corner is never picked: it does
  not reach the share;
- the **marginal** Gbit/s per extra core (or watt) between neighbouring frontier points, and
  where extra cost buys nothing: "from queues=16 on, +150% host CPU for +7% throughput".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .costs import Cost, costs
from .data import METRICS, PointData, StudyData
from .serial import JsonRecord
from .stats import summarize
from .sweep import num

SHARE = 0.80  # default share of the best throughput the recommended point must reach
LITTLE_GAIN = 0.10  # from a frontier point whose way to the top gains less than this, extra cost buys nothing
KNEE_TIE = 0.05  # a dearer point must lie this much farther above the chord to be the knee (a straight frontier has none)


@dataclass
class FrontierPoint(JsonRecord):
    point: dict[str, Any]
    label: str
    gbps: float
    cost: float  # in the cost's unit: cores or W
    n: int
    marginal: float | None = None  # Gbit/s per extra unit of cost from the previous frontier point


@dataclass
class WastedCost(JsonRecord):
    """From `point` on, the rest of the frontier pays `cost_pct` more for `gain_pct` more."""

    point: dict[str, Any]
    label: str
    to_point: dict[str, Any]
    cost_pct: float
    gain_pct: float
    marginal: float | None  # Gbit/s per extra core (or watt) over that stretch
    text: str


@dataclass
class Frontier(JsonRecord):
    """The efficiency verdict for one cost (the `efficiency` list of `analyze --format json`)."""

    cost: str  # cpu_client, cpu_server, cpu_host, hypervisor:NAME, watts:KEY
    name: str  # "host CPU"
    unit: str  # cores or W
    share: float
    point: dict[str, Any]  # the recommended point
    gbps: float
    cost_value: float
    share_of_best: float  # its throughput / the best throughput
    best: FrontierPoint
    cheapest: FrontierPoint
    frontier: list[FrontierPoint] = field(default_factory=list)  # cheapest first
    dominated: list[str] = field(default_factory=list)  # labels of points another point beats on both
    wasted: WastedCost | None = None
    tentative: bool = False  # single runs: no noise estimate behind the order of the points
    machine_cores: int | None = None
    text: str = ""


def _fmt_cost(v: float, unit: str) -> str:
    return f"{num(v)} {'core' if unit == 'cores' and v == 1 else unit}"


def _pct_of_machine(c: Cost, v: float) -> str:
    machine = c.key == "cpu_host" or c.key.startswith("hypervisor:")  # a process's CPU is not a share of the machine
    return f" = {v / c.machine_cores * 100:.0f}% of {c.machine_cores} cores" if machine and c.machine_cores else ""


def pareto(pts: list[FrontierPoint]) -> list[FrontierPoint]:
    """The points no other point is both faster and cheaper than (cheapest first)."""
    out: list[FrontierPoint] = []
    for p in sorted(pts, key=lambda p: (p.cost, -p.gbps)):
        if not out or p.gbps > out[-1].gbps:
            out.append(p)
    return out


def knee(front: list[FrontierPoint], floor: float) -> FrontierPoint:
    """The frontier point reaching `floor` Gbit/s farthest above the chord from the
    cheapest to the fastest frontier point (axes scaled to 0..1); the cheapest point
    within KNEE_TIE of that (on a straight frontier: the cheapest reaching `floor`)."""
    lo, hi = front[0], front[-1]
    dx, dy = hi.cost - lo.cost, hi.gbps - lo.gbps
    cands = [p for p in front if p.gbps >= floor] or [hi]

    def lift(p: FrontierPoint) -> float:
        if dx <= 0 or dy <= 0:
            return 0.0
        return (p.gbps - lo.gbps) / dy - (p.cost - lo.cost) / dx

    top = max(lift(p) for p in cands)
    return next(p for p in cands if lift(p) >= top - KNEE_TIE)


def _wasted(c: Cost, front: list[FrontierPoint], rec: FrontierPoint) -> WastedCost | None:
    top = front[-1]
    for p in front[front.index(rec):-1]:
        gain = top.gbps / p.gbps - 1 if p.gbps else 0.0
        more = top.cost / p.cost - 1 if p.cost else 0.0
        if gain < LITTLE_GAIN and more > gain:
            marginal = (top.gbps - p.gbps) / (top.cost - p.cost) if top.cost > p.cost else None
            per = f"{num(marginal)} Gbit/s per extra {'core' if c.is_cpu else c.unit}" if marginal is not None else ""
            text = (f"from {p.label} on, +{more * 100:.0f}% {c.name} for +{gain * 100:.0f}% throughput "
                    f"({num(p.gbps)} -> {num(top.gbps)} Gbit/s at {top.label}{'; ' + per if per else ''}): extra {c.name} buys almost nothing")
            return WastedCost(p.point, p.label, top.point, more * 100, gain * 100, marginal, text)
    return None


def frontier(data: StudyData, params: list[str], cost: Cost, share: float = SHARE) -> Frontier | None:
    total = METRICS["total"]
    pts: list[FrontierPoint] = []
    by_label: dict[str, PointData] = {}
    for p in data.points:
        g = summarize(p.values(total))
        cv = cost.values(p)
        if not g.n or not cv or g.mean is None:
            continue
        label = p.label(params)
        by_label[label] = p
        pts.append(FrontierPoint({k: p.params.get(k) for k in params}, label, g.mean * 1e-9, sum(cv) / len(cv), g.n))
    if not pts:
        return None
    front = pareto(pts)
    for a, b in zip(front, front[1:]):
        b.marginal = (b.gbps - a.gbps) / (b.cost - a.cost) if b.cost > a.cost else None
    best, cheapest = front[-1], front[0]
    rec = knee(front, share * best.gbps)
    on = {id(p) for p in front}
    dominated = [p.label for p in pts if id(p) not in on]
    wasted = _wasted(cost, front, rec)
    tentative = any(p.n < 2 for p in front)
    out = Frontier(cost.key, cost.name, cost.unit, share, rec.point, rec.gbps, rec.cost, rec.gbps / best.gbps if best.gbps else 0.0,
                   best, cheapest, front, dominated, wasted, tentative, cost.machine_cores)
    where = f" {rec.label}" if params else ""
    text = (f"{cost.name}: recommended{where}: {num(rec.gbps)} Gbit/s ({out.share_of_best * 100:.0f}% of the best {num(best.gbps)}) "
            f"for {_fmt_cost(rec.cost, cost.unit)}{_pct_of_machine(cost, rec.cost)} (the knee of the throughput-vs-{cost.name} "
            f"frontier among points reaching {share * 100:.0f}% of the best)")
    if cheapest is not rec:
        text += f"; the cheapest point, {cheapest.label}, gives {num(cheapest.gbps)} Gbit/s for {_fmt_cost(cheapest.cost, cost.unit)}"
    if best is not rec:
        text += f"; the fastest, {best.label}, {num(best.gbps)} Gbit/s for {_fmt_cost(best.cost, cost.unit)}"
    if tentative:
        text = "single runs, tentative: " + text + "; repeat to confirm"
    out.text = text
    return out


def frontiers(data: StudyData, params: list[str], share: float = SHARE) -> list[Frontier]:
    """One frontier per cost the study measured."""
    return [f for f in (frontier(data, params, c, share) for c in costs(data)) if f is not None]


def frontier_findings(fronts: list[Frontier]) -> list[str]:
    """The sentences: the recommendation per cost, then where extra cost buys nothing."""
    out = [f.text for f in fronts]
    out += [f"{'single runs, tentative: ' if f.tentative else ''}{f.name}: {f.wasted.text}" for f in fronts if f.wasted]
    return out
