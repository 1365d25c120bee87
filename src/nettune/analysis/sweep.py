"""What one swept parameter did: the shape of the curve along it, and whether it mattered.

Along a numeric parameter (with the other swept parameters held fixed) a curve is:
  flat        no significant effect (one-way ANOVA p >= 0.05)
  peak        best inside the range, then significantly lower at the top (study D)
  declining   best at the bottom of the range, lower above it
  saturating  rises, then each doubling of the parameter adds less than `threshold`
  rising      still gaining at the top of the range: widen it
The flat-or-not test of a line is its one-way ANOVA, adjusted over every test behind the
analysis' "mattered" verdicts (analysis/policy.py, analysis/effects.py), so a curve and the
parameter's verdict never disagree. "Significantly lower" is Welch's test at the same
per-test level, asked only once the line's ANOVA found an effect. With single runs there
is no run-to-run noise: the design's (analysis/design_noise.py) stands in where there is
one, else the shape is only described, as a guess, and nothing is called flat.
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
KNEE_MIN = 0.1  # Kneedle distance below which a curve has no clear knee
ALPHA = 1 - LEVEL


def num(v: float | None) -> str:
    """A value with about three significant digits (288, 32.7, 1.34)."""
    if v is None or math.isnan(v):
        return "-"
    a = abs(v)
    return f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}"


THRESHOLDS = (0.05, 0.1)  # the levels verdicts are drawn at (policy.ALPHA, the borderline's upper end)


def pval(p: float | None) -> str:
    """p=0.23, p=0.004, p<0.001; never a threshold the value is not: 0.0502 reads
    "p=0.0502", not "p=0.05" beside "not significant"."""
    if p is None:
        return "p n/a"
    if p < 0.001:
        return "p<0.001"
    digits = 3 if p < 0.01 else 2
    text = f"{p:.{digits}f}"
    while float(text) in THRESHOLDS and p != float(text) and digits < 8:
        digits += 1
        text = f"{p:.{digits}f}"
    return f"p={text}"


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


@dataclass(frozen=True)
class LineTest:
    """How a line along a parameter is judged: its test's p-value adjusted over the family
    (None: no test, single runs without a design noise estimate), the level each test is
    judged at, the words naming the test, and single runs' design noise (log-scale sd, df)."""

    p: float | None
    alpha: float = ALPHA
    words: str = ""
    noise: tuple[float, int] | None = None


def lower(best: Sequence[float], other: Sequence[float], how: LineTest = LineTest(None)) -> tuple[bool, float | None]:
    """Is `other` really below `best`? (verdict, p or None). Welch's test with repeats; with
    single runs the design's noise (a t test of the log means on its residual df); without
    either, only the observed order (the caller words the shape as a guess)."""
    mb, mo = sum(best) / len(best), sum(other) / len(other)
    if len(best) >= 2 and len(other) >= 2:
        w = welch(best, other)
        return (w.p_value < how.alpha and mo < mb), w.p_value
    if how.noise is not None and mb > 0 and mo > 0 and how.noise[0] > 0:
        sd, df = how.noise
        p = float(2 * sst.t.sf(abs(math.log(mb / mo)) / (sd * math.sqrt(2)), df))
        return (p < how.alpha and mo < mb), p
    return mo < mb, None


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
    p_value: float | None = None  # the line's test (ANOVA across the levels), adjusted; None: not tested
    test: str = ""  # which test, and adjusted over what
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
          threshold: float = SATURATION, how: LineTest = LineTest(None)) -> Curve:
    """Shape of the metric along numeric `param` (xs ascending, one value list per x), judged
    as `how` says. With a single run at some value the shape is a guess and its words say so."""
    c = _curve(param, fixed, xs, values, unit, threshold, how)
    if c.shape != "flat" and any(len(v) < 2 for v in values):
        where = (", ".join(f"{k}={v}" for k, v in fixed.items()) + ": ") if fixed else ""
        body = c.text[len(where):]
        old, new = next(((o, n) for o, n in TENTATIVE if body.startswith(o)), ("", ""))
        if how.p is None:
            c.text = f"{where}single runs, no noise estimate: {new}{body[len(old):]}; cannot tell it from noise without repeats"
        else:
            c.text = f"{where}single runs: {new}{body[len(old):]}; repeat to confirm"
    return c


def _curve(param: str, fixed: dict[str, Any], xs: list[Any], values: list[list[float]], unit: str,
           threshold: float, how: LineTest) -> Curve:
    sums = [summarize(v) for v in values]
    means = [s.mean or 0.0 for s in sums]
    c = Curve(param, fixed, "flat", xs, means, [s.ci_low for s in sums], [s.ci_high for s in sums], [s.n for s in sums])
    where = (", ".join(f"{k}={v}" for k, v in fixed.items()) + ": ") if fixed else ""
    log_x = all(float(x) > 0 for x in xs)
    last = len(xs) - 1
    c.gains = [per_doubling(float(xs[i]), means[i], float(xs[i + 1]), means[i + 1], i, i + 1, log_x) for i in range(last)]
    k = max(range(len(xs)), key=lambda i: means[i])
    c.peak_x, c.peak = xs[k], means[k]
    c.p_value, c.test = how.p, how.words
    lo, hi = min(means), max(means)
    if how.p is not None and how.p >= ALPHA:
        c.text = (f"{where}{param}: no effect shown ({num(lo)} to {num(hi)} {unit} across {param}={xs[0]}..{xs[-1]}; "
                  f"{how.words}: {pval(how.p)})")
        return c
    top_lower, _ = lower(values[k], values[last], how) if k < last else (False, None)
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
