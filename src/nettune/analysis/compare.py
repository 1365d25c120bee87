"""Is b different from a, by how much, and could it be noise?

The change is mean_b / mean_a - 1, with Fieller's interval of the ratio (analysis/ratio.py)
and Welch's p-value of b - a: the interval leaves out 0% exactly when p is below the level,
so the words, the interval and the p-value never disagree. When several comparisons answer
one question (analyze's levels of one parameter, two sweeps compared point by point, a
summary table row by row) they are one family (analysis/policy.py): each is judged at
5%/m, its interval is simultaneous and its p-value adjusted.

"No difference shown" is never "equal": the interval says how large a difference the runs
leave possible. Equivalence is claimed only against a margin the user states (`--margin`),
by two one-sided tests: the (1 - 2 x 5%/m) interval lies inside +-margin. A p-value between
0.05 and 0.10 is called "borderline": not a verdict, a hint that more runs would settle it.

Either side may be a published summary instead of runs (N, mean, sd: `compare --a-stats`,
`--a-table`). Direction is a parameter: for throughput higher is better ("faster"), for the
elapsed time of a timed workload lower is better (lower time is still "faster").

Like with like: `--a queues=1 --b queues=2` on a study that also sweeps mult compares
queues=1 with queues=2 at each mult (matched configurations), never pooling the two mult
values as if they were repeats; sides that cannot be matched are refused, naming the
parameters that differ.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import NettuneError
from .data import Metric, PointData, StudyData, get_metric, require_values, side_values
from .metric import resolve, time_words
from .policy import ALPHA, adjusted, alpha_each, over
from .ratio import Part, ratio_test
from .serial import JsonRecord
from .stats import summarize
from .sweep import pval

BORDERLINE = 0.10  # adjusted p in [ALPHA, BORDERLINE): "borderline"


SideStats = Part  # one side of a comparison as a summary: N, mean and sample sd (in stored units)


@dataclass(frozen=True)
class Comparison(JsonRecord):
    verdict: str  # faster / slower (better / worse for metrics that are not speeds), equivalent, or inconclusive
    text: str  # "b is 12.3% faster (95% CI 9.1 to 15.4%)"
    ratio: float  # mean_b / mean_a
    ci_low: float | None  # of the ratio (simultaneous over the family); None: unbounded
    ci_high: float | None
    p_value: float  # Welch's two-sided p, adjusted over the family
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    change_pct: float  # (ratio - 1) * 100
    metric: str = ""
    higher_is_better: bool = True
    a: str = "a"
    b: str = "b"
    borderline: bool = False  # 0.05 <= adjusted p < 0.10: not significant, but close
    p_raw: float = 1.0  # Welch's p unadjusted (scipy's ttest_ind(equal_var=False))
    family: int = 1  # comparisons answering the same question (Bonferroni)
    margin_pct: float | None = None  # --margin: the equivalence margin, in %
    equivalent: bool = False  # the TOST interval lies inside +-margin
    tost_low: float | None = None  # the (1 - 2 alpha) interval of the ratio the equivalence rests on
    tost_high: float | None = None
    matched: list[str] = field(default_factory=list)  # configurations summed on each side (like with like)


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def compare_values(a: Sequence[float], b: Sequence[float], higher_is_better: bool = True, words: tuple[str, str] = ("faster", "slower"),
                   metric: str = "", labels: tuple[str, str] = ("a", "b"), family: int = 1, margin: float | None = None) -> Comparison:
    """Compare two samples of one metric; `words` are (better, worse)."""
    return compare_parts([_part(a, labels[0])], [_part(b, labels[1])], higher_is_better, words, metric, labels, family, margin)


def _part(xs: Sequence[float], name: str) -> Part:
    if len(xs) < 2:
        raise NettuneError(f"{name} has {len(xs)} counted run{'s' if len(xs) != 1 else ''}; a comparison needs at least 2 on each side "
                           "(set [repeat] runs >= 2, or min_runs)")
    s = summarize(xs)
    assert s.mean is not None and s.stdev is not None
    return Part(s.n, s.mean, s.stdev)


def compare_stats(sa: SideStats, sb: SideStats, higher_is_better: bool = True, words: tuple[str, str] = ("faster", "slower"),
                  metric: str = "", labels: tuple[str, str] = ("a", "b"), family: int = 1, margin: float | None = None) -> Comparison:
    """Compare two summaries (runs summarised, or a published table's N, mean, sd)."""
    for name, s in zip(labels, (sa, sb)):
        if s.n < 2:
            raise NettuneError(f"{name}: N={s.n}; Welch's test needs N >= 2 on each side")
        if s.sd < 0 or s.sd != s.sd:
            raise NettuneError(f"{name}: sd {s.sd} is not a standard deviation (give a value >= 0)")
    return compare_parts([sa], [sb], higher_is_better, words, metric, labels, family, margin)


def compare_parts(pa: Sequence[Part], pb: Sequence[Part], higher_is_better: bool = True, words: tuple[str, str] = ("faster", "slower"),
                  metric: str = "", labels: tuple[str, str] = ("a", "b"), family: int = 1, margin: float | None = None,
                  matched: Sequence[str] = ()) -> Comparison:
    """b against a, each side one configuration or the sum over matched ones."""
    mean_a = sum(p.mean for p in pa)
    if mean_a == 0:
        raise NettuneError(f"{labels[0]}: mean {metric or 'value'} is 0, so a relative difference is undefined")
    r = ratio_test(pa, pb, 1 - alpha_each(family))
    p = adjusted(r.p_value, family)
    rel = r.ratio - 1
    better_sign = 1 if higher_is_better else -1
    adj = over(family)
    band = f"95% CI {_band(r.ci_low, r.ci_high)}" if r.bounded else "no finite 95% interval: a's runs are too noisy"
    ci = band + (f", {adj}: {pval(p)}" if adj else "")
    tost = ratio_test(pa, pb, 1 - 2 * alpha_each(family)) if margin is not None else None
    equivalent = bool(tost and tost.bounded and margin is not None and 1 - margin <= tost.ci_low <= tost.ci_high <= 1 + margin)  # type: ignore[operator]
    significant = p < ALPHA and rel != 0
    borderline = not significant and not equivalent and p < BORDERLINE and rel != 0
    if significant:
        verdict = words[0] if rel * better_sign > 0 else words[1]
        # magnitudes in the direction named, so "faster" and "slower" both read positive
        lo, hi = sorted((abs(r.ci_low - 1), abs(r.ci_high - 1))) if r.bounded else (0.0, 0.0)  # type: ignore[operator]
        mag = f"95% CI {lo * 100:.1f} to {hi * 100:.1f}%" if r.bounded else band
        head = f"b is {abs(rel) * 100:.1f}% {verdict} ({mag}{f', {adj}: {pval(p)}' if adj else ''})"
    elif borderline:
        verdict = "inconclusive"
        leaning = words[0] if rel * better_sign > 0 else words[1]
        head = (f"borderline: b looks {abs(rel) * 100:.1f}% {leaning} ({pval(p)}{' adjusted, ' + adj if adj else ''}, between 0.05 "
                f"and 0.10; {band}): not significant, more runs would settle it")
    else:
        verdict = "equivalent" if equivalent else "inconclusive"
        head = "" if equivalent else f"no difference shown ({_pct(rel)}, {ci})"
    tail = ""
    if tost is not None and margin is not None:
        level = f"{(1 - 2 * alpha_each(family)) * 100:.4g}% CI"
        tb = _band(tost.ci_low, tost.ci_high) if tost.bounded else "unbounded"
        tail = (f"equivalent within +-{margin * 100:g}% ({_pct(rel)}, {level} {tb}: two one-sided tests)" if equivalent
                else f"not shown equivalent within +-{margin * 100:g}% (its {level} {tb} reaches beyond the margin)")
    text = "; ".join(x for x in (head, tail) if x)
    na, nb = sum(x.n for x in pa), sum(x.n for x in pb)
    # over matched configurations: the mean of their means (the ratio of these is the ratio of the sums)
    return Comparison(verdict, text, r.ratio, r.ci_low, r.ci_high, p, na, nb, mean_a / len(pa), sum(x.mean for x in pb) / len(pb), rel * 100, metric,
                      higher_is_better, labels[0], labels[1], borderline, r.p_value, family,
                      None if margin is None else margin * 100, equivalent, tost.ci_low if tost else None,
                      tost.ci_high if tost else None, list(matched))


def _band(lo: float | None, hi: float | None) -> str:
    """'9.1 to 15.4%' of a ratio interval, as changes in %."""
    assert lo is not None and hi is not None
    return f"{(lo - 1) * 100:.1f} to {(hi - 1) * 100:.1f}%"


def _words(c: Comparison, m: Metric, hib: bool) -> Comparison:
    worded: Comparison = time_words(c, hib, m.better)
    return worded


def _label(data: StudyData, filters: dict[str, str], pts: list[PointData]) -> str:
    what = ",".join(f"{k}={v}" for k, v in filters.items())
    return f"{data.name} {what}".strip()


def _config(p: PointData, keys: list[str]) -> tuple[Any, ...]:
    return tuple(p.params.get(k) for k in keys)


def match(data: StudyData, fa: dict[str, str], fb: dict[str, str], pa: list[PointData], pb: list[PointData]) -> tuple[list[str], list[tuple[PointData, PointData]]]:
    """Pair the points of a and b that agree on every independently swept parameter not
    named in --a/--b ("like with like"); a refusal names the parameters that differ."""
    def varies(k: str, pts: list[PointData]) -> bool:
        return len({str(p.params.get(k)) for p in pts}) > 1

    others = [k for k in data.axes if k not in fa and k not in fb and varies(k, pa + pb)]
    loose = [k for k in data.axes if (k in fa) != (k in fb) and varies(k, pb if k in fa else pa)]  # named on one side only
    ka = {_config(p, others): p for p in pa}
    kb = {_config(p, others): p for p in pb}
    if not loose and len(ka) == len(pa) and len(kb) == len(pb) and set(ka) == set(kb):
        return others, [(ka[k], kb[k]) for k in ka]
    differ = loose + [k for k in others if k not in loose] or [k for k in data.params if varies(k, pa) or varies(k, pb)]
    what = "; ".join(f"{k} ({', '.join(sorted({str(p.params.get(k)) for p in pa + pb}))})" for k in differ)
    example = ",".join([*(f"{k}={v}" for k, v in fa.items()), *(f"{k}={pa[0].params.get(k)}" for k in differ if k not in fa)])
    raise NettuneError(f"--a selects {len(pa)} point(s) and --b {len(pb)} that differ in {what}, and they cannot be matched one to "
                       "one: pooling them would treat different configurations as repeats; name those parameters in both --a and --b "
                       f"(e.g. --a {example})")


def compare_matched(pairs: list[tuple[PointData, PointData]], others: list[str], m: Metric, labels: tuple[str, str], hib: bool,
                    margin: float | None = None) -> tuple[Comparison, list[tuple[str, Comparison]]]:
    """The sum over matched configurations (the question asked, at 95%), and each configuration
    on its own (a family: Bonferroni over them)."""
    parts = [(_part(side_values(a, m, name_a), name_a), _part(side_values(b, m, name_b), name_b))
             for a, b in pairs for name_a, name_b in [(f"{labels[0]} at {a.label(others)}", f"{labels[1]} at {b.label(others)}")]]
    names = [a.label(others) for a, _ in pairs]
    words = (m.better, m.worse)
    overall = _words(compare_parts([x for x, _ in parts], [y for _, y in parts], hib, words, m.name, labels, 1, margin,
                                   names if len(pairs) > 1 else []), m, hib)
    if len(pairs) == 1:
        return overall, []
    each = [(n, _words(compare_parts([x], [y], hib, words, m.name, labels, len(pairs), margin), m, hib)) for n, (x, y) in zip(names, parts)]
    over_all = f"over the {len(pairs)} matched configurations ({'; '.join(names)}, each configuration's mean weighing alike)"
    text = overall.text.replace("b is ", f"{over_all}, b is ", 1) if overall.text.startswith("b is ") else f"{over_all}: {overall.text}"
    moved = {c.verdict for _, c in each if c.verdict not in ("inconclusive", "equivalent")}
    if len(moved) > 1:
        text += f"; the configurations disagree ({', '.join(sorted(moved))}), so the sum hides how b differs: read each line"
    return Comparison(**(overall.to_dict() | {"text": text})), each


def within_study(data: StudyData, fa: dict[str, str], fb: dict[str, str], metric: str = "auto",
                 higher_is_better: bool | None = None, margin: float | None = None) -> tuple[Comparison, list[tuple[str, Comparison]]]:
    """`nettune compare STUDY --a K=V --b K=V`: the answer, and each matched configuration."""
    if not fa or not fb:
        raise NettuneError("compare one study: give both --a KEY=VAL and --b KEY=VAL (or two studies)")
    m = get_metric(resolve(metric, data.engines))
    require_values(data, m)
    pa, pb = data.select(fa), data.select(fb)
    if {p.idx for p in pa} & {p.idx for p in pb}:
        raise NettuneError("--a and --b select some of the same points; make them disjoint")
    others, pairs = match(data, fa, fb, pa, pb)
    hib = m.higher_is_better if higher_is_better is None else higher_is_better
    return compare_matched(pairs, others, m, (_label(data, fa, pa), _label(data, fb, pb)), hib, margin)


def between_studies(da: StudyData, db: StudyData, fa: dict[str, str], fb: dict[str, str], metric: str = "auto",
                    higher_is_better: bool | None = None, margin: float | None = None) -> list[tuple[str, Comparison]]:
    """`nettune compare STUDY_A STUDY_B`: one comparison, or one per common point.

    Studies with one point each (or narrowed with --a/--b to one point) give one comparison.
    Two sweeps over the same points are compared point by point, one family (Bonferroni over
    the points): pooling a whole sweep would compare averages of unlike things."""
    m = get_metric(resolve(metric, da.engines | db.engines))
    require_values(da, m)
    require_values(db, m)
    hib = m.higher_is_better if higher_is_better is None else higher_is_better
    pa = da.select(fa) if fa else da.points
    pb = db.select(fb) if fb else db.points
    words = (m.better, m.worse)
    if len(pa) == 1 and len(pb) == 1:
        c = compare_values(side_values(pa[0], m, _label(da, fa, pa)), side_values(pb[0], m, _label(db, fb, pb)), hib, words, m.name, (_label(da, fa, pa), _label(db, fb, pb)), 1, margin)
        return [("", _words(c, m, hib))]
    ka = {_key(p): p for p in pa}
    kb = {_key(p): p for p in pb}
    common = [k for k in ka if k in kb]
    if not common:
        raise NettuneError(f"{da.name} and {db.name} have no point in common; pick one on each side with --a KEY=VAL --b KEY=VAL")
    out = []
    for k in common:
        label = ka[k].label()
        c = compare_values(side_values(ka[k], m, f"{da.name} {label}"), side_values(kb[k], m, f"{db.name} {label}"), hib, words, m.name, (f"{da.name} {label}", f"{db.name} {label}"),
                           len(common), margin)
        out.append((label, _words(c, m, hib)))
    return out


def _key(p: PointData) -> str:
    return "|".join(f"{k}={v}" for k, v in sorted(p.params.items()))
