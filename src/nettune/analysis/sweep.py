"""What one swept parameter did: the shape of the curve along it, and whether it mattered.

Along a numeric parameter (with the other swept parameters held fixed) a curve is:
  flat        no significant effect (one-way ANOVA p >= 0.05)
  peak        best inside the range, then significantly lower at the top (study D)
  declining   best at the bottom of the range, lower above it
  saturating  rises, then each doubling of the parameter adds less than `threshold`
  rising      still gaining at the top of the range: widen it
"Significantly lower" uses Welch's test when both points have >= 2 runs; with single
runs there is no noise estimate, so a difference under NOISE_NO_REPEATS counts as noise.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

from scipy import stats as sst

from .serial import JsonRecord
from .stats import LEVEL, summarize, welch

SATURATION = 0.10  # gain per doubling below which more of a parameter "buys nothing"
NOISE_NO_REPEATS = 0.05  # relative difference treated as noise when points have single runs
KNEE_MIN = 0.1  # Kneedle distance below which a curve has no clear knee
ALPHA = 1 - LEVEL


def num(v: float | None) -> str:
    """A value with about three significant digits (288, 32.7, 1.34)."""
    if v is None or math.isnan(v):
        return "-"
    a = abs(v)
    return f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}"


def pval(p: float | None) -> str:
    if p is None:
        return "p n/a"
    return "p<0.001" if p < 0.001 else f"p={p:.3f}" if p < 0.01 else f"p={p:.2f}"


def anova(groups: Sequence[Sequence[float]]) -> float | None:
    """One-way ANOVA p-value across levels; None without repeats to estimate noise."""
    gs = [list(g) for g in groups if len(g) > 0]
    if len(gs) < 2 or any(len(g) < 2 for g in gs):
        return None
    within = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in gs)
    if within == 0:  # identical repeats: any difference in means is real
        means = {round(sum(g) / len(g), 12) for g in gs}
        return 1.0 if len(means) == 1 else 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(sst.f_oneway(*gs).pvalue)
    if p != p:  # repeats identical up to float rounding (0.432 stored as 0.43200000000000005): no noise to test against
        means = {float(f"{sum(g) / len(g):.9g}") for g in gs}
        return 1.0 if len(means) == 1 else 0.0
    return p


def lower(best: Sequence[float], other: Sequence[float]) -> tuple[bool, float | None]:
    """Is `other` really below `best`? (verdict, Welch p or None)."""
    mb, mo = sum(best) / len(best), sum(other) / len(other)
    if len(best) >= 2 and len(other) >= 2:
        w = welch(best, other)
        return (w.p_value < ALPHA and mo < mb), w.p_value
    return (mb > 0 and (mb - mo) / mb > NOISE_NO_REPEATS), None


def per_doubling(x0: float, y0: float, x1: float, y1: float, i0: int, i1: int, log_x: bool) -> float:
    """Relative gain per doubling of x (per step when x is not all positive)."""
    if y0 <= 0 or y1 <= 0:
        return math.inf if y1 > y0 else 0.0
    steps = math.log2(x1 / x0) if log_x else float(i1 - i0)
    return (y1 / y0) ** (1 / steps) - 1 if steps > 0 else 0.0


@dataclass
class Curve(JsonRecord):
    param: str
    fixed: dict[str, Any]  # the other swept parameters, held at these values
    shape: str
    x: list[Any]
    mean: list[float]
    ci_low: list[float | None]
    ci_high: list[float | None]
    n: list[int]
    p_value: float | None = None  # ANOVA across the levels
    peak_x: Any = None
    peak: float | None = None
    peak_at_edge: bool = False
    saturation_x: Any = None
    saturation: float | None = None
    knee_x: Any = None
    knee: float | None = None
    gains: list[float] = field(default_factory=list)  # per doubling, between neighbours
    decline_pct: float | None = None  # peak -> top of range
    text: str = ""


# single runs: the shape's words as a guess ("single runs: looks like a peak; repeat to confirm")
TENTATIVE = [("peak at ", "looks like a peak at "), ("best at the lowest", "looks best at the lowest"),
             ("saturates at ", "looks like it saturates at "), ("more ", "looks like more "), ("still rising", "looks still rising")]


def curve(param: str, fixed: dict[str, Any], xs: list[Any], values: list[list[float]], unit: str,
          threshold: float = SATURATION) -> Curve:
    """Shape of the metric along numeric `param` (xs ascending, one value list per x).
    With a single run at some value the shape is a guess and its words say so."""
    c = _curve(param, fixed, xs, values, unit, threshold)
    if c.shape != "flat" and any(len(v) < 2 for v in values):
        where = (", ".join(f"{k}={v}" for k, v in fixed.items()) + ": ") if fixed else ""
        body = c.text[len(where):]
        old, new = next(((o, n) for o, n in TENTATIVE if body.startswith(o)), ("", ""))
        c.text = f"{where}single runs: {new}{body[len(old):]}; repeat to confirm"
    return c


def _curve(param: str, fixed: dict[str, Any], xs: list[Any], values: list[list[float]], unit: str,
           threshold: float = SATURATION) -> Curve:
    sums = [summarize(v) for v in values]
    means = [s.mean or 0.0 for s in sums]
    c = Curve(param, fixed, "flat", xs, means, [s.ci_low for s in sums], [s.ci_high for s in sums], [s.n for s in sums])
    where = (", ".join(f"{k}={v}" for k, v in fixed.items()) + ": ") if fixed else ""
    log_x = all(float(x) > 0 for x in xs)
    last = len(xs) - 1
    c.gains = [per_doubling(float(xs[i]), means[i], float(xs[i + 1]), means[i + 1], i, i + 1, log_x) for i in range(last)]
    k = max(range(len(xs)), key=lambda i: means[i])
    c.peak_x, c.peak = xs[k], means[k]
    c.p_value = anova(values)
    lo, hi = min(means), max(means)
    if (c.p_value is not None and c.p_value >= ALPHA) or (c.p_value is None and hi > 0 and (hi - lo) / hi < NOISE_NO_REPEATS):
        c.text = (f"{where}{param} made no measurable difference: {num(lo)} to {num(hi)} {unit} across "
                  f"{param}={xs[0]}..{xs[-1]} ({pval(c.p_value) if c.p_value is not None else 'within noise, single runs'})")
        return c
    top_lower, _ = lower(values[k], values[last]) if k < last else (False, None)
    if k < last and top_lower:
        c.decline_pct = (means[last] / means[k] - 1) * 100 if means[k] else None
        if k == 0:
            c.shape, c.peak_at_edge = "declining", True
            c.text = (f"{where}best at the lowest {param} tested ({param}={xs[0]}: {num(means[0])} {unit}); it falls to "
                      f"{num(means[last])} at {param}={xs[last]} ({c.decline_pct:+.0f}%): more {param} hurts; try lower values")
        else:
            c.shape = "peak"
            c.text = (f"{where}peak at {param}={xs[k]} ({num(means[k])} {unit}), then a decline to {num(means[last])} at "
                      f"{param}={xs[last]} ({c.decline_pct:+.0f}%): more {param} is not better; use {param}={xs[k]}")
        _knee(c, xs[: k + 1], means[: k + 1], log_x, unit)
        return c
    # rising or saturating: find where the gain per doubling stays under the threshold for good
    sat = next((i for i in range(last) if all(
        per_doubling(float(xs[i]), means[i], float(xs[j]), means[j], i, j, log_x) < threshold for j in range(i + 1, last + 1))), None)
    if sat is None:
        c.shape, c.peak_at_edge = "rising", k == last
        g = c.gains[-1] * 100 if c.gains else 0.0
        c.text = (f"{where}still rising at the top of the range ({param}={xs[last]}: {num(means[last])} {unit}, "
                  f"{g:+.0f}% per {'doubling' if log_x else 'step'} over the last step): widen the range of {param}")
    else:
        c.shape = "saturating"
        c.saturation_x, c.saturation = xs[sat], means[sat]
        step = "doubling" if log_x else "step"
        if sat == 0:
            c.text = (f"{where}more {param} adds little: each {step} from {param}={xs[0]} adds less than "
                      f"{threshold * 100:.0f}% ({num(means[0])} to {num(means[last])} {unit} at {param}={xs[last]})")
            return c
        c.text = (f"{where}saturates at {param}={xs[sat]} ({num(means[sat])} {unit}): beyond it each "
                  f"{'doubling' if log_x else 'step'} adds less than {threshold * 100:.0f}% (peak {num(means[k])} at {param}={xs[k]})")
    _knee(c, xs[: k + 1], means[: k + 1], log_x, unit)
    return c


def _knee(c: Curve, xs: list[Any], ys: list[float], log_x: bool, unit: str) -> None:
    """Kneedle: the point of the rising part farthest above the chord from its start to its peak."""
    if len(xs) < 3 or ys[-1] <= ys[0]:
        return
    tx = [math.log2(float(x)) if log_x else float(x) for x in xs]
    xn = [(t - tx[0]) / (tx[-1] - tx[0]) for t in tx]
    yn = [(y - ys[0]) / (ys[-1] - ys[0]) for y in ys]
    d = [b - a for a, b in zip(xn, yn)]
    i = max(range(1, len(xs) - 1), key=lambda j: d[j])
    if d[i] < KNEE_MIN:
        return
    c.knee_x, c.knee = xs[i], ys[i]
    c.text += f"; knee at {c.param}={xs[i]} ({num(ys[i])} {unit}, {ys[i] / ys[-1] * 100:.0f}% of the peak)"


@dataclass
class Effect(JsonRecord):
    """Did a parameter change the metric at all (across every group of the others)?"""

    param: str
    mattered: bool
    p_value: float | None  # Bonferroni-adjusted over groups
    spread_pct: float  # (max - min) / max of the level means, largest over groups
    low: tuple[Any, float]  # (level, mean) of the group with the largest spread
    high: tuple[Any, float]
    text: str = ""


def effect(param: str, groups: list[tuple[list[Any], list[list[float]]]], unit: str) -> Effect | None:
    """`groups`: for each combination of the other parameters, (levels, values per level)."""
    ps, best = [], None
    for levels, values in groups:
        vals = [(lv, v) for lv, v in zip(levels, values) if v]
        if len(vals) < 2:
            continue
        p = anova([v for _, v in vals])
        if p is not None:
            ps.append(p)
        means = [(lv, sum(v) / len(v)) for lv, v in vals]
        lo, hi = min(means, key=lambda t: t[1]), max(means, key=lambda t: t[1])
        spread = (hi[1] - lo[1]) / hi[1] * 100 if hi[1] else 0.0
        if best is None or spread > best[0]:
            best = (spread, lo, hi)
    if best is None:
        return None
    spread, lo, hi = best
    p_adj = min(1.0, min(ps) * len(ps)) if ps else None
    mattered = p_adj < ALPHA if p_adj is not None else spread / 100 >= NOISE_NO_REPEATS
    how = pval(p_adj) if p_adj is not None else "single runs: judged by size alone"
    if mattered:
        text = (f"{param} mattered: {num(lo[1])} {unit} at {param}={lo[0]} vs {num(hi[1])} at {param}={hi[0]} "
                f"({spread:.0f}% apart, {how})")
    else:
        text = f"{param} changed nothing measurable (its values are within {spread:.1f}% of each other, {how})"
    return Effect(param, mattered, p_adj, spread, lo, hi, text)
