"""Is a run's throughput steady over time? A verdict per run from its stored intervals.

Study B ran 600 s tests with a report every 5 s: a mean over ten minutes hides a link that
fell back after two. For each counted run with enough intervals (main direction, omitted
ones left out):

- the coefficient of variation of the interval rates;
- the trend: least-squares slope over the run (scipy.stats.linregress), as % of the mean
  per minute, with its p-value;
- a step: the split into a before and an after that explains the most variance (each side
  at least MIN_SIDE intervals); it counts when Welch's test says the two sides differ
  (p < 0.05) and they are at least STEP apart: "throughput fell 30% after 120 s".

Verdict: "fell X% after T s" / "rose X% after T s" (a step), else "drifting X%/min" (a
significant trend worth DRIFT of the mean over the run), else "noisy" (CV above NOISY),
else "steady".

"Significant" follows the one multiplicity policy (analysis/policy.py): the question "did
this run step or drift?" is asked of every run with its two tests, so each test is judged
at 5% / (2 x the runs tested), and a step's Welch test, asked of the best of the possible
splits, also pays for the splits it chose among (Bonferroni over them): a study of 36 steady
runs would otherwise report one or two steps by luck.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from scipy import stats as sst

from .data import StudyData
from .policy import alpha_each
from .serial import JsonRecord
from .stats import LEVEL, welch

MIN_INTERVALS = 4
MIN_SIDE = 2
STEP = 0.15  # a before/after difference smaller than 15% of the higher side is not called a step
DRIFT = 0.10  # a trend must move the mean by 10% over the run to be called drifting
NOISY = 0.10  # coefficient of variation of the intervals
ALPHA = 1 - LEVEL


@dataclass
class RunStability(JsonRecord):
    point: dict[str, Any]
    label: str
    run: int  # 0-based run number
    pair: str | None
    intervals: int
    interval_s: float | None  # median interval length
    mean_gbps: float
    cv: float | None
    trend_pct_per_min: float | None
    trend_p: float | None
    step_at_s: float | None
    step_pct: float | None  # after vs before, %
    step_p: float | None
    verdict: str  # steady, noisy, drifting, fell, rose
    text: str


def _series(run: Any) -> list[tuple[float, float, float]]:
    """(start, end, bps) of the main direction's non-omitted intervals, in time order."""
    ivs = [i for i in run.intervals if i.get("direction", "forward") == "forward" and not i.get("omitted")]
    return sorted((float(i["start"]), float(i["end"]), float(i["bps"])) for i in ivs)


def _step(ys: list[float]) -> tuple[int, float] | None:
    """(k, p): the split ys[:k] | ys[k:] with the least within-side variance, and Welch's p."""
    n = len(ys)
    best: tuple[float, int] | None = None
    for k in range(MIN_SIDE, n - MIN_SIDE + 1):
        a, b = ys[:k], ys[k:]
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        sse = sum((y - ma) ** 2 for y in a) + sum((y - mb) ** 2 for y in b)
        if best is None or sse < best[0]:
            best = (sse, k)
    if best is None:
        return None
    k = best[1]
    return k, welch(ys[:k], ys[k:]).p_value


def run_stability(run: Any, point: dict[str, Any], label: str, alpha: float = ALPHA) -> RunStability | None:
    """One run's verdict; `alpha` the level each of its tests is judged at (the family's)."""
    s = _series(run)
    if len(s) < MIN_INTERVALS:
        return None
    ts = [(a + b) / 2 for a, b, _ in s]
    ys = [y for _, _, y in s]
    mean = sum(ys) / len(ys)
    lengths = sorted(b - a for a, b, _ in s)
    step_len = lengths[len(lengths) // 2]
    sd = math.sqrt(sum((y - mean) ** 2 for y in ys) / (len(ys) - 1))
    cv = sd / mean if mean else None
    out = RunStability(point, label, run.run, run.pair, len(ys), step_len, mean / 1e9, cv, None, None, None, None, None, "steady", "")
    if mean <= 0:
        out.verdict, out.text = "noisy", "no traffic in its intervals"
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if len(set(ts)) > 1 and sd > 0:
            lr = sst.linregress(ts, ys)
            out.trend_pct_per_min, out.trend_p = float(lr.slope) * 60 / mean * 100, float(lr.pvalue)
    found = _step(ys)
    if found is not None:
        k, p = found
        before, after = sum(ys[:k]) / k, sum(ys[k:]) / (len(ys) - k)
        change = after / before - 1 if before else 0.0
        splits = len(ys) - 2 * MIN_SIDE + 1  # the split was chosen as the best of these
        if p < alpha / splits and abs(after - before) >= STEP * max(before, after):
            out.step_at_s, out.step_pct, out.step_p = s[k][0], change * 100, p
            out.verdict = "fell" if change < 0 else "rose"
            out.text = f"throughput {out.verdict} {abs(change) * 100:.0f}% after {s[k][0]:.0f} s ({before / 1e9:.2f} -> {after / 1e9:.2f} Gbit/s)"
            return out
    span_min = (s[-1][1] - s[0][0]) / 60
    if out.trend_p is not None and out.trend_p < alpha and abs(out.trend_pct_per_min or 0) * span_min >= DRIFT * 100:
        out.verdict = "drifting"
        out.text = f"drifting {out.trend_pct_per_min:+.1f}% per minute over {s[-1][1]:.0f} s"
    elif cv is not None and cv > NOISY:
        out.verdict, out.text = "noisy", f"noisy: intervals vary {cv * 100:.0f}% (coefficient of variation), no step or trend"
    else:
        out.text = f"steady: intervals within {(cv or 0) * 100:.1f}% (coefficient of variation), no step or trend"
    return out


def stability(data: StudyData, params: list[str]) -> tuple[list[RunStability], list[str]]:
    """A verdict per counted run with at least MIN_INTERVALS intervals, and the findings."""
    rows: list[RunStability] = []
    tested = sum(1 for p in data.points for r in p.counted if len(_series(r)) >= MIN_INTERVALS)
    alpha = alpha_each(2 * tested)  # a step and a trend per run tested: one family
    for p in data.points:
        label = p.label(params)
        for r in p.counted:
            one = run_stability(r, {k: p.params.get(k) for k in params}, label, alpha)
            if one is not None:
                rows.append(one)
    if not rows:
        return rows, []
    moved = [r for r in rows if r.verdict in ("fell", "rose", "drifting")]
    steady = sum(r.verdict == "steady" for r in rows)
    iv = sorted(r.interval_s for r in rows if r.interval_s)
    head = (f"stability over each run ({len(rows)} runs, intervals of {iv[len(iv) // 2]:g} s): {steady} steady, "
            f"{sum(r.verdict == 'noisy' for r in rows)} noisy, {len(moved)} with a step or a trend")
    lines = [head]
    for moved_run in moved[:10]:
        lines.append(f"run {moved_run.run}{' ' + moved_run.pair if moved_run.pair else ''} at {moved_run.label}: {moved_run.text}")
    if len(moved) > 10:
        lines.append(f"... and {len(moved) - 10} more runs with a step or a trend (analyze --format json: stability)")
    return rows, lines
