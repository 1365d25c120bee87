"""Change points in a series of reruns: where a study's mean stepped, and whether the
step is more than the reruns' own scatter.

The series is one value per rerun (its mean over counted runs), in time order. Two tests
per series, both exact under "the reruns are alike" and held together by the one
multiplicity policy (analysis/policy.py: Bonferroni over every test of the question):

- **A step inside the series** (E-divisive's scheme with ruptures as the detector):
  ruptures' binary segmentation (`Binseg`, cost "l2", at least MIN_SIZE reruns a side)
  places the one split of a stretch of reruns that explains most of its scatter; the split
  is judged by the largest F ratio over every split (the l2 cost a split removes over what
  is left per degree of freedom: the likelihood-ratio test of one step in a normal mean
  with unknown variance, so the search is paid for), against its distribution under "the
  reruns are alike", simulated once per length (the ratio does not depend on the reruns'
  mean or scatter). A permutation test was tried first and dropped: with 9 reruns it
  cannot go below p = 2/126, so over a few series no step was ever beyond chance. A split
  beyond chance is a change point, and each side is searched again.
- **The latest rerun alone** (a step a detector cannot place yet: one rerun after it):
  is it outside the prediction interval of the reruns since the last change point
  (Student's t, k-1 degrees of freedom, at least MIN_BEFORE of them)?

Each change point carries the step (the mean of the reruns after it minus the mean of
those before, back to the neighbouring change points) with its Welch interval on the
rerun means, at the family's simultaneous level.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sst

from .policy import alpha_each, level_each
from .stats import welch

MIN_SIZE = 2  # reruns on each side of a change point: one value has no scatter to weigh the step against
MIN_BEFORE = 3  # reruns the latest one is compared with
SIMULATIONS = 19999  # series simulated per length for the null: p resolves to 1/20000


@dataclass(frozen=True)
class Step:
    """A change point: the series steps between index `at - 1` and `at`."""

    at: int  # index of the first rerun after the step
    before: float  # mean of the rerun means back to the previous change point
    after: float  # ... and up to the next one
    n_before: int
    n_after: int
    ci_low: float  # of after - before, at the family's simultaneous level
    ci_high: float
    p_value: float  # adjusted (x m)
    kind: str = "step"  # "step" (inside the series) or "latest" (the latest rerun alone)

    @property
    def size(self) -> float:
        return self.after - self.before

    @property
    def pct(self) -> float | None:
        return self.size / abs(self.before) * 100 if self.before else None


def _ratio(x: np.ndarray) -> np.ndarray:
    """Per row of `x` (reruns in columns): the largest F ratio of one split, gain / (rss / (n-2)),
    where gain = k(n-k)/n (mean left - mean right)^2 is the l2 cost the split removes and rss
    what is left, over splits leaving MIN_SIZE a side (inf where a split leaves no scatter)."""
    n = x.shape[1]
    csum = np.cumsum(x, axis=1)
    total = csum[:, -1:]
    k = np.arange(1, n)
    left = csum[:, :-1] / k
    right = (total - csum[:, :-1]) / (n - k)
    gain = k * (n - k) / n * (left - right) ** 2
    sst = ((x - x.mean(axis=1, keepdims=True)) ** 2).sum(axis=1, keepdims=True)
    rss = np.maximum(sst - gain, 0.0)
    tiny = 1e-12 * np.maximum(sst, 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(rss > tiny, gain / (rss / (n - 2)), np.where(gain > tiny, np.inf, 0.0))
    ok = (k >= MIN_SIZE) & (n - k >= MIN_SIZE)
    best: np.ndarray = np.where(ok, f, -np.inf).max(axis=1)
    return best


_NULL: dict[int, np.ndarray] = {}


def _null(n: int) -> np.ndarray:
    """The largest split ratio of SIMULATIONS series of n alike normal reruns (sorted; seeded,
    so the same history always gives the same p-values)."""
    if n not in _NULL:
        gen = np.random.default_rng(20240 + n)
        _NULL[n] = np.sort(_ratio(gen.standard_normal((SIMULATIONS, n))))
    return _NULL[n]


def split_p(x: Sequence[float]) -> float:
    """How often alike normal reruns split as well as these do (the observed one counted)."""
    arr = np.asarray(x, dtype=float)
    observed = _ratio(arr[None, :])[0]
    null = _null(arr.size)
    hits = null.size - int(np.searchsorted(null, observed * (1 - 1e-9), side="left"))
    return (hits + 1) / (null.size + 1)


def best_split(x: Sequence[float]) -> int:
    """ruptures' one split of a stretch (index of its first value after the split)."""
    import ruptures  # noqa: PLC0415 - numpy-heavy: only history needs it

    algo = ruptures.Binseg(model="l2", min_size=MIN_SIZE, jump=1).fit(np.asarray(x, dtype=float).reshape(-1, 1))
    return int(algo.predict(n_bkps=1)[0])


def find_steps(x: Sequence[float], m: int) -> list[Step]:
    """The change points of one series, each judged at alpha/m (m: the family's tests)."""
    cuts: list[tuple[int, float]] = []
    todo = [(0, len(x))]
    while todo:
        lo, hi = todo.pop()
        if hi - lo < 2 * MIN_SIZE:
            continue
        seg = list(x[lo:hi])
        if max(seg) == min(seg):
            continue
        p = min(1.0, split_p(seg) * m)
        if p > alpha_each(1):  # p is adjusted: judged at 5%, i.e. each at 5%/m
            continue
        k = lo + best_split(seg)
        cuts.append((k, p))
        todo += [(lo, k), (k, hi)]
    cuts.sort()
    bounds = [0] + [k for k, _ in cuts] + [len(x)]
    return [_step(x, bounds[i], k, bounds[i + 2], p, m) for i, (k, p) in enumerate(cuts)]


def _step(x: Sequence[float], lo: int, at: int, hi: int, p: float, m: int, kind: str = "step") -> Step:
    a, b = list(x[lo:at]), list(x[at:hi])
    w = welch(a, b, level_each(m)) if len(a) >= 2 and len(b) >= 2 else None
    before, after = sum(a) / len(a), sum(b) / len(b)
    lo_ci, hi_ci = (w.ci_low, w.ci_high) if w is not None else (math.nan, math.nan)
    return Step(at, before, after, len(a), len(b), lo_ci, hi_ci, p, kind)


def latest_step(x: Sequence[float], since: int, m: int) -> Step | None:
    """The latest rerun, if it lies outside the prediction interval of the reruns from
    `since` (the last change point) up to it, at alpha/m; None otherwise or when fewer
    than MIN_BEFORE reruns precede it."""
    prev, new = list(x[since:-1]), x[-1]
    k = len(prev)
    if k < MIN_BEFORE:
        return None
    mean = sum(prev) / k
    sd = math.sqrt(sum((v - mean) ** 2 for v in prev) / (k - 1))
    scale = sd * math.sqrt(1 + 1 / k)
    if scale == 0:
        if new == mean:
            return None
        p = 0.0
        lo_ci = hi_ci = new - mean
    else:
        t = (new - mean) / scale
        p = float(2 * sst.t.sf(abs(t), k - 1))
        q = float(sst.t.ppf(0.5 + level_each(m) / 2, k - 1))
        lo_ci, hi_ci = new - mean - q * scale, new - mean + q * scale
    p = min(1.0, p * m)
    if p > alpha_each(1):
        return None
    return Step(len(x) - 1, mean, new, k, 1, lo_ci, hi_ci, p, "latest")
