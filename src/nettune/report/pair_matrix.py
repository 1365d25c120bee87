"""The report of a study over host pairs: a table of every pair (N = its repeats, mean and
95% CI), a table of the parallel rounds' aggregates, and one chart per study: for a mesh
(or any pair list with several servers) a heat map of server x client whose cells show the
value and its CI; for a star (one server) one bar per spoke with its CI.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..analysis.links import PairStats  # noqa: E402
from ..analysis.sweep import num  # noqa: E402
from ..analysis.verdicts import Analysis  # noqa: E402
from .charts import Chart, save_chart  # noqa: E402


def _ci(mean: float | None, hw: float | None) -> str:
    if mean is None:
        return ""
    return num(mean) + (f" ± {num(hw)}" if hw is not None else "")


def _label(point: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())


def pair_table(analysis: Analysis) -> tuple[list[str], list[list[str]]]:
    """One row per pair and point: pair, N, mean ± 95% half-width, the CI, failed runs."""
    if analysis.pairs is None:
        return [], []
    many = len({_label(p.point) for p in analysis.pairs.pairs}) > 1
    head = (["point"] if many else []) + ["pair", "server", "client", "N", analysis.unit, "95% CI", "failed"]
    rows = []
    for p in analysis.pairs.pairs:
        ci = f"{num(p.ci_low)} to {num(p.ci_high)}" if p.ci_low is not None else ""
        rows.append(([_label(p.point)] if many else []) + [p.pair, p.server or "", p.client or "", str(p.n),
                                                          _ci(p.mean, p.half_width), ci, str(p.failed or "")])
    return head, rows


def round_table(analysis: Analysis) -> tuple[list[str], list[list[str]]]:
    """One row per parallel round and point: its pairs and what they reached together."""
    if analysis.pairs is None or not analysis.pairs.rounds:
        return [], []
    many = len({_label(r.point) for r in analysis.pairs.rounds}) > 1
    head = (["point"] if many else []) + ["round", "pairs at once", "N", "Gbit/s together", "95% CI"]
    rows = [([_label(r.point)] if many else []) + [str(r.round + 1), ", ".join(r.pairs), str(r.n), _ci(r.mean, r.half_width),
                                                   f"{num(r.ci_low)} to {num(r.ci_high)}" if r.ci_low is not None else ""]
            for r in analysis.pairs.rounds]
    return head, rows


def pair_chart(analysis: Analysis, out: Path, point: dict[str, Any] | None = None) -> Chart | None:
    """The pair matrix (several servers) or the spokes (one server) of one point (default: the best)."""
    if analysis.pairs is None or not analysis.pairs.pairs:
        return None
    want = point if point is not None else analysis.best.point
    stats = [p for p in analysis.pairs.pairs if p.point == want] or analysis.pairs.pairs
    stats = [p for p in stats if p.point == stats[0].point]
    where = f" at {_label(stats[0].point)}" if stats[0].point else ""
    servers = list(dict.fromkeys(p.server or p.pair.split("->")[0] for p in stats))
    if len(servers) == 1:
        return _spokes(stats, analysis.unit, servers[0], where, out)
    return _matrix(stats, analysis.unit, where, out)


def _spokes(stats: list[PairStats], unit: str, center: str, where: str, out: Path) -> Chart:
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(stats) + 2), 4.2))
    xs = range(len(stats))
    means = [p.mean or 0.0 for p in stats]
    err = [p.half_width or 0.0 for p in stats]
    ax.bar(xs, means, yerr=err, capsize=4, color="#4c78a8")
    for x, p in zip(xs, stats):
        ax.annotate(f"N={p.n}", (x, p.mean or 0.0), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([p.client or p.pair for p in stats], rotation=30 if len(stats) > 6 else 0)
    ax.set_xlabel(f"client (server {center})")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    title = f"star: one bar per spoke{where} (mean, 95% CI)"
    ax.set_title(title)
    return save_chart(fig, out, "pairs", title)


def _natural(name: str) -> list[Any]:
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name)]


def _matrix(stats: list[PairStats], unit: str, where: str, out: Path) -> Chart:
    servers = sorted({p.server or "" for p in stats}, key=_natural)  # h2 before h10
    clients = sorted({p.client or "" for p in stats}, key=_natural)
    grid = [[float("nan")] * len(clients) for _ in servers]
    for p in stats:
        if p.mean is not None:
            grid[servers.index(p.server or "")][clients.index(p.client or "")] = p.mean
    fig, ax = plt.subplots(figsize=(1.3 * len(clients) + 2.5, 1.0 * len(servers) + 1.8))
    img = ax.imshow(grid, cmap="viridis", aspect="auto")
    fig.colorbar(img, ax=ax, label=unit)
    for p in stats:
        i, j = servers.index(p.server or ""), clients.index(p.client or "")
        text = _ci(p.mean, p.half_width) + f"\nN={p.n}"
        dark = p.mean is not None and img.norm(p.mean) < 0.5  # viridis is dark at the low end
        ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(clients)))
    ax.set_xticklabels(clients)
    ax.set_yticks(range(len(servers)))
    ax.set_yticklabels(servers)
    ax.set_xlabel("client")
    ax.set_ylabel("server")
    title = f"pair matrix{where}: {unit} per link (mean ± 95% CI)"
    ax.set_title(title)
    return save_chart(fig, out, "pairs", title)
