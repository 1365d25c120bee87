"""The ratio of two means (b over a), its interval and its test: what every verdict reads.

The interval is Fieller's: every ratio rho for which Welch's t-test of mean_b - rho x
mean_a = 0 is not rejected. Dividing Welch's interval of b - a by mean_a, as if a's mean
were known exactly, is a little too narrow with few runs; Fieller's counts a's own
uncertainty. Its degrees of freedom are Welch-Satterthwaite's for b - a, so the interval
leaves out 1 exactly when Welch's p-value of b - a is below the level: words, interval
and p-value agree. When a's mean cannot be told from 0 at that level (its runs are that
noisy), no finite interval exists: the bounds are None ("unbounded"). The ratio of two positive
means is positive, so the interval is cut at 0 (its coverage is unchanged).

A side may be the sum over matched configurations (compare over the other parameters):
the means add, the variances of the means add, and the degrees of freedom come from
Satterthwaite over every configuration's runs. One configuration per side is plain Welch.

The array form (`ratio_arrays`) takes numpy arrays of summaries, so the regression gate
judges a whole study at once and its simulation tests judge thousands of points in
milliseconds; `ratio_test` is the scalar form for one comparison.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sst

from .stats import LEVEL


@dataclass(frozen=True)
class Part:
    """One configuration's runs on one side, summarised: N, mean and sample sd."""

    n: int
    mean: float
    sd: float


@dataclass(frozen=True)
class RatioTest:
    ratio: float  # mean_b / mean_a (sums over matched configurations)
    ci_low: float | None  # Fieller's interval of the ratio at `level`; None: unbounded
    ci_high: float | None
    p_value: float  # Welch's two-sided p-value of b - a (unadjusted)
    df: float
    se: float  # of b - a
    level: float

    @property
    def bounded(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None


def fieller(mean_a: np.ndarray, var_a: np.ndarray, mean_b: np.ndarray, var_b: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of {rho: (mean_b - rho mean_a)^2 <= q^2 (var_b + rho^2 var_a)}; NaN where unbounded.

    `var_*` are variances of the means (s^2/n)."""
    a = mean_a**2 - q**2 * var_a
    b = mean_a * mean_b
    disc = q**2 * (var_b * a + var_a * mean_b**2)
    ok = a > 0
    safe_a = np.where(ok, a, 1.0)
    root = np.sqrt(np.where(ok, np.maximum(disc, 0.0), 0.0))
    lo = np.where(ok, (b - root) / safe_a, np.nan)
    hi = np.where(ok, (b + root) / safe_a, np.nan)
    return lo, hi


def ratio_arrays(na: np.ndarray, ma: np.ndarray, sa: np.ndarray, nb: np.ndarray, mb: np.ndarray, sb: np.ndarray,
                 level: float | np.ndarray = LEVEL) -> dict[str, np.ndarray]:
    """Per element: ratio mb/ma, Fieller bounds at `level` (NaN: unbounded), Welch p, df, se."""
    na, ma, sa, nb, mb, sb = (np.asarray(x, dtype=float) for x in (na, ma, sa, nb, mb, sb))
    va, vb = sa**2 / na, sb**2 / nb
    se = np.sqrt(va + vb)
    quiet = se == 0  # identical runs on both sides: the difference is all there is
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(quiet, na + nb - 2, (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1)))
        t = np.where(quiet, 0.0, (mb - ma) / np.where(quiet, 1.0, se))
    p = np.where(quiet, np.where(mb == ma, 1.0, 0.0), 2 * sst.t.sf(np.abs(t), df))
    q = sst.t.ppf(0.5 + np.asarray(level) / 2, df)
    lo, hi = fieller(ma, va, mb, vb, q)
    lo = np.where((ma > 0) & (mb > 0), np.maximum(lo, 0.0), lo)  # two positive means: the ratio cannot be negative
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = mb / ma
    return {"ratio": ratio, "lo": lo, "hi": hi, "p": p, "df": df, "se": se, "q": q}


def ratio_test(a: Sequence[Part], b: Sequence[Part], level: float = LEVEL) -> RatioTest:
    """b over a, each side the sum over its configurations (matched one to one)."""
    if not a or len(a) != len(b):
        raise ValueError("ratio_test: one configuration per side, or the same number on each")
    if any(p.n < 2 for p in (*a, *b)):
        raise ValueError("Welch's test needs at least 2 values per configuration")
    terms = [(p.sd**2 / p.n, p.n) for p in (*a, *b)]
    ma, mb = math.fsum(p.mean for p in a), math.fsum(p.mean for p in b)
    va, vb = math.fsum(p.sd**2 / p.n for p in a), math.fsum(p.sd**2 / p.n for p in b)
    se = math.sqrt(va + vb)
    if se == 0:
        df = float(sum(n for _, n in terms) - len(terms))
        p = 1.0 if mb == ma else 0.0
    else:
        df = (va + vb) ** 2 / math.fsum(v**2 / (n - 1) for v, n in terms if v)
        p = float(2 * sst.t.sf(abs((mb - ma) / se), df))
    q = float(sst.t.ppf(0.5 + level / 2, df))
    lo, hi = fieller(np.array(ma), np.array(va), np.array(mb), np.array(vb), np.array(q))
    if ma > 0 and mb > 0:  # two positive means (throughput, seconds): the ratio cannot be negative
        lo = np.maximum(lo, 0.0)
    bounded = not (math.isnan(float(lo)) or math.isnan(float(hi)))
    return RatioTest(mb / ma, float(lo) if bounded else None, float(hi) if bounded else None, p, df, se, level)
