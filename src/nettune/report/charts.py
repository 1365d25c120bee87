"""Report charts (matplotlib, Agg: no display needed), each written as PNG and SVG.

Throughput vs the first swept parameter with 95% error bars, one line per value of
the others; every cost along it (client, server, host, hypervisor CPU in cores, converted
from each figure's stored unit; watts where measured), with where it climbs faster than
throughput marked; the throughput-vs-cost frontier with the recommended point; the
per-interval time series of one point; and the spread of per-stream rates. Error bars are the Student-t interval of the mean, so a bar that
overlaps another is a hint (not a test) that the difference may be noise.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")  # before pyplot: reports are built on headless machines
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..analysis.cost_curves import CostCurve  # noqa: E402
from ..analysis.costs import Cost, costs  # noqa: E402
from ..analysis.data import METRICS, Metric, PointData, StudyData  # noqa: E402
from ..analysis.fairness import jain, stream_rates  # noqa: E402
from ..analysis.frontier import Frontier  # noqa: E402
from ..analysis.stats import summarize  # noqa: E402

# Reproducible SVGs: the same data gives the same file.
matplotlib.rcParams["svg.hashsalt"] = "nettune"


@dataclass(frozen=True)
class Chart:
    name: str  # file stem: throughput, cpu, intervals, streams
    title: str
    png: Path
    svg: Path


def save_chart(fig: Figure, out: Path, name: str, title: str) -> Chart:
    out.mkdir(parents=True, exist_ok=True)
    png, svg = out / f"{name}.png", out / f"{name}.svg"
    fig.savefig(png, dpi=110, bbox_inches="tight", metadata={"Software": "nettune"})
    fig.savefig(svg, bbox_inches="tight", metadata={"Date": None, "Creator": "nettune"})
    plt.close(fig)
    return Chart(name, title, png, svg)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def series(data: StudyData) -> tuple[str | None, list[tuple[str, list[PointData]]]]:
    """The x parameter (first swept one) and the points of each line (one per value of the others)."""
    if not data.axes:
        return None, [("", data.points)]
    x = data.axes[0]
    others = data.axes[1:]
    lines: dict[str, list[PointData]] = {}
    for p in data.points:
        key = ", ".join(f"{o}={p.params.get(o)}" for o in others)
        lines.setdefault(key, []).append(p)
    for pts in lines.values():
        if all(_is_num(p.params.get(x)) for p in pts):
            pts.sort(key=lambda p: float(p.params[x]))
    return x, list(lines.items())


def _plot_metric(ax: Any, data: StudyData, m: Metric) -> None:
    x, lines = series(data)
    numeric = x is not None and all(_is_num(p.params.get(x)) for p in data.points)
    cats = list(dict.fromkeys(str(p.params.get(x)) for p in data.points)) if x else [data.name]
    for i, (label, pts) in enumerate(lines):
        sums = [summarize(p.values(m)).scaled(m.scale) for p in pts]
        keep = [(p, s) for p, s in zip(pts, sums) if s.n]
        if not keep:
            continue
        if numeric:
            xs: list[float] = [float(p.params[x]) for p, _ in keep]  # type: ignore[index]
        else:
            # categorical: side-by-side positions so error bars of lines do not overlap
            width = 0.8 / max(1, len(lines))
            xs = [cats.index(str(p.params.get(x)) if x else data.name) - 0.4 + width * (i + 0.5) for p, _ in keep]
        ys = [s.mean for _, s in keep]
        err = [s.half_width or 0.0 for _, s in keep]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, linestyle="-" if numeric else "none", label=label or None)
    if numeric and x:
        vals = sorted({float(p.params[x]) for p in data.points})
        if vals[0] > 0 and vals[-1] / vals[0] >= 8:
            ax.set_xscale("log", base=2)  # doubling sweeps read evenly on a log2 axis
        ax.set_xticks(vals)
        ax.set_xticklabels([f"{v:g}" for v in vals])
        ax.minorticks_off()
    else:
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats, rotation=30 if len(cats) > 4 else 0, ha="right" if len(cats) > 4 else "center")
    ax.set_xlabel(x or "")
    ax.set_ylabel(m.label)
    ax.grid(True, alpha=0.3)
    if any(label for label, _ in lines):
        ax.legend(fontsize="small")


def _floor0(ax: Any) -> None:
    # start at 0 (a truncated axis exaggerates differences) with headroom for the top marker
    top = ax.get_ylim()[1]
    ax.set_ylim(0, top * 1.05 if top > 0 else 1)


def throughput_chart(data: StudyData, out: Path, metric: Metric) -> Chart:
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    _plot_metric(ax, data, metric)
    _floor0(ax)
    ns = [len(p.values(metric)) for p in data.points if p.values(metric)]
    what = ("single runs: no interval" if ns and max(ns) < 2 else "mean, 95% CI" if ns and min(ns) >= 2
            else "mean, 95% CI where N >= 2; single runs have no bar")
    title = f"{data.name}: {metric.label} ({what})"
    ax.set_title(title)
    return save_chart(fig, out, "throughput", title)


def _cost_metric(c: Cost) -> Metric:
    """A cost as a plottable metric, in cores (or W) whatever unit each figure was stored in."""
    return Metric(c.key, f"{c.name} ({c.unit})", 1.0, False, "cheaper", "dearer", c.run_value)


def _climbs(data: StudyData, c: Cost, curves: Sequence[CostCurve]) -> list[float]:
    """Values of the x parameter from which this cost climbs faster than throughput, as the
    analysis found them (its tests, under its multiplicity policy: the chart never disagrees)."""
    x = data.axes[0] if data.axes else None
    return sorted({float(cc.climbs_from) for cc in curves if cc.param == x and cc.cost == c.key and cc.climbs_from is not None})


def cpu_chart(data: StudyData, out: Path, curves: Sequence[CostCurve] = ()) -> Chart | None:
    found = costs(data)
    if not found:
        return None
    fig, axes = plt.subplots(1, len(found), figsize=(5 * len(found), 4), squeeze=False)
    for ax, c in zip(axes[0], found):
        _plot_metric(ax, data, _cost_metric(c))
        climbs = _climbs(data, c, curves)
        for x in climbs:
            ax.axvline(x, color="grey", linestyle=":", linewidth=1)
        ax.set_title(f"{c.name}, {c.unit}" + (" (dotted: climbs faster than throughput)" if climbs else ""), fontsize=9)
        _floor0(ax)
    fig.suptitle(f"{data.name}: cost per side (CPU in cores, converted from each figure's stored unit)")
    fig.tight_layout()
    return save_chart(fig, out, "cpu", "Cost per side (CPU in cores)")


def frontier_chart(data: StudyData, out: Path, efficiency: list[Frontier]) -> Chart | None:
    """Throughput against each cost: every point, the frontier, the recommended point (the
    analysis's frontiers, so the chart's share line is the verdicts' `--share`)."""
    fronts = [f for f in efficiency if len(f.frontier) >= 2]
    if not fronts:
        return None
    fig, axes = plt.subplots(1, len(fronts), figsize=(5 * len(fronts), 4), squeeze=False)
    for ax, f in zip(axes[0], fronts):
        every = [(p.cost, p.gbps) for p in f.frontier] + [(c, g) for c, g in _dominated(data, f)]
        ax.scatter([c for c, _ in every], [g for _, g in every], s=12, color="grey", alpha=0.6, label="points")
        ax.plot([p.cost for p in f.frontier], [p.gbps for p in f.frontier], "-o", markersize=4, label="frontier")
        ax.axhline(f.share * f.best.gbps, color="grey", linestyle=":", linewidth=1, label=f"{f.share * 100:.0f}% of the best")
        ax.scatter([f.cost_value], [f.gbps], s=90, marker="*", color="red", zorder=5, label="recommended")
        ax.annotate(", ".join(f"{k}={v}" for k, v in f.point.items()), (f.cost_value, f.gbps), textcoords="offset points",
                    xytext=(6, -12), fontsize=7)
        ax.set_xlabel(f"{f.name} ({f.unit})")
        ax.set_ylabel("Gbit/s")
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    title = f"{data.name}: throughput vs cost (frontier: no point is both faster and cheaper)"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_chart(fig, out, "frontier", "Throughput vs cost: frontier and recommended point")


def _dominated(data: StudyData, f: Frontier) -> list[tuple[float, float]]:
    """(cost, Gbit/s) of the points off the frontier."""
    c = next(c for c in costs(data) if c.key == f.cost)
    out = []
    for p in data.points:
        if p.label(data.params) in f.dominated:
            v, g = c.values(p), summarize([x * 1e-9 for x in p.values(METRICS["total"])])
            if v and g.mean is not None:
                out.append((sum(v) / len(v), g.mean))
    return out


def intervals_chart(data: StudyData, point: PointData, out: Path) -> Chart | None:
    runs = [r for r in point.counted if r.intervals]
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4))
    for r in runs:
        for direction, style in (("forward", "-"), ("reverse", "--")):
            iv = [i for i in r.intervals if i.get("direction", "forward") == direction]
            if iv:
                label = f"run {r.run}" + (" (reverse)" if direction == "reverse" else "")
                ax.plot([i["end"] for i in iv], [i["bps"] / 1e9 for i in iv], style, marker=".", label=label)
    title = f"{data.name}: per-interval Gbit/s at {point.label(data.params)}"
    ax.set_title(title)
    ax.set_xlabel("seconds")
    ax.set_ylabel("Gbit/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", ncol=2)
    return save_chart(fig, out, "intervals", title)


def streams_chart(data: StudyData, out: Path) -> Chart | None:
    pts = [(p, [stream_rates(r) for r in p.counted]) for p in data.points]
    pts = [(p, [x for x in per_run if len(x) > 1]) for p, per_run in pts]
    pts = [(p, per_run) for p, per_run in pts if per_run]
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(pts) + 2), 4.5))
    for i, (p, per_run) in enumerate(pts):
        rates = [x / 1e9 for run in per_run for x in run]
        # jitter the dots sideways so overlapping streams stay visible
        xs = [i + ((k % 7) - 3) * 0.04 for k in range(len(rates))]
        ax.scatter(xs, rates, s=10, alpha=0.6)
        ax.hlines([min(rates), max(rates)], i - 0.25, i + 0.25, colors="grey", linewidth=1)
        j = [v for v in (jain(run) for run in per_run) if v is not None]
        if j:
            ax.annotate(f"J={min(j):.2f}", (i, max(rates)), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=7)
    ax.set_xticks(range(len(pts)))
    ax.set_xticklabels([p.label(data.params) for p, _ in pts], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("Gbit/s per stream")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    title = f"{data.name}: per-stream rates (every stream of every counted run; J = Jain's index, least fair run)"
    ax.set_title(title, fontsize=9)
    return save_chart(fig, out, "streams", "Per-stream spread")


def all_charts(data: StudyData, out: Path, metric: Metric, point: PointData | None, efficiency: list[Frontier],
               cost_curves: Sequence[CostCurve] = ()) -> list[Chart]:
    charts = [throughput_chart(data, out, metric), cpu_chart(data, out, cost_curves), frontier_chart(data, out, efficiency),
              intervals_chart(data, point, out) if point else None, streams_chart(data, out)]
    return [c for c in charts if c is not None]
