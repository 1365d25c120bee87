"""The report's interval chart per point: every counted run's per-interval Gbit/s over
time, one panel per point (at most MAX_PANELS: points with a step or a trend first), a
dashed line where a run's throughput stepped, and each run's stability verdict
(analysis/stability.py) in the legend. The single-point intervals chart (charts.py) stays."""
from __future__ import annotations

import math
from pathlib import Path

from ..analysis.data import StudyData
from ..analysis.verdicts import Analysis
from .charts import Chart, save_chart, plt

MAX_PANELS = 8


def stability_chart(data: StudyData, analysis: Analysis, out: Path) -> Chart | None:
    if not analysis.stability:
        return None
    by_label: dict[str, list] = {}
    for r in analysis.stability:
        by_label.setdefault(r.label, []).append(r)
    order = sorted(by_label, key=lambda lb: (not any(r.verdict in ("fell", "rose", "drifting") for r in by_label[lb]), list(by_label).index(lb)))
    labels = order[:MAX_PANELS]
    cols = min(2, len(labels))
    rows = math.ceil(len(labels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 3.2 * rows), squeeze=False)
    points = {p.label(data.params): p for p in data.points}
    for ax, label in zip([a for row in axes for a in row], labels):
        verdicts = {(r.run, r.pair): r for r in by_label[label]}
        for run in points[label].counted:
            st = verdicts.get((run.run, run.pair))
            if st is None:
                continue
            iv = sorted((i for i in run.intervals if i.get("direction", "forward") == "forward" and not i.get("omitted")), key=lambda i: i["start"])
            line, = ax.plot([i["end"] for i in iv], [i["bps"] / 1e9 for i in iv], marker=".", markersize=3,
                            label=f"run {run.run}{' ' + run.pair if run.pair else ''}: {st.verdict}")
            if st.step_at_s is not None:
                ax.axvline(st.step_at_s, linestyle="--", color=line.get_color(), linewidth=1)
        ax.set_title(label or data.name, fontsize=9)
        ax.set_xlabel("seconds")
        ax.set_ylabel("Gbit/s")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    for ax in [a for row in axes for a in row][len(labels):]:
        ax.set_visible(False)
    more = f" ({len(labels)} of {len(order)} points, those with a step or a trend first)" if len(order) > len(labels) else ""
    title = f"{data.name}: per-interval Gbit/s of each run over time{more}; dashed: where a run stepped"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_chart(fig, out, "stability", "Per-interval throughput and stability per run")
