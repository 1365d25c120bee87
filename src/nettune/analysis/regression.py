"""`nettune check`: did anything get worse since the baseline? (CI, "did the kernel update hurt?")

Each point of the rerun is compared with the same point of the baseline (same parameters;
over host pairs, each pair on its own): the ratio rerun / baseline of their counted runs'
means, with Fieller's interval (analysis/ratio.py). The gate asks one question of every
point, so the points are one family (analysis/policy.py): with m points tested, each
interval is a simultaneous 95% interval (each at 1 - 5%/m) and the p-values are adjusted.
The verdict is read off that interval against the tolerance T:

  regressed         the whole interval is worse than T      (fails the gate)
  improved          the whole interval is better than T
  within-tolerance  the whole interval lies inside +-T      (an equivalence, two one-sided tests)
  not-worse         no worse than T, but it may have improved beyond it
  inconclusive      the interval reaches beyond -T and inside it: the runs cannot tell
                    (fails the gate under --strict)

So the chance that an unchanged study fails is at most 5%, however many points it has.
Per point the *detectable change* is the smallest change beyond the tolerance that the gate
would call "regressed" 80% of the time with these runs and this noise; when the noise is
larger than the tolerance the result says so, with the runs per point that would let an
unchanged point read "within tolerance". A point with fewer than 2 counted runs on a side
has no noise estimate ("untested"); a point whose every rerun test failed while the
baseline measured it "failed" (a regression).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sst

from ..errors import NettuneError
from .data import Metric, StudyData, get_metric, require_values
from .metric import resolve
from .policy import STATEMENT, adjusted, level_each
from .ratio import ratio_arrays
from .serial import JsonRecord
from .sweep import num

Key = tuple[str, str | None]  # (the point's parameters as JSON, the pair or None)
Sample = tuple[dict[str, Any], str, list[float], int]  # parameters, label, counted values, failed tests
POWER = 0.80  # of the detectable change and of the runs suggested
MAX_RUNS = 1000
# exit statuses (docs/analysis.md): 2 is every error, as for every nettune command
PASS, REGRESSED, ERROR, INCONCLUSIVE = 0, 1, 2, 3
FAILING = ("regressed", "failed")
UNSETTLED = ("inconclusive", "untested")  # what --strict fails on


@dataclass
class CheckPoint(JsonRecord):
    point: dict[str, Any]
    pair: str | None
    label: str
    n_before: int
    n_after: int
    before: float | None  # mean, in the metric's unit
    after: float | None
    change_pct: float | None  # (after / before - 1) * 100
    ci_low_pct: float | None  # simultaneous 95% interval of the change (None: unbounded or untested)
    ci_high_pct: float | None
    p_value: float | None  # Welch's p of "no change", adjusted over the points tested (x m, at most 1)
    p_raw: float | None  # the same, unadjusted (reproduces scipy's ttest_ind(equal_var=False))
    detectable_pct: float | None  # smallest change beyond the tolerance caught 80% of the time
    cv: float | None  # the noise: the larger coefficient of variation of the two sides
    verdict: str  # regressed, failed, improved, within-tolerance, not-worse, inconclusive, untested, missing
    text: str


@dataclass
class CheckResult(JsonRecord):
    baseline: str
    rerun: str
    metric: str
    unit: str
    higher_is_better: bool
    tolerance_pct: float
    strict: bool = False
    policy: str = ""  # the multiplicity policy, in words
    tested: int = 0  # points tested: the family every interval and p-value is adjusted over
    level_each: float = 0.95  # confidence level of each point's interval
    points: list[CheckPoint] = field(default_factory=list)
    regressed: list[dict[str, Any]] = field(default_factory=list)  # {point, pair, label} of each point that got worse
    improved: list[dict[str, Any]] = field(default_factory=list)
    inconclusive: list[dict[str, Any]] = field(default_factory=list)  # inconclusive and untested points
    noise_cv: float | None = None  # median noise of the points tested
    detectable_pct: float | None = None  # median detectable change
    runs_needed: int | None = None  # per point and side, for an unchanged point to read within the tolerance
    warnings: list[str] = field(default_factory=list)
    verdict: str = "pass"  # pass or fail

    @property
    def exit_code(self) -> int:
        if self.regressed:
            return REGRESSED
        return INCONCLUSIVE if self.strict and self.inconclusive else PASS


def parse_tolerance(text: str, opt: str = "--tolerance") -> float:
    """'5%' or '5' -> 5.0 (percent), between 0 and 100 (also `compare --margin`)."""
    t = text.strip().removesuffix("%").strip()
    try:
        v = float(t)
    except ValueError:
        raise NettuneError(f"{opt} {text!r}: give a percentage, e.g. {opt} 5%") from None
    if not 0 <= v < 100:
        raise NettuneError(f"{opt} {text!r}: give a percentage from 0 to below 100, e.g. 5%")
    return v


def samples(data: StudyData, m: Metric) -> dict[Key, Sample]:
    """Counted values (in the metric's unit) and failed tests per point, per pair over host pairs."""
    out: dict[Key, Sample] = {}
    for p in data.points:
        key = json.dumps(p.params, sort_keys=True, default=str)
        label = p.label()
        if p.has_pairs:
            runs = p.by_pair()
            for r in p.runs:  # a pair whose every test failed has no counted run
                if r.pair is not None and not r.warmup:
                    runs.setdefault(r.pair, [])
            for pair, rs in runs.items():
                vals = [v * m.scale for v in (m.value(r) for r in rs) if v is not None]
                failed = sum(1 for r in p.runs if r.pair == pair and not r.ok and not r.warmup)
                out[(key, pair)] = (p.params, f"{label} {pair}" if p.params else pair, vals, failed)
        else:
            out[(key, None)] = (p.params, label, [v * m.scale for v in p.values(m)], p.failed)
    return out


def testable(data: StudyData, metric: str = "auto") -> int:
    """How many points (pairs) of a study have 2 counted runs or more: a baseline with none
    cannot be tested, which check says before it reruns anything."""
    m = get_metric(resolve(metric, data.engines))
    require_values(data, m)  # counted runs, none with this metric: the real cause
    return sum(1 for _, _, vals, _ in samples(data, m).values() if len(vals) >= 2)


def gate_arrays(before: tuple[np.ndarray, np.ndarray, np.ndarray], after: tuple[np.ndarray, np.ndarray, np.ndarray],
                higher_is_better: bool, tolerance: float, family: int) -> dict[str, np.ndarray]:
    """The gate on summaries: (n, mean, sd) arrays per side, any shape; `family` the points
    tested. Returns the verdict per element and the numbers it rests on (as fractions)."""
    (nb, mb, sb), (na, ma, sa) = before, after
    r = ratio_arrays(nb, mb, sb, na, ma, sa, level_each(family))
    lo, hi = r["lo"] - 1, r["hi"] - 1  # the interval of the relative change
    if not higher_is_better:  # worse is up: flip so that "worse" is always below 0
        lo, hi = -hi, -lo
    bounded = ~(np.isnan(lo) | np.isnan(hi))
    verdict = np.full(np.shape(lo), "inconclusive", dtype=object)
    verdict[bounded & (lo >= -tolerance)] = "not-worse"
    verdict[bounded & (lo >= -tolerance) & (hi <= tolerance)] = "within-tolerance"
    verdict[bounded & (lo > tolerance)] = "improved"
    verdict[bounded & (hi < -tolerance)] = "regressed"
    with np.errstate(divide="ignore", invalid="ignore"):
        se_rel = r["se"] / np.abs(np.asarray(mb, dtype=float))
        cv = np.maximum(np.asarray(sb, dtype=float) / np.abs(mb), np.asarray(sa, dtype=float) / np.abs(ma))
    detectable = tolerance + (r["q"] + sst.t.ppf(POWER, r["df"])) * se_rel
    return {"verdict": verdict, "lo": r["lo"] - 1, "hi": r["hi"] - 1, "p": r["p"], "detectable": detectable, "cv": cv}


def runs_needed(cv: float, tolerance: float, family: int) -> int | None:
    """Counted runs per side for an unchanged point, at this noise, to read "within the
    tolerance" 80% of the time (its simultaneous interval inside +-tolerance); None past 1000."""
    if tolerance <= 0 or not math.isfinite(cv):
        return None
    n = np.arange(2, MAX_RUNS + 1)
    df = 2 * n - 2
    half = (sst.t.ppf(1 - (1 - level_each(family)) / 2, df) + sst.t.ppf(POWER, df)) * cv * np.sqrt(2 / n)
    ok = np.nonzero(half <= tolerance)[0]
    return int(n[ok[0]]) if ok.size else None


def check(baseline: StudyData, rerun: StudyData, metric: str = "auto", tolerance_pct: float = 5.0, strict: bool = False) -> CheckResult:
    m = get_metric(resolve(metric, baseline.engines | rerun.engines))  # "auto": throughput, or a command's wall seconds
    require_values(baseline, m)
    require_values(rerun, m)
    before, after = samples(baseline, m), samples(rerun, m)
    common = [k for k in after if k in before]
    if not common:
        raise NettuneError(f"{rerun.name} and the baseline {baseline.name} have no point in common (same parameters"
                           f"{' and pairs' if any(k[1] for k in after) else ''}); check the baseline is a run of this study")
    res = CheckResult(f"{baseline.name} (#{baseline.study['id']})", f"{rerun.name} (#{rerun.study['id']})", m.name, m.label,
                      m.higher_is_better, tolerance_pct, strict, STATEMENT)
    keys = list(after) + [k for k in before if k not in after]
    tested = [k for k in common if len(before[k][2]) >= 2 and len(after[k][2]) >= 2 and _mean(before[k][2])]
    res.tested, res.level_each = len(tested), level_each(len(tested))
    if not tested and not any(not after[k][2] and after[k][3] and before[k][2] for k in common):
        raise NettuneError("no point has 2 counted runs on both sides, so no change can be told from noise; "
                           "set [repeat] runs >= 2 in the study (and in its baseline)")
    judged = _judge(before, after, tested, m.higher_is_better, tolerance_pct / 100)
    for key in keys:
        res.points.append(judged.get(key) or _unjudged(key, before, after, m))
    for c in res.points:
        c.text = c.text or _text(c, m, tolerance_pct, res.tested)
    res.regressed = [ref(c) for c in res.points if c.verdict in FAILING]
    res.improved = [ref(c) for c in res.points if c.verdict == "improved"]
    res.inconclusive = [ref(c) for c in res.points if c.verdict in UNSETTLED]
    _noise(res)
    res.verdict = "fail" if res.exit_code else "pass"
    return res


def ref(c: CheckPoint) -> dict[str, Any]:
    """A point as the lists of the result name it: parameters, pair and label, each a field."""
    return {"point": c.point, "pair": c.pair, "label": c.label}


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


def _sd(xs: list[float]) -> float:
    mu = _mean(xs)
    return math.sqrt(math.fsum((x - mu) ** 2 for x in xs) / (len(xs) - 1))


def _judge(before: dict[Key, Sample], after: dict[Key, Sample], tested: list[Key], hib: bool, tol: float) -> dict[Key, CheckPoint]:
    if not tested:
        return {}
    def side(s: dict[Key, Sample]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        vals = [s[k][2] for k in tested]
        return np.array([len(v) for v in vals]), np.array([_mean(v) for v in vals]), np.array([_sd(v) for v in vals])

    g = gate_arrays(side(before), side(after), hib, tol, len(tested))

    def pct(x: float) -> float | None:
        return None if math.isnan(x) else x * 100
    out = {}
    for i, k in enumerate(tested):
        params, label, va, _ = after[k]
        vb = before[k][2]
        out[k] = CheckPoint(params, k[1], label, len(vb), len(va), _mean(vb), _mean(va), (_mean(va) / _mean(vb) - 1) * 100,
                            pct(float(g["lo"][i])), pct(float(g["hi"][i])), adjusted(float(g["p"][i]), len(tested)),
                            float(g["p"][i]), float(g["detectable"][i]) * 100, float(g["cv"][i]), str(g["verdict"][i]), "")
    return out


def _unjudged(key: Key, before: dict[Key, Sample], after: dict[Key, Sample], m: Metric) -> CheckPoint:
    params, label, _, _ = after.get(key) or before[key]
    va = after[key][2] if key in after else []
    vb = before[key][2] if key in before else []
    failed = after[key][3] if key in after else 0
    mb, ma = (_mean(vb) if vb else None), (_mean(va) if va else None)
    change = (ma / mb - 1) * 100 if ma is not None and mb else None
    verdict = "failed" if vb and not va and failed else "missing" if not vb or not va else "untested"
    text = f"{label}: every rerun test failed ({failed}); the baseline measured {num(mb)} {m.label}" if verdict == "failed" else ""
    return CheckPoint(params, key[1], label, len(vb), len(va), mb, ma, change, None, None, None, None, None, None, verdict, text)


def _text(c: CheckPoint, m: Metric, tol: float, family: int) -> str:
    if c.verdict == "missing":
        return f"{c.label}: only in the {'rerun' if c.n_after else 'baseline'}"
    if c.verdict == "untested":
        what = f"{num(c.before)} -> {num(c.after)} {m.label} ({c.change_pct:+.1f}%)" if c.change_pct is not None else "no mean"
        return f"{c.label}: {what}: fewer than 2 counted runs on a side, so no noise estimate and no verdict"
    ci = (f"{c.ci_low_pct:+.1f} to {c.ci_high_pct:+.1f}%" if c.ci_low_pct is not None and c.ci_high_pct is not None
          else "unbounded: the baseline's runs are too noisy")
    words = {"regressed": f"{m.worse} beyond the {tol:g}% tolerance", "improved": f"{m.better} beyond the {tol:g}% tolerance",
             "within-tolerance": f"within +-{tol:g}%", "not-worse": f"no worse than {tol:g}% (it may have improved beyond it)",
             "inconclusive": f"inconclusive: the interval reaches beyond -{tol:g}% and inside it"}[c.verdict]
    interval = "95% CI" if family <= 1 else f"simultaneous 95% CI over {family} points"
    return (f"{c.label}: {num(c.before)} -> {num(c.after)} {m.label} ({c.change_pct:+.1f}%, {interval} {ci}, "
            f"p={c.p_value:.3g}{' adjusted' if family > 1 else ''}): {words}")


def _noise(res: CheckResult) -> None:
    """The study's noise against the tolerance: median CV, detectable change, runs needed."""
    judged = [c for c in res.points if c.cv is not None and c.detectable_pct is not None and math.isfinite(c.cv)]
    if not judged:
        return
    res.noise_cv = float(np.median([c.cv for c in judged]))
    res.detectable_pct = float(np.median([c.detectable_pct for c in judged]))
    tol = res.tolerance_pct / 100
    res.runs_needed = runs_needed(res.noise_cv, tol, res.tested)
    n_now = min(min(c.n_before, c.n_after) for c in judged)
    if res.noise_cv > tol:
        need = (f"about {res.runs_needed} counted runs per point on each side" if res.runs_needed
                else f"more than {MAX_RUNS} runs per point")
        res.warnings.append(f"the noise (median CV {res.noise_cv * 100:.1f}%) is larger than the tolerance ({res.tolerance_pct:g}%): "
                            f"with {n_now} runs this gate only catches changes beyond about {res.detectable_pct:.0f}%, and an "
                            f"unchanged point reads inconclusive; {need} would let it read within +-{res.tolerance_pct:g}%")
