"""Did a swept parameter matter? Every test behind analyze's answer, as one family.

For each swept parameter, holding the other swept parameters fixed (each combination of
them is a *line* along the parameter):

  numeric, 3 or more levels   the line's one-way ANOVA (its curve: analysis/sweep.py)
  categorical or 2 levels     each level against the first one (the baseline), Welch/Fieller
  single runs everywhere      one F test of the parameter's main effect against the noise
                              the design gives (analysis/design_noise.py), when it gives one

All these tests, over every parameter, answer one question ("what mattered?"), so they are
one family (analysis/policy.py): with M tests each is judged at 5%/M and shown adjusted, and
a study of pure noise says "X mattered" at most 5% of the time. A parameter *mattered* when
one of its own tests is significant after that adjustment, so its verdict and its pairwise
comparisons and curves never disagree. A parameter with no test (single runs and no design
to estimate the noise from) "cannot be told from noise", with the runs that would settle it;
a tested one that moved nothing significantly shows "no effect shown", never "equal".

Percentages are stated as `compare` states them: the change from the first level named to
the second, mean_b / mean_a - 1 ("+35.6% from n=1 to n=3").
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .compare import Comparison, compare_values
from .data import Metric, PointData, StudyData
from .design_noise import DesignNoise
from .metric import time_words
from .policy import ALPHA, adjusted, alpha_each, over
from .repeats import FIRST_RUNS, MAX_RUNS, runs_needed
from .serial import JsonRecord
from .stats import summarize
from .sweep import LineTest, anova, num, pval

SIGNIFICANT = ("faster", "slower", "better", "worse")


@dataclass
class Line:
    """One line along a parameter: the other swept parameters held at `fixed`."""

    fixed: dict[str, Any]
    levels: list[Any]  # the parameter's levels with counted runs on this line, in sweep order
    vals: list[list[float]]  # counted values per level, in the metric's unit
    points: list[PointData]

    @property
    def curve(self) -> bool:
        return len(self.levels) >= 3 and all(_is_num(x) for x in self.levels)

    @property
    def repeated(self) -> bool:
        return all(len(v) >= 2 for v in self.vals)


@dataclass
class Effect(JsonRecord):
    """Did a parameter change the metric (across every line of the others)?"""

    param: str
    mattered: bool
    p_value: float | None  # its most significant test, adjusted over the analysis' effect tests
    spread_pct: float  # (max - min) / max of the level means, on the line where they spread most
    low: tuple[Any, float]  # (level, mean) of that line's lowest mean
    high: tuple[Any, float]
    text: str = ""
    change_pct: float | None = None  # from `first` to `second`, as compare states it
    first: Any = None  # levels in sweep order on the line quoted
    second: Any = None
    test: str = ""  # the test the verdict rests on, and the adjustment
    tested: bool = True  # False: single runs and no noise estimate: cannot tell
    summary: str = ""  # the two means quoted and the change, for the headline


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def lines(data: StudyData, param: str, m: Metric) -> tuple[list[Any], list[Line]]:
    """The parameter's levels (sorted when numeric) and its lines."""
    others = [a for a in data.axes if a != param]
    groups: dict[tuple[Any, ...], dict[Any, PointData]] = defaultdict(dict)
    for p in data.points:
        groups[tuple(p.params.get(o) for o in others)][p.params.get(param)] = p
    levels = list(dict.fromkeys(p.params.get(param) for p in data.points))
    if all(_is_num(v) for v in levels):
        levels.sort(key=lambda v: float(v) if v is not None else 0.0)  # _is_num: no None here
    out = []
    for key, by_level in groups.items():
        lv = [x for x in levels if x in by_level and by_level[x].values(m)]
        if len(lv) >= 2:
            out.append(Line(dict(zip(others, key)) if len(groups) > 1 else {}, lv,
                            [[v * m.scale for v in by_level[x].values(m)] for x in lv], [by_level[x] for x in lv]))
    return levels, out


def count_tests(param: str, ls: list[Line], design: DesignNoise | None) -> int:
    """How many tests the parameter adds to the family."""
    if design is not None and param in design.p_values:
        return 1
    n = 0
    for ln in ls:
        if ln.curve:
            n += 1 if ln.repeated else 0
        else:
            n += sum(1 for v in ln.vals[1:] if len(v) >= 2 and len(ln.vals[0]) >= 2)
    return n


def _where(fixed: dict[str, Any]) -> str:
    return (", ".join(f"{k}={v}" for k, v in fixed.items()) + ": ") if fixed else ""


def line_test(param: str, ln: Line, family: int, design: DesignNoise | None) -> LineTest:
    """How a curve line is judged: its ANOVA, the design's F test, or nothing."""
    adj = over(family, "tests")
    if design is not None and param in design.p_values and design.cv is not None:
        words = "single runs: F test against the design's noise" + (f", {adj}" if adj else "")
        return LineTest(adjusted(design.p_values[param], family), alpha_each(family), words, (design.cv, design.df))
    if ln.repeated:
        p = anova(ln.vals)
        assert p is not None
        return LineTest(adjusted(p, family), alpha_each(family), f"one-way ANOVA across {len(ln.levels)} levels" + (f", {adj}" if adj else ""))
    return LineTest(None)


def comparisons(param: str, ln: Line, m: Metric, family: int, design: bool = False) -> list[tuple[Any, Comparison | None, str]]:
    """Each level of a line against its first: (level, comparison or None, text)."""
    out: list[tuple[Any, Comparison | None, str]] = []
    base = ln.vals[0]
    for lv, v in zip(ln.levels[1:], ln.vals[1:]):
        head = f"{_where(ln.fixed)}{param}={lv} vs {param}={ln.levels[0]}: "
        if len(v) < 2 or len(base) < 2:
            change = (_mean(v) / _mean(base) - 1) * 100 if _mean(base) else 0.0
            why = f"no test of one pair; {param}'s F test against the design's noise decides" if design else "no noise estimate, no verdict"
            out.append((lv, None, head + f"{change:+.1f}% (single runs: {why})"))
            continue
        c = time_words(compare_values(base, v, m.higher_is_better, (m.better, m.worse), m.name, family=family), m.higher_is_better, m.better)
        out.append((lv, c, head + c.text))
    return out


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


def describe(param: str, ln: Line, unit: str) -> tuple[str, float | None, Any, Any, tuple[Any, float], tuple[Any, float], float, str]:
    """The line's lowest and highest means, named in sweep order, with compare's percentage."""
    means = [_mean(v) for v in ln.vals]
    lo_i = min(range(len(means)), key=lambda i: means[i])
    hi_i = max(range(len(means)), key=lambda i: means[i])
    i, j = sorted((lo_i, hi_i)) if lo_i != hi_i else (0, len(means) - 1)
    a, b = ln.levels[i], ln.levels[j]
    change = (means[j] / means[i] - 1) * 100 if means[i] else None
    pct = f" ({change:+.1f}% from {param}={a} to {param}={b})" if change is not None else ""
    short = f"{num(means[i])} -> {num(means[j])} {unit} from {param}={a} to {param}={b}" + (f", {change:+.1f}%" if change is not None else "")
    text = f"{_where(ln.fixed)}{num(means[i])} {unit} at {param}={a} vs {num(means[j])} at {param}={b}{pct}"
    spread = (means[hi_i] - means[lo_i]) / means[hi_i] * 100 if means[hi_i] else 0.0
    return text, change, a, b, (ln.levels[lo_i], means[lo_i]), (ln.levels[hi_i], means[hi_i]), spread, short


def _widest(ls: list[Line]) -> Line:
    return max(ls, key=lambda ln: abs(math.log(max(_mean(max(ln.vals, key=_mean)), 1e-300) / max(_mean(min(ln.vals, key=_mean)), 1e-300))))


def settle(ls: list[Line], data: StudyData, m: Metric, design: DesignNoise | None) -> str:
    """The runs per point that would let a line's biggest difference be told from noise."""
    ln = _widest(ls)
    means = [_mean(v) for v in ln.vals]
    top = max(abs(x) for x in means)
    diff = (max(means) - min(means)) / top if top else 0.0
    cvs = sorted(s.cv for s in (summarize(p.values(m)) for p in data.points) if s.cv is not None)
    cv = design.cv if design is not None and design.cv else (cvs[len(cvs) // 2] if cvs else None)
    if cv is None:
        return f"run each point {FIRST_RUNS} times (no point has repeats yet to measure the spread), then analyze again"
    n = runs_needed(diff, cv)
    if n is None:
        return (f"even {MAX_RUNS} runs each would likely not tell a difference this size from a {cv * 100:.1f}% spread; "
                "that does not make the levels equal")
    return f"run each point {n} times to tell a difference this size from a {cv * 100:.1f}% spread"


@dataclass
class Judged:
    """What one parameter's tests gave: curve tests per line, comparisons, and the effect."""

    tests: list[LineTest] = field(default_factory=list)  # one per curve line, in order
    compared: list[list[tuple[Any, Comparison | None, str]]] = field(default_factory=list)  # per comparison line
    effect: Effect | None = None


def judge(data: StudyData, param: str, ls: list[Line], m: Metric, family: int, design: DesignNoise | None, why_single: str) -> Judged:
    out = Judged()
    if not ls:
        return out
    out.tests = [line_test(param, ln, family, design) for ln in ls if ln.curve]
    tested = design is not None and param in design.p_values
    out.compared = [comparisons(param, ln, m, family, tested) for ln in ls if not ln.curve]
    widest = _widest(ls)
    desc, change, a, b, low, high, spread, short = describe(param, widest, m.label)
    eff = Effect(param, False, None, spread, low, high, "", change, a, b, summary=short)
    design_p = design.p_values.get(param) if design is not None else None
    curve_lines = [(ln, t) for ln, t in zip([x for x in ls if x.curve], out.tests) if t.p is not None]
    comps = [(ln, lv, c) for ln, cs in zip([x for x in ls if not x.curve], out.compared) for lv, c, _ in cs if c is not None]
    if design_p is not None and design is not None and design.cv is not None:
        p = adjusted(design_p, family)
        adj = over(family, "tests")
        eff.test = "single runs: F test against the design's noise" + (f", {adj}" if adj else "")
        eff.p_value, eff.mattered = p, p < ALPHA
        eff.text = (f"{param} mattered ({eff.test}: {pval(p)}): {desc}" if eff.mattered
                    else f"{param}: no effect shown ({eff.test}: {pval(p)}; {desc}); {settle(ls, data, m, design)}")
    elif comps:
        sig = [(ln, lv, c) for ln, lv, c in comps if c.verdict in SIGNIFICANT]
        pick = max(sig or comps, key=lambda t: abs(math.log(t[2].ratio)) if t[2].ratio > 0 else 0.0)
        ln, lv, c = pick
        eff.test = "each level against the first" + (f", {over(family, 'tests')}" if family > 1 else "")
        eff.p_value, eff.mattered = min(x[2].p_value for x in comps), bool(sig)
        eff.change_pct, eff.first, eff.second = c.change_pct, ln.levels[0], lv
        eff.summary = f"{num(c.mean_a)} -> {num(c.mean_b)} {m.label} from {param}={ln.levels[0]} to {param}={lv}, {c.change_pct:+.1f}%"
        head = f"{_where(ln.fixed)}{param}={lv} vs {param}={ln.levels[0]}: {c.text}"
        eff.text = (f"{param} mattered: {head}" if eff.mattered
                    else f"{param}: no effect shown in {len(comps)} comparison(s) with the first level; the largest: {head}")
    elif curve_lines:
        best_ln, t = min(curve_lines, key=lambda lt: lt[1].p or 1.0)
        desc, change, a, b, low, high, spread, short = describe(param, best_ln, m.label)
        eff.change_pct, eff.first, eff.second, eff.low, eff.high, eff.spread_pct, eff.summary = change, a, b, low, high, spread, short
        eff.test, eff.p_value, eff.mattered = t.words, t.p, (t.p or 1.0) < ALPHA
        eff.text = (f"{param} mattered ({t.words}: {pval(t.p)}): {desc}" if eff.mattered
                    else f"{param}: no effect shown ({t.words}: {pval(t.p)}; {desc})")
    else:
        eff.tested = False
        eff.test = "none: " + (why_single or "single runs")  # the whole reason (analyze says it once, above the effects)
        eff.text = f"{param}: cannot tell without repeats (single runs, no noise estimate): {desc}; {settle(ls, data, m, design)}"
    untested = sum(1 for ln in ls if not ln.repeated) if eff.tested and design_p is None else 0
    if untested:
        eff.text += f" ({untested} line(s) with single runs untested)"
    out.effect = eff
    return out
