"""Adaptive repeats: did each point reach the study's `target_margin`, and if not, why?

`[repeat] target_margin` asks for runs until each point's 95% interval (Student's t, the
stopping rule of analysis/stats.py) is within that fraction of its mean, up to `max_runs`.
A point that stopped at `max_runs` short of it stopped because its runs spread too much:
nettune says which points, the margin each reached, their spread (CV) and the runs the
margin would take at that spread, instead of advising a setting that is already set.
The metric is the stopping rule's: the study's primary metric (analysis/metric.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy import stats as sst

from .data import StudyData, get_metric
from .metric import resolve
from .serial import JsonRecord
from .stats import summarize

MAX_SUGGESTED = 10000


@dataclass
class MarginPoint(JsonRecord):
    point: dict[str, Any]
    label: str
    n: int  # counted runs
    margin: float | None  # the 95% half-width / mean reached (0.05 = +-5%)
    reached: bool
    cv: float | None
    runs_needed: int | None  # counted runs the target would take at this spread (None: over 10000)


def runs_for_margin(cv: float, target: float) -> int | None:
    """Smallest n with t(0.975, n-1) x cv / sqrt(n) <= target."""
    if cv <= 0:
        return 2
    n = max(2, math.ceil((1.96 * cv / target) ** 2))  # the normal answer: t only makes it larger
    while n <= MAX_SUGGESTED:
        if float(sst.t.ppf(0.975, n - 1)) * cv / math.sqrt(n) <= target:
            return n
        n += 1
    return None


def margins(data: StudyData, params: list[str]) -> tuple[list[MarginPoint], list[str], list[str]]:
    """Per point, whether target_margin was reached; the findings and the headline line.
    Nothing for a study without adaptive repeats."""
    rep = data.spec().get("repeat") or {}
    target = rep.get("target_margin")
    if not target:
        return [], [], []
    m = get_metric(resolve("auto", data.engines))
    out = []
    for p in data.points:
        s = summarize(p.values(m))
        reached = s.margin is not None and s.margin <= target
        need = None if reached or s.cv is None else runs_for_margin(s.cv, target)
        out.append(MarginPoint(p.params, p.label(params), s.n, s.margin, reached, s.cv, need))
    short = [x for x in out if not x.reached]
    pct = f"+-{target * 100:g}%"
    if not short:
        lo, hi = min(x.n for x in out), max(x.n for x in out)
        line = f"target_margin {pct} reached at every point ({lo}{'-' + str(hi) if hi != lo else ''} counted runs)"
        return out, [line], []
    max_runs = rep.get("max_runs")
    each = "; ".join(f"{x.label}: " + (f"{x.margin * 100:+.0f}%".replace("+", "+-") if x.margin is not None else "no interval")
                     + f" after {x.n} runs" for x in short)
    cvs = [x.cv for x in short if x.cv is not None]
    needs = [x.runs_needed for x in short if x.runs_needed is not None]
    why = (f"their runs spread too much (CV {_span(cvs)})" if cvs else "too few runs succeeded to tell the spread")
    took = (f"; {pct} would take about {_span(needs, pct=False)} counted runs each at that spread" if needs else "")
    stop = f" (max_runs = {max_runs})" if max_runs else ""
    lead = f"target_margin {pct} not reached at {len(short)} of {len(out)} point(s){stop}"
    findings = [f"{lead}: {each}; {why}{took}: raise max_runs, or make the runs steadier (pinning, a quieter host)"]
    headline = [f"{lead}: {each}; {why}"]
    return out, findings, headline


def _span(xs: list[Any], pct: bool = True) -> str:
    lo, hi = min(xs), max(xs)
    def f(v: Any) -> str:
        return f"{v * 100:.0f}%" if pct else f"{v}"
    return f(lo) if f(lo) == f(hi) else f"{f(lo)}-{f(hi)}"
