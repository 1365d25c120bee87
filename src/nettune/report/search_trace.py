"""The report's part for a study with [search]: the answer (verdict against the defaults,
drift check, runners-up, importances beside the ablation, a peak's shape), and the trace
chart: every test's objective in order, its configuration's mean with its 95% interval,
and the best so far with its interval (docs/search.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..analysis.data import StudyData  # noqa: E402
from ..errors import NettuneError  # noqa: E402
from ..search.answer import Answer  # noqa: E402
from ..search.answer_text import answer_lines  # noqa: E402
from ..search.session import answer_of  # noqa: E402
from .charts import Chart, save_chart  # noqa: E402

ROLE_COLOURS = {"baseline": "tab:gray", "trial": "tab:blue", "end": "tab:purple"}


@dataclass
class SearchPart:
    answer: Answer | None
    lines: list[str] = field(default_factory=list)  # the answer as text (or why there is none)
    chart: Chart | None = None


def search_part(data: StudyData, out: Path) -> SearchPart | None:
    """None for a study without [search]."""
    try:
        answer = answer_of(data)
    except NettuneError as e:
        return SearchPart(None, [f"the search's answer cannot be rebuilt: {e}"])
    if answer is None:
        return None
    return SearchPart(answer, answer_lines(answer), trace_chart(answer, out) if answer.trace else None)


def trace_chart(a: Answer, out: Path) -> Chart:
    """Objective vs test: each test's value (by role), its configuration's mean and interval
    after it, and the best so far with its interval."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    k = a.scale
    for role, colour in ROLE_COLOURS.items():
        pts = [s for s in a.trace if s.role == role and s.value is not None]
        if pts:
            ax.scatter([s.seq + 1 for s in pts], [s.value * k for s in pts], s=14, color=colour, label={"baseline": "defaults",
                       "trial": "trial", "end": "end phase (defaults, winner, ablation)"}[role], zorder=3)
    with_ci = [s for s in a.trace if s.mean is not None and s.lo is not None and s.hi is not None]
    if with_ci:
        ax.errorbar([s.seq + 1 for s in with_ci], [s.mean * k for s in with_ci],
                    yerr=[[(s.mean - s.lo) * k for s in with_ci], [(s.hi - s.mean) * k for s in with_ci]],
                    fmt="none", ecolor="tab:blue", alpha=0.25, capsize=2, label="its configuration's mean, 95% CI")
    best = [s for s in a.trace if s.best_mean is not None]
    if best:
        xs = [s.seq + 1 for s in best]
        ax.step(xs, [s.best_mean * k for s in best], where="post", color="tab:green", label="best so far")
        lo = [(s.best_lo if s.best_lo is not None else s.best_mean) * k for s in best]
        hi = [(s.best_hi if s.best_hi is not None else s.best_mean) * k for s in best]
        ax.fill_between(xs, lo, hi, step="post", color="tab:green", alpha=0.12)
    ends = [s.seq + 1 for s in a.trace if s.role == "end"]
    if ends:
        ax.axvspan(min(ends) - 0.5, max(ends) + 0.5, color="tab:purple", alpha=0.06)
    ax.set_xlabel("test (in the order run)")
    ax.set_ylabel(f"{a.objective} ({a.unit})")
    ax.set_title(f"search trace ({a.method}): {'higher' if a.higher_is_better else 'lower'} is better")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return save_chart(fig, out, "search", f"Search trace ({a.method}): objective per test, best so far")


def search_md(part: SearchPart | None, md_text: object) -> list[str]:
    """The Markdown section (md_text escapes the database's text)."""
    if part is None:
        return []
    esc = md_text if callable(md_text) else str
    lines = ["## Search", ""] + [f"- {esc(x)}" for x in part.lines] + [""]
    a = part.answer
    if a is not None and a.factors:
        lines += ["| factor | importance (optimizer) | ablation |", "|---|---|---|"]
        lines += [f"| {esc(f.factor)} | {'-' if f.importance is None else f'{f.importance:.2f}'} | {esc(f.verdict)} |" for f in a.factors]
        lines.append("")
    return lines
