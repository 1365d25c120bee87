"""Statistics every number in a report rests on: summaries, Welch's test, outliers,
and the adaptive-repeat stopping rule.

Intervals use Student's t with n-1 degrees of freedom, never 1.96: with the 3-10 runs
a study can afford, 1.96 would claim far more certainty than the data holds (t for
n=3 is 4.30). Outliers are flagged with a median-absolute-deviation rule and kept: a
reader decides whether a run was a fluke, the tool never drops it silently.
"""
from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from scipy import stats as sst

from . import intervals

if TYPE_CHECKING:  # annotations only: the statistics import neither engines nor the spec
    from ..studyfile.models import Repeat

LEVEL = 0.95
# Iglewicz & Hoaglin: a modified z-score above 3.5 marks a likely outlier.
MAD_CUTOFF = 3.5
# 0.6745 = the 75th percentile of the standard normal: turns MAD into a sigma estimate.
MAD_TO_Z = 0.6745
# When MAD is 0 (half the runs identical) fall back to the mean absolute deviation,
# scaled (sqrt(pi/2)) so it also estimates sigma for normal data.
MEANAD_SCALE = 1.253314
# A run within 3% of the median is never called an outlier: with 3-5 runs of a quiet
# benchmark the MAD is tiny and the z-score alone would flag ordinary jitter.
OUTLIER_MIN_DEV = 0.03


@dataclass(frozen=True)
class Summary:
    """N, centre, spread and the 95% t interval of one group of runs."""

    n: int
    mean: float | None = None
    median: float | None = None
    stdev: float | None = None  # sample standard deviation (n-1)
    min: float | None = None
    max: float | None = None
    cv: float | None = None  # stdev / |mean|
    ci_low: float | None = None
    ci_high: float | None = None
    half_width: float | None = None
    outliers: list[int] = field(default_factory=list)  # indices into the values given
    interval: str = "t"  # how ci_low/ci_high were made: t, log-t or bca (analysis/intervals.py)

    @property
    def margin(self) -> float | None:
        """CI half-width relative to the mean (0.03 = +-3%)."""
        if self.half_width is None or not self.mean:
            return None
        return self.half_width / abs(self.mean)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"margin": self.margin}

    def scaled(self, k: float) -> "Summary":
        """The same summary in other units (bit/s -> Gbit/s, k > 0); CV and outliers unchanged."""
        def s(v: float | None) -> float | None:
            return None if v is None else v * k

        return Summary(self.n, s(self.mean), s(self.median), s(self.stdev), s(self.min), s(self.max), self.cv,
                       s(self.ci_low), s(self.ci_high), s(self.half_width), list(self.outliers), self.interval)


def clean(values: Sequence[float | None]) -> list[float]:
    """Drop missing values (failed runs, metrics a tool does not report)."""
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def t_critical(n: int, level: float = LEVEL) -> float:
    """Two-sided Student t quantile for a mean of n values."""
    return float(sst.t.ppf(0.5 + level / 2, n - 1))


def summarize(values: Sequence[float], level: float = LEVEL, method: str = "t", signed: bool = False) -> Summary:
    """N, centre, spread and the 95% interval: Student's t, or with `method` "log-t" / "bca"
    the interval analysis/intervals.py gives skewed runs (its `choose` picks the method).

    The values are measurements, and every metric nettune stores is a quantity that cannot
    be negative (rates, times, counts, CPU, energy): an interval reaching below zero (two
    runs 11.8 and 15.6 Gbit/s give a t interval of -10.4 to 37.8) is cut at 0, which keeps
    its coverage (the mean cannot lie below 0). `signed`: values that may be negative
    (differences), left uncut."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return Summary(0)
    mean = math.fsum(xs) / n
    srt = sorted(xs)
    median = _median(srt)
    if n == 1:
        return Summary(1, mean, median, None, xs[0], xs[0])
    stdev = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    hw = t_critical(n, level) * stdev / math.sqrt(n)
    cv = stdev / abs(mean) if mean else None
    lo, hi, used = mean - hw, mean + hw, "t"
    if method != "t" and stdev > 0:
        got = (intervals.log_t_interval(xs, level) if method == intervals.LOG and srt[0] > 0
               else intervals.bca_interval(xs, level) if method == intervals.BCA and n >= intervals.BCA_MIN else None)
        if got is not None:
            (lo, hi), used = got, method
            hw = (hi - lo) / 2  # the "±" of an asymmetric interval: half its width
    if not signed and lo < 0 <= srt[0]:
        lo = 0.0
    return Summary(n, mean, median, stdev, srt[0], srt[-1], cv, lo, hi, hw, mad_outliers(xs), used)


def _median(srt: Sequence[float]) -> float:
    n = len(srt)
    return float(srt[n // 2] if n % 2 else (srt[n // 2 - 1] + srt[n // 2]) / 2)


def mad_outliers(values: Sequence[float], cutoff: float = MAD_CUTOFF) -> list[int]:
    """Indices of values whose modified z-score exceeds `cutoff`.

    Needs at least 3 values: with two, neither can be called the odd one out."""
    xs = list(values)
    if len(xs) < 3:
        return []
    med = _median(sorted(xs))
    dev = [abs(x - med) for x in xs]
    mad = _median(sorted(dev))
    if mad > 0:
        scores = [MAD_TO_Z * d / mad for d in dev]
    else:
        mean_ad = math.fsum(dev) / len(dev)
        if mean_ad == 0:
            return []
        scores = [d / (MEANAD_SCALE * mean_ad) for d in dev]
    return [i for i, (s, d) in enumerate(zip(scores, dev)) if s > cutoff and d > OUTLIER_MIN_DEV * abs(med)]


@dataclass(frozen=True)
class Welch:
    """Welch's unequal-variance t-test of mean(b) - mean(a), with its interval."""

    diff: float
    se: float
    t: float
    df: float
    p_value: float
    ci_low: float  # of the difference
    ci_high: float


def welch(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> Welch:
    """Welch's t-test; both groups need at least 2 values."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        raise ValueError("Welch's test needs at least 2 values per group")
    sa, sb = summarize(a), summarize(b)
    assert sa.mean is not None and sb.mean is not None and sa.stdev is not None and sb.stdev is not None
    return welch_stats(na, sa.mean, sa.stdev, nb, sb.mean, sb.stdev, level)


def welch_stats(na: int, mean_a: float, sd_a: float, nb: int, mean_b: float, sd_b: float, level: float = LEVEL) -> Welch:
    """Welch's t-test from summaries (N, mean, sd per side), e.g. a published table's."""
    if na < 2 or nb < 2:
        raise ValueError("Welch's test needs at least 2 values per group")
    va, vb = sd_a**2 / na, sd_b**2 / nb
    diff = mean_b - mean_a
    se = math.sqrt(va + vb)
    if se == 0:
        # identical runs on both sides: the data cannot show noise, only the difference
        df = float(na + nb - 2)
        if diff == 0:
            return Welch(0.0, 0.0, 0.0, df, 1.0, 0.0, 0.0)
        return Welch(diff, 0.0, math.copysign(math.inf, diff), df, 0.0, diff, diff)
    # Welch-Satterthwaite degrees of freedom
    df = (va + vb) ** 2 / ((va**2 / (na - 1) if va else 0.0) + (vb**2 / (nb - 1) if vb else 0.0))
    t = diff / se
    p = float(2 * sst.t.sf(abs(t), df))
    q = float(sst.t.ppf(0.5 + level / 2, df))
    return Welch(diff, se, t, df, p, diff - q * se, diff + q * se)


# -- adaptive repeats ------------------------------------------------------------------

def needs_more_runs(values: Sequence[float | None], target_margin: float, min_runs: int, max_runs: int) -> bool:
    """Should one more counted run of this point be made?

    `values` holds one entry per counted run made so far, None for a failed run (a
    failure counts as an attempt so a point that always fails stops at max_runs).
    Stop when max_runs attempts were made, or when at least min_runs runs succeeded
    and the 95% CI half-width is within target_margin of the mean."""
    if len(values) >= max_runs:
        return False
    ok = clean(values)
    if len(ok) < max(min_runs, 2):
        return True
    s = summarize(ok)
    if s.margin is None:  # mean 0: no relative margin can be reached, more runs will not help
        return False
    return s.margin > target_margin


def adaptive_rounds(repeat: Repeat, values_by_point: Mapping[int, Sequence[float | None]], round_no: int = 0) -> list[int]:
    """Point indices that need one more counted run, in the order to run them.

    `repeat` is the study's Repeat (min_runs, max_runs, target_margin, order, seed);
    `values_by_point` maps every point index to its counted results so far (None =
    failed). Empty list = the study is done. For order='shuffled' the round is
    shuffled with Random(seed + round_no) so a re-run reproduces the order."""
    margin, lo, hi = repeat.target_margin, repeat.min_runs, repeat.max_runs
    if margin is None or lo is None or hi is None:  # the model fills min/max whenever target_margin is set
        raise ValueError("adaptive_rounds needs an adaptive [repeat] (target_margin, min_runs, max_runs)")
    need = [i for i in sorted(values_by_point) if needs_more_runs(values_by_point[i], margin, lo, hi)]
    if repeat.order == "shuffled":
        random.Random(None if repeat.seed is None else repeat.seed + round_no).shuffle(need)
    return need


def study_summaries(groups: Sequence[Sequence[float]], level: float = 0.95) -> tuple[list[Summary], str, str]:
    """Every point's summary with the interval its study's runs call for, as `analyze`
    reports them: (summaries, method, why)."""
    method, why = intervals.choose([g for g in groups if g])
    return [summarize(g, level, method) for g in groups], method, why
