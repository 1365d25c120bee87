"""Energy per point and the efficiency verdicts from it, where it was measured: joules per
run (a timed workload), Gbit/s per watt (a network test), and a faster point that idles
higher (study C: "profile X is 45% faster but idles 89 W higher").

Two sources, never mixed: powercap (RAPL package + DRAM, `energy_j`/`power_w`) and the
external meter (`meter_j`/`meter_w`). Per point and source: the mean joules per counted
run with its Student-t 95% margin (study C's author's table: joules per build), and the
watts of the configuration, total joules / total seconds of the runs' windows (each run's
seconds are its joules / its watts): never the mean of per-run means, which would weigh a
short run like a long one. Runs too short to meter (`energy_note`) are counted and said.
Idle power is the study's `idle_power` rows (min watts over the window: study C took the
lowest value over 2 minutes). Nothing measured, nothing said.
"""
from __future__ import annotations

from dataclasses import dataclass

from .data import Metric, PointData, StudyData
from .serial import JsonRecord
from .stats import summarize
from .sweep import num

IDLE_GAP_W = 5.0  # idle watts below which two points idle alike (a plug's and RAPL's noise)
SOURCES = {"powercap": ("energy_j", "power_w"), "meter": ("meter_j", "meter_w")}  # source -> (joules, watts) fields


@dataclass
class PointEnergy(JsonRecord):
    """One point's energy from one source over its counted runs."""

    source: str  # powercap (RAPL package + DRAM) or meter
    n: int  # counted runs with joules from this source
    joules: float  # mean joules per run
    joules_ci: float | None  # Student-t 95% half-width of that mean (None below 2 runs)
    watts: float | None  # total joules / total seconds of the runs' windows
    too_short: int = 0  # runs shorter than a few meter intervals (their joules rest on one or two readings)


def point_energy(p: PointData) -> list[PointEnergy]:
    """The point's energy per source that measured it (powercap first)."""
    out = []
    for source, (jf, wf) in SOURCES.items():
        pairs = [(float(j), r.get(wf)) for r in p.counted if (j := r.get(jf)) is not None]
        if not pairs:
            continue
        s = summarize([j for j, _ in pairs])
        timed = [(j, j / float(w)) for j, w in pairs if w]  # each run's seconds: its joules / its watts
        secs = sum(t for _, t in timed)
        watts = sum(j for j, _ in timed) / secs if secs > 0 else None
        short = sum(1 for r in p.counted if r.get(jf) is not None and source == "meter" and r.get("energy_note"))
        assert s.mean is not None
        out.append(PointEnergy(source, s.n, s.mean, s.half_width, watts, short))
    return out


def _mean(values: list[float]) -> float | None:
    return summarize(values).mean if values else None


def _first(p: PointData) -> PointEnergy | None:
    got = point_energy(p)
    return got[0] if got else None


def joules(p: PointData) -> float | None:
    """Mean joules per counted run (powercap, else the meter)."""
    e = _first(p)
    return None if e is None else e.joules


def watts(p: PointData) -> float | None:
    """The point's watts (total joules / total seconds; powercap, else the meter)."""
    e = _first(p)
    return None if e is None else e.watts


def energy_text(e: PointEnergy) -> str:
    """'21.1 J per run (± 0.62, 95%, N=4), 100 W (meter)'."""
    ci = f" (± {num(e.joules_ci)}, 95%, N={e.n})" if e.joules_ci is not None else f" (N={e.n})"
    return f"{num(e.joules)} J per run{ci}" + (f", {num(e.watts)} W" if e.watts is not None else "") + f" ({e.source})"


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
    measured = [(p, e) for p in data.points if (e := _first(p)) is not None]
    if measured and not m.higher_is_better:
        p, e = min(measured, key=lambda t: t[1].joules)
        out.append(f"least energy per run{where(p)}: {energy_text(e)}; watts are joules / seconds of the runs")
    elif measured:
        per_w = [(p, g / e.watts, e) for p, e in measured if (g := _mean([v * 1e-9 for v in p.values(m)])) and e.watts]
        if per_w:
            p, gw, e = max(per_w, key=lambda t: t[1])
            out.append(f"best Gbit/s per watt{where(p)}: {gw:.3f} ({num(e.watts)} W, {num(e.joules)} J per test, {e.source})")
    short = [(p, pe) for p, _ in measured for pe in point_energy(p) if pe.too_short]
    if short:
        out.append("too short to meter: " + "; ".join(f"{e.too_short} of {e.n} runs at {p.label(params)}" for p, e in short)
                   + " were shorter than a few meter intervals, so their meter joules rest on one or two readings: lengthen "
                   "the runs, or read the meter more often")
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
