"""Efficiency verdicts from energy, where it was measured: joules per run (a timed
workload), Gbit/s per watt (a network test), and a faster point that idles higher
(study C: "profile X is 45% faster but idles 89 W higher").

Energy per run is the `energy_j` column (powercap, every host measured) or else the
external meter's `meter_j`; idle power is the study's `idle_power` rows (min watts over
the window: study C took the lowest value over 2 minutes). Nothing measured, nothing said.
"""
from __future__ import annotations

from .data import Metric, PointData, StudyData
from .stats import summarize
from .sweep import num

IDLE_GAP_W = 5.0  # idle watts below which two points idle alike (a plug's and RAPL's noise)


def _mean(values: list[float]) -> float | None:
    return summarize(values).mean if values else None


def joules(p: PointData) -> float | None:
    """Mean joules per counted run (powercap, else the meter)."""
    vals = [r.energy_j for r in p.counted if r.energy_j is not None] or [r.meter_j for r in p.counted if r.meter_j is not None]
    return _mean([float(v) for v in vals])


def watts(p: PointData) -> float | None:
    vals = [r.power_w for r in p.counted if r.power_w is not None] or [r.meter_w for r in p.counted if r.meter_w is not None]
    return _mean([float(v) for v in vals])


def idle_watts(data: StudyData) -> dict[int, float]:
    """Point index -> idle watts (min over its window; the meter's where it has one, since
    it sees the whole machine, else the powercap sum over the machines sampled)."""
    by: dict[int, dict[str, float]] = {}
    for row in data.study.get("idle") or []:
        if row.get("min_w") is not None:
            d = by.setdefault(int(row["point_idx"]), {})
            d[row["source"]] = d.get(row["source"], 0.0) + float(row["min_w"])
    return {i: d.get("meter", d.get("powercap", 0.0)) for i, d in by.items()}


def energy_findings(data: StudyData, m: Metric, params: list[str]) -> list[str]:
    out: list[str] = []
    def where(p: PointData) -> str:
        return f" at {p.label(params)}" if params else ""
    measured = [(p, j) for p in data.points if (j := joules(p)) is not None]
    if measured and not m.higher_is_better:
        p, j = min(measured, key=lambda t: t[1])
        out.append(f"least energy per run{where(p)}: {num(j)} J (mean over its counted runs, average {num(watts(p))} W)")
    elif measured:
        per_w = [(p, g / w) for p in data.points if (g := _mean([v * 1e-9 for v in p.values(m)])) and (w := watts(p))]
        if per_w:
            p, e = max(per_w, key=lambda t: t[1])
            out.append(f"best Gbit/s per watt{where(p)}: {e:.3f} ({num(watts(p))} W average, {num(joules(p))} J per test)")
    if not measured and data.runs:
        why = next((r.energy_why for r in data.runs if r.energy_why), None)
        if why:
            out.append(f"no energy per run: {why}")
    out += _idle_tradeoff(data, m, params)
    return out


def _idle_tradeoff(data: StudyData, m: Metric, params: list[str]) -> list[str]:
    """The fastest point against the one that idles lowest, when they differ."""
    idle = idle_watts(data)
    means = {p.idx: mean for p in data.points if p.idx in idle and (mean := _mean(p.values(m))) is not None}
    if len(means) < 2:
        return []
    pts = {p.idx: p for p in data.points}
    best = (max if m.higher_is_better else min)(means, key=lambda i: means[i])
    low = min(idle, key=lambda i: idle[i])
    lines = ["idle power (lowest over the window): " + "; ".join(f"{pts[i].label(params)} {num(idle[i])} W" for i in sorted(idle))]
    if best == low or idle[best] - idle[low] < IDLE_GAP_W or low not in means:
        return lines
    a, b = means[low], means[best]
    gain = abs(b - a) / abs(a) * 100 if a else 0.0
    word = m.better if m.better in ("faster", "slower") else "better"
    lines.append(f"{pts[best].label(params)} is {gain:.0f}% {word} than {pts[low].label(params)} but idles "
                 f"{num(idle[best] - idle[low])} W higher ({num(idle[best])} vs {num(idle[low])} W)")
    return lines
