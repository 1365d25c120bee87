"""Is b different from a, by how much, and could it be noise?

The relative difference is (mean_b - mean_a) / mean_a. Its 95% interval is Welch's
interval of the difference divided by mean_a, so the interval excludes 0 exactly when
Welch's p-value is below 0.05: the words, the interval and the p-value never disagree.
(It treats mean_a as known; with few runs the true interval of a ratio is a little
wider, which is why the p-value, not the interval, decides the verdict.)

Either side may be a published summary instead of runs (N, mean, sd: `compare --a-stats`,
`--a-table`): Welch's test needs nothing more. A p-value between 0.05 and 0.10 is called
"borderline": not a verdict, but a hint that more runs would likely settle it.

Direction is a parameter: for throughput higher is better ("faster"), for the elapsed
time of a timed workload lower is better (lower time is still "faster").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..errors import NettuneError
from .data import Metric, PointData, StudyData, get_metric
from .serial import JsonRecord
from .metric import resolve, time_words
from .stats import LEVEL, summarize, welch_stats

ALPHA = 1 - LEVEL
BORDERLINE = 0.10  # p in [ALPHA, BORDERLINE): "borderline"


@dataclass(frozen=True)
class SideStats:
    """One side of a comparison as a summary: N, mean and sample sd (in stored units)."""

    n: int
    mean: float
    sd: float


@dataclass(frozen=True)
class Comparison(JsonRecord):
    verdict: str  # faster / slower / no-difference (better / worse for metrics that are not speeds)
    text: str  # "b is 12.3% faster (95% CI 9.1 to 15.4%)"
    ratio: float  # mean_b / mean_a
    ci_low: float  # of the ratio
    ci_high: float
    p_value: float
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    change_pct: float  # (ratio - 1) * 100
    metric: str = ""
    higher_is_better: bool = True
    a: str = "a"
    b: str = "b"
    borderline: bool = False  # 0.05 <= p < 0.10: not significant, but close


def compare_values(
    a: Sequence[float],
    b: Sequence[float],
    higher_is_better: bool = True,
    words: tuple[str, str] = ("faster", "slower"),
    metric: str = "",
    labels: tuple[str, str] = ("a", "b"),
    alpha: float = ALPHA,
) -> Comparison:
    """Compare two samples of one metric; `words` are (better, worse)."""
    for name, xs in zip(labels, (a, b)):
        if len(xs) < 2:
            raise NettuneError(
                f"{name} has {len(xs)} counted run{'s' if len(xs) != 1 else ''}; a comparison needs at least 2 on each side "
                "(set [repeat] runs >= 2, or min_runs)")
    sa, sb = summarize(a), summarize(b)
    assert sa.mean is not None and sb.mean is not None and sa.stdev is not None and sb.stdev is not None
    return compare_stats(SideStats(sa.n, sa.mean, sa.stdev), SideStats(sb.n, sb.mean, sb.stdev), higher_is_better, words, metric,
                         labels, alpha)


def compare_stats(
    sa: SideStats,
    sb: SideStats,
    higher_is_better: bool = True,
    words: tuple[str, str] = ("faster", "slower"),
    metric: str = "",
    labels: tuple[str, str] = ("a", "b"),
    alpha: float = ALPHA,
) -> Comparison:
    """Compare two summaries (runs summarised, or a published table's N, mean, sd)."""
    for name, s in zip(labels, (sa, sb)):
        if s.n < 2:
            raise NettuneError(f"{name}: N={s.n}; Welch's test needs N >= 2 on each side")
        if s.sd < 0 or s.sd != s.sd:
            raise NettuneError(f"{name}: sd {s.sd} is not a standard deviation (give a value >= 0)")
    if sa.mean == 0:
        raise NettuneError(f"{labels[0]}: mean {metric or 'value'} is 0, so a relative difference is undefined")
    w = welch_stats(sa.n, sa.mean, sa.sd, sb.n, sb.mean, sb.sd, level=1 - alpha)
    base = abs(sa.mean)
    rel, lo, hi = w.diff / base, w.ci_low / base, w.ci_high / base
    better_sign = 1 if higher_is_better else -1
    if w.p_value < alpha and rel != 0:
        improved = rel * better_sign > 0
        verdict = words[0] if improved else words[1]
        # magnitudes in the direction named, so "faster" and "slower" both read positive
        m_lo, m_hi = sorted((abs(lo), abs(hi))) if lo * hi > 0 else (0.0, max(abs(lo), abs(hi)))
        text = f"b is {abs(rel) * 100:.1f}% {verdict} (95% CI {m_lo * 100:.1f} to {m_hi * 100:.1f}%)"
    else:
        verdict = "no-difference"
        text = f"no significant difference (within noise: {rel * 100:+.1f}%, CI {lo * 100:.1f} to {hi * 100:.1f}%)"
    borderline = verdict == "no-difference" and w.p_value < BORDERLINE and rel != 0
    if borderline:
        leaning = words[0] if rel * better_sign > 0 else words[1]
        text = (f"borderline: b looks {abs(rel) * 100:.1f}% {leaning} (p={w.p_value:.2f}, between 0.05 and 0.10; "
                f"CI {lo * 100:.1f} to {hi * 100:.1f}%): not significant, more runs would settle it")
    return Comparison(verdict, text, 1 + rel, 1 + lo, 1 + hi, w.p_value, sa.n, sb.n, sa.mean, sb.mean,
                      rel * 100, metric, higher_is_better, labels[0], labels[1], borderline)


def compare_points(pa: list[PointData], pb: list[PointData], metric: Metric, labels: tuple[str, str],
                   higher_is_better: bool | None = None) -> Comparison:
    """Compare the pooled counted runs of two sets of points."""
    va = [v for p in pa for v in p.values(metric)]
    vb = [v for p in pb for v in p.values(metric)]
    hib = metric.higher_is_better if higher_is_better is None else higher_is_better
    return time_words(compare_values(va, vb, hib, (metric.better, metric.worse), metric.name, labels), hib, metric.better)


def _label(data: StudyData, filters: dict[str, str], pts: list[PointData]) -> str:
    what = ",".join(f"{k}={v}" for k, v in filters.items())
    extra = f" ({len(pts)} points pooled)" if len(pts) > 1 else ""
    return f"{data.name} {what}".strip() + extra


def within_study(data: StudyData, fa: dict[str, str], fb: dict[str, str], metric: str = "auto",
                 higher_is_better: bool | None = None) -> Comparison:
    """`nettune compare STUDY --a K=V --b K=V`."""
    if not fa or not fb:
        raise NettuneError("compare one study: give both --a KEY=VAL and --b KEY=VAL (or two studies)")
    m = get_metric(resolve(metric, data.engines))
    pa, pb = data.select(fa), data.select(fb)
    if {p.idx for p in pa} & {p.idx for p in pb}:
        raise NettuneError("--a and --b select some of the same points; make them disjoint")
    return compare_points(pa, pb, m, (_label(data, fa, pa), _label(data, fb, pb)), higher_is_better)


def between_studies(da: StudyData, db: StudyData, fa: dict[str, str], fb: dict[str, str], metric: str = "auto",
                    higher_is_better: bool | None = None) -> list[tuple[str, Comparison]]:
    """`nettune compare STUDY_A STUDY_B`: one comparison, or one per common point.

    Studies with one point each (or narrowed with --a/--b) give one comparison. Two
    sweeps over the same points are compared point by point: pooling a whole sweep
    would compare averages of unlike things."""
    m = get_metric(resolve(metric, da.engines | db.engines))
    pa = da.select(fa) if fa else da.points
    pb = db.select(fb) if fb else db.points
    if len(pa) == 1 and len(pb) == 1 or (fa and fb):
        return [("", compare_points(pa, pb, m, (_label(da, fa, pa), _label(db, fb, pb)), higher_is_better))]
    ka = {_key(p): p for p in pa}
    kb = {_key(p): p for p in pb}
    common = [k for k in ka if k in kb]
    if not common:
        raise NettuneError(f"{da.name} and {db.name} have no point in common; pick one on each side with --a KEY=VAL --b KEY=VAL")
    out = []
    for k in common:
        label = ka[k].label()
        out.append((label, compare_points([ka[k]], [kb[k]], m, (f"{da.name} {label}", f"{db.name} {label}"), higher_is_better)))
    return out


def _key(p: PointData) -> str:
    return "|".join(f"{k}={v}" for k, v in sorted(p.params.items()))
