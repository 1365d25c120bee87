"""Which repeats would settle the closest calls of an analysis.

A verdict rests on a few comparisons: the best point against the runner-up, and along
each curve the peak against its neighbours. When such a pair is not yet settled (single
runs, or Welch's p >= 0.05; a hint, not a verdict, so unadjusted), nettune names it and says how many runs each side needs for
Welch's test to tell the observed difference from noise (80% power at the 5% level), with
the spread taken from the points themselves, else from similar points (the other points
with repeats, those sharing all but one parameter first), else it says there is none yet.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy import stats as sst

from .data import Metric, PointData, StudyData
from .serial import JsonRecord
from .stats import summarize, welch
from .sweep import ALPHA, num

POWER = 0.80
MAX_RUNS = 30  # beyond this, the difference is noise at the spread seen: no suggestion of more runs
FIRST_RUNS = 3  # without any spread to go by
MAX_CALLS = 3


@dataclass
class RepeatSuggestion(JsonRecord):
    points: list[dict[str, Any]]
    labels: list[str]
    why: str  # "best vs runner-up", "peak vs neighbour"
    diff_pct: float
    runs: int | None  # counted runs each point should have; None: more than MAX_RUNS would not settle it
    cv: float | None  # the spread it was computed from
    cv_from: str
    text: str


def runs_needed(diff: float, cv: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Runs per side for a two-sided Welch test (equal spreads) to see a relative
    difference `diff` with `power`; None if more than MAX_RUNS."""
    if cv <= 0:
        return 2
    for n in range(2, MAX_RUNS + 1):
        df = 2 * n - 2
        nc = diff / (cv * math.sqrt(2 / n))
        crit = float(sst.t.ppf(1 - alpha / 2, df))
        if float(sst.nct.sf(crit, df, nc)) >= power:
            return n
    return None


def _spread(data: StudyData, pair: list[PointData], m: Metric, design_cv: float | None = None) -> tuple[float | None, str]:
    own = [s.cv for s in (summarize(p.values(m)) for p in pair) if s.cv is not None]
    if own:
        return max(own), "these points' own runs"
    if design_cv:
        return design_cv, "the noise the single-run design leaves over"
    near = [p for p in data.points if p not in pair and any(_neighbours(p, q) for q in pair)]
    for group, what in ((near, "similar points (all but one parameter the same)"), (data.points, "the other points")):
        cvs = sorted(s.cv for s in (summarize(p.values(m)) for p in group) if s.cv is not None)
        if cvs:
            return cvs[len(cvs) // 2], f"the median of {len(cvs)} {what} with repeats"
    return None, "no point has repeats yet"


def _neighbours(a: PointData, b: PointData) -> bool:
    return sum(a.params.get(k) != v for k, v in b.params.items()) == 1  # type: ignore[no-any-return]  # params hold JSON values


def _settled(a: PointData, b: PointData, m: Metric) -> bool:
    va, vb = a.values(m), b.values(m)
    return len(va) >= 2 and len(vb) >= 2 and welch(va, vb).p_value < ALPHA


def calls(data: StudyData, m: Metric, curves: list[tuple[str, dict[str, Any], list[Any], int]]) -> list[tuple[PointData, PointData, str]]:
    """The pairs a verdict rests on: best vs runner-up, each peak vs its neighbours."""
    have = [p for p in data.points if p.values(m)]
    ranked = sorted(have, key=lambda p: summarize(p.values(m)).mean or 0.0, reverse=m.higher_is_better)
    out = [(ranked[0], ranked[1], "best vs runner-up")] if len(ranked) >= 2 else []
    for param, fixed, xs, k in curves:
        row = {x: p for p in data.points if all(p.params.get(f) == v for f, v in fixed.items()) for x in [p.params.get(param)]}
        for j in (k - 1, k + 1):
            if 0 <= j < len(xs) and xs[k] in row and xs[j] in row:
                out.append((row[xs[k]], row[xs[j]], f"peak vs neighbour along {param}"))
    seen, uniq = set(), []
    for a, b, why in out:
        key = frozenset((a.idx, b.idx))
        if key not in seen:
            seen.add(key)
            uniq.append((a, b, why))
    return uniq


def suggest(data: StudyData, m: Metric, params: list[str], curves: list[tuple[str, dict[str, Any], list[Any], int]],
            design_cv: float | None = None) -> list[RepeatSuggestion]:
    out = []
    for a, b, why in calls(data, m, curves):
        if _settled(a, b, m):
            continue
        ma, mb = (summarize(p.values(m)).mean or 0.0 for p in (a, b))
        top = max(abs(ma), abs(mb))
        diff = abs(ma - mb) / top if top else 0.0
        cv, cv_from = _spread(data, [a, b], m, design_cv)
        n = FIRST_RUNS if cv is None else runs_needed(diff, cv)
        la, lb = a.label(params), b.label(params)
        head = f"to settle {la} vs {lb} ({why}, {diff * 100:.1f}% apart)"
        if cv is None:
            text = f"{head}: run each {FIRST_RUNS} times ({cv_from} to measure the spread), then analyze again"
        elif n is None:
            text = (f"{head}: small against a {cv * 100:.1f}% spread ({cv_from}); even {MAX_RUNS} runs each would likely not "
                    "tell them apart, which does not make them equal (only an interval inside a stated margin would: "
                    "`nettune compare --margin`)")
        else:
            text = f"{head}: run each {n} times (for a {cv * 100:.1f}% spread, {cv_from}; mean {num(ma * m.scale)} vs {num(mb * m.scale)} {m.label})"
        out.append(RepeatSuggestion([a.params, b.params], [la, lb], why, diff * 100, n, cv, cv_from, text))
    out.sort(key=lambda s: s.diff_pct)
    return out[:MAX_CALLS]
