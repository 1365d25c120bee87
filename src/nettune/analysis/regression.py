"""`nettune check`: did anything get worse since the baseline? (CI, "did the kernel update hurt?")

Each point of the rerun is compared with the same point of the baseline (same parameters;
over host pairs, each pair on its own) with Welch's test on their counted runs. A point
*regressed* when it is significantly worse (p < 0.05) by more than the tolerance; it
*improved* when significantly better by more than the tolerance. A significant change
within the tolerance is reported as such and never fails the check; neither does a point
with fewer than 2 runs on a side (no noise estimate: "untested"), but a check in which no
point could be tested at all is an error, as is one with no point in common. A point whose
every rerun test failed (the baseline measured it) got worse than any tolerance: "failed",
counted as a regression.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import NettuneError
from .compare import ALPHA, compare_values
from .data import Metric, StudyData, get_metric
from .metric import resolve
from .serial import JsonRecord
from .sweep import num

Key = tuple[str, str | None]  # (the point's parameters as JSON, the pair or None)
Sample = tuple[dict[str, Any], str, list[float], int]  # parameters, label, counted values, failed tests


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
    p_value: float | None
    verdict: str  # regressed, failed, improved, within-tolerance, unchanged, untested, missing
    text: str


@dataclass
class CheckResult(JsonRecord):
    baseline: str
    rerun: str
    metric: str
    unit: str
    higher_is_better: bool
    tolerance_pct: float
    points: list[CheckPoint] = field(default_factory=list)
    regressed: list[str] = field(default_factory=list)  # labels of the points that got worse
    improved: list[str] = field(default_factory=list)
    verdict: str = "pass"  # pass or fail

    @property
    def exit_code(self) -> int:
        return 1 if self.regressed else 0


def parse_tolerance(text: str) -> float:
    """'5%' or '5' -> 5.0 (percent), between 0 and 100."""
    t = text.strip().removesuffix("%").strip()
    try:
        v = float(t)
    except ValueError:
        raise NettuneError(f"--tolerance {text!r}: give a percentage, e.g. --tolerance 5%") from None
    if not 0 <= v < 100:
        raise NettuneError(f"--tolerance {text!r}: give a percentage from 0 to below 100, e.g. 5%")
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


def check(baseline: StudyData, rerun: StudyData, metric: str = "auto", tolerance_pct: float = 5.0) -> CheckResult:
    m = get_metric(resolve(metric, baseline.engines | rerun.engines))  # "auto": throughput, or a command's wall seconds
    before, after = samples(baseline, m), samples(rerun, m)
    common = [k for k in after if k in before]
    if not common:
        raise NettuneError(f"{rerun.name} and the baseline {baseline.name} have no point in common (same parameters"
                           f"{' and pairs' if any(k[1] for k in after) else ''}); check the baseline is a run of this study")
    res = CheckResult(f"{baseline.name} (#{baseline.study['id']})", f"{rerun.name} (#{rerun.study['id']})", m.name, m.label,
                      m.higher_is_better, tolerance_pct)
    tol = tolerance_pct / 100
    for key in list(after) + [k for k in before if k not in after]:
        params, label, _, _ = after.get(key) or before[key]
        va = after[key][2] if key in after else []
        vb = before[key][2] if key in before else []
        failed = after[key][3] if key in after else 0
        res.points.append(_point(params, key[1], label, vb, va, m, tol, failed))
    res.regressed = [c.label for c in res.points if c.verdict in ("regressed", "failed")]
    res.improved = [c.label for c in res.points if c.verdict == "improved"]
    if all(c.verdict in ("untested", "missing") for c in res.points):  # (a failed point is a verdict)
        raise NettuneError("no point has 2 counted runs on both sides, so no change can be told from noise; "
                           "set [repeat] runs >= 2 in the study (and in its baseline)")
    res.verdict = "fail" if res.regressed else "pass"
    return res


def _point(params: dict[str, Any], pair: str | None, label: str, vb: list[float], va: list[float], m: Metric, tol: float,
           failed: int = 0) -> CheckPoint:
    mean_b = sum(vb) / len(vb) if vb else None
    mean_a = sum(va) / len(va) if va else None
    change = (mean_a / mean_b - 1) * 100 if mean_a is not None and mean_b else None
    base = CheckPoint(params, pair, label, len(vb), len(va), mean_b, mean_a, change, None, "untested", "")
    if vb and not va and failed:
        base.verdict = "failed"
        base.text = f"{label}: every rerun test failed ({failed}); the baseline measured {num(mean_b)} {m.label}"
        return base
    if not vb or not va:
        base.verdict = "missing"
        base.text = f"{label}: only in the {'rerun' if va else 'baseline'}"
        return base
    if len(vb) < 2 or len(va) < 2 or not mean_b:
        base.text = f"{label}: {num(mean_b)} -> {num(mean_a)} {m.label} ({change:+.1f}%): fewer than 2 runs on a side, no test" if change is not None else f"{label}: no test"
        return base
    c = compare_values(vb, va, m.higher_is_better, (m.better, m.worse), m.name, ("baseline", "rerun"))
    base.p_value = c.p_value
    rel = c.change_pct / 100
    better = rel > 0 if m.higher_is_better else rel < 0
    significant = c.p_value < ALPHA and rel != 0
    if significant and abs(rel) > tol:
        base.verdict = "improved" if better else "regressed"
    elif significant:
        base.verdict = "within-tolerance"
    else:
        base.verdict = "unchanged"
    words = {"regressed": f"{m.worse}", "improved": f"{m.better}", "within-tolerance": "changed within the tolerance",
             "unchanged": "no significant change"}[base.verdict]
    base.text = f"{label}: {num(mean_b)} -> {num(mean_a)} {m.label} ({c.change_pct:+.1f}%, Welch p={c.p_value:.3g}): {words}"
    return base
