"""`nettune analyze`: the verdict a reader wants, in words and numbers.

Where throughput saturates along each swept parameter, the peak and whether it sits
at the edge of the range, the knee, the efficiency frontier and recommended point per cost
(analysis/frontier.py), costs along each parameter (cost_curves.py), how evenly
parallel streams shared the link, which parameters mattered and which did not, and
whether the measuring tool itself was the bottleneck.
"""
from __future__ import annotations

import math
from typing import Any

from ..errors import NettuneError
from .cost_curves import cost_curve, cost_findings
from .costs import costs, display_values, stored_unit
from ..record.fields import METRIC_FIELDS
from .data import METRICS, Metric, PointData, StudyData, get_metric, require_values
from .frontier import SHARE, Frontier, frontier_findings, frontiers
from . import intervals
from .repeats import suggest
from .fairness import UNEVEN, fairness
from .groups import analyze_groups
from .stability import stability
from .instrument import verdict as instrument_verdict
from .links import analyze_pairs
from .emulation import withhold
from .energy_verdicts import energy_findings, point_energy
from .metric import resolve
from .stats import summarize
from .verdicts import (Analysis, Best, LevelComparison, NoisyPoint, ParameterResult, PointFairness,
                       PointOutliers, PointRow)
from .design_noise import DesignNoise, design_noise
from .digest import Findings, summary
from .effects import Line, count_tests, judge, lines as param_lines
from .margins import margins
from .modes import bands
from .policy import STATEMENT
from .sweep import SATURATION, curve, num

NOISY_CV = 0.10  # coefficient of variation above which a point needs more runs
CPU_SIDES = {"client": "cpu_client", "server": "cpu_server", "host": "cpu_host"}


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def point_row(p: PointData, m: Metric, params: list[str], method: str = intervals.T, data: StudyData | None = None) -> PointRow:
    """One point's summary; `method` the interval (intervals.choose), `data` to show CPU in
    its stored unit (cores when a study's runs mix units)."""
    s = summarize(p.values(m), method=method).scaled(m.scale)
    counted = p.counted
    runs = [run for run, _ in p.run_values(m)]
    row = PointRow.of({k: p.params.get(k) for k in params}, p.label(params), p.failed, m.name, m.label, s,
                      [runs[i] for i in s.outliers])
    cpu = {side: summarize(display_values(data, p, col) if data else [v for v in (METRICS[col].value(r) for r in counted) if v is not None])
           for side, col in CPU_SIDES.items()}
    row.cpu_client, row.cpu_client_ci = cpu["client"].mean, cpu["client"].half_width
    row.cpu_server, row.cpu_server_ci = cpu["server"].mean, cpu["server"].half_width
    row.cpu_host, row.cpu_host_ci = cpu["host"].mean, cpu["host"].half_width
    row.fairness = fairness(counted)
    row.energy = point_energy(p)
    return row


def analyze(data: StudyData, metric: str = "auto", threshold: float = SATURATION, share: float = SHARE, by: str | None = None) -> Analysis:
    m = get_metric(resolve(metric, data.engines))  # "auto": throughput, or a command's wall seconds
    require_values(data, m)  # counted runs, none with this metric: the real cause, not "no counted run"
    if not 0 < threshold < 1:
        raise NettuneError(f"--saturation {threshold}: give a gain per doubling between 0 and 1 (e.g. 0.1 = 10%)")
    if not 0 < share <= 1:
        raise NettuneError(f"--share {share}: give the share of the best throughput the recommended point must reach, above 0 and at most 1 (e.g. 0.8)")
    params = data.params
    method, why = intervals.choose([v for p in data.points if (v := p.values(m))])
    rows = [point_row(p, m, params, method, data) for p in data.points]
    have = [(p, r) for p, r in zip(data.points, rows) if r.n]
    if not have:
        raise NettuneError(f"{data.name}: no successful counted run to analyse ({sum(p.failed for p in data.points)} failed)")
    pick = max if m.higher_is_better else min
    bp, br = pick(have, key=lambda t: t[1].mean or 0.0)  # rows with n > 0 have a mean
    out = Analysis(data.name, data.study["id"], m.name, m.label, m.higher_is_better, threshold, params, data.axes,
                   rows, Best(br.point, br.mean, br.ci_low, br.ci_high, br.n))
    out.interval, out.interval_why, out.share, out.policy = intervals.NAMES[method], why, share, STATEMENT
    out.stored_unit, out.scale = METRIC_FIELDS[m.name].row.unit if m.name in METRIC_FIELDS else "", m.scale
    out.cpu_units = {side: stored_unit(data, col)[1] for side, col in CPU_SIDES.items()}
    findings = Findings()  # filed by section for the grouped verdicts (analysis/digest.py)
    findings.append(f"best {m.label}: {num(br.mean)}" + (f" (95% CI {num(br.ci_low)} to {num(br.ci_high)}, N={br.n})" if br.ci_low is not None else f" (N={br.n})")
                + (f" at {bp.label(params)}" if params else ""))
    if method != intervals.T:
        findings.add("noise", [f"intervals: {intervals.NAMES[method]}, not Student's t, because {why}"])
    single = all(len(p.values(m)) <= 1 for p in data.points)
    design = design_noise(data, m) if single and data.axes else None
    out.noise = design
    if design is not None:
        findings.add("noise", [f"single runs: noise estimated from {design.method}: about {design.cv * 100:.1f}% per run; the effect "
                        "tests below use it" if design.cv is not None else
                        f"single runs: {design.why_not}: no effect can be told from noise without repeats"])
    plans = {param: param_lines(data, param, m)[1] for param in data.axes}
    usable = design if design is not None and design.cv is not None else None
    out.effect_tests = sum(count_tests(param, ls, usable) for param, ls in plans.items())
    if out.effect_tests:
        findings.add("noise", [f"policy: {STATEMENT}; here {out.effect_tests} test(s) decide what mattered"])
    cost_family = sum(1 for ls in plans.values() for ln in ls if ln.curve for c in costs(data)
                      if (cc := cost_curve("", ln.fixed, ln.levels, ln.points, c, data)) and cc.p_value is not None)
    for param in data.axes:
        res = _parameter(data, param, plans[param], m, threshold, out.effect_tests, usable, design.why_not if design else "", cost_family)
        out.parameters.append(res)
        findings += [c.text for c in res.curves] + [c.text for c in res.comparisons]
        findings.add("cost", cost_findings(res.cost_curves))
        if res.effect:
            findings.append(res.effect.text)
    if not data.axes:
        findings.append("one point only: nothing swept, so no saturation or peak to find")
    out.efficiency = efficiency(data, params, share)
    findings.add("cost", frontier_findings(out.efficiency))
    findings.add("cost", energy_findings(data, m, params))  # joules per run, Gbit/s per watt, idle power
    peaks = [(res.name, c.fixed, c.x, c.x.index(c.peak_x)) for res in out.parameters for c in res.curves if c.shape in ("peak", "declining")]
    out.repeats = suggest(data, m, params, peaks, usable.cv if usable is not None else None)
    findings.add("noise", [r.text for r in out.repeats])
    out.fairness = [PointFairness.of(r, r.fairness) for r in rows if r.fairness]
    findings += _fairness_text(out.fairness)
    inst = instrument_verdict(data, params, bp.idx)  # computed once: findings and headline say the same
    out.instrument = inst.findings
    findings += out.instrument
    out.outliers = [PointOutliers(r.point, r.outlier_runs) for r in rows if r.outlier_runs]
    for r in rows:
        if r.outlier_runs:
            findings.add("noise", [f"outlier run(s) {', '.join(str(x + 1) for x in r.outlier_runs)} at {r.label} "
                            f"(median {num(r.median)} {m.label}): flagged by the MAD rule, kept in every number"])
    out.bands = bands(data, m, params)  # two regimes under one mean (analysis/modes.py)
    for b in out.bands:
        row = next(r for r in rows if r.point == {k: b.point.get(k) for k in params})
        row.bands = ", ".join(f"{num(x.mean)} ({x.runs} runs)" for x in b.bands)
    findings.add("noise", [b.text for b in out.bands])
    out.margins, said, margin_line = margins(data, params)  # adaptive repeats: target_margin per point
    findings.add("noise", said)
    noisy = [(r, r.cv) for r in rows if r.cv is not None and r.cv > NOISY_CV]
    out.noisy = [NoisyPoint(r.point, cv) for r, cv in noisy]
    if noisy:
        worst, worst_cv = max(noisy, key=lambda t: t[1])
        advice = ("more runs will narrow the intervals only slowly: make the runs steadier" if out.margins
                  else "add runs, or set [repeat] target_margin")
        findings.add("noise", [f"{len(noisy)} point(s) are noisy (coefficient of variation above {NOISY_CV * 100:.0f}%, worst "
                        f"{worst_cv * 100:.0f}% at {worst.label}): {advice}"])
    if any(p.has_pairs for p in data.points):  # links are not repeats: each pair on its own
        out.pairs = analyze_pairs(data, m, params)
        findings += out.pairs.findings
    out.stability, said = stability(data, params)  # per run, from its intervals
    findings.add("noise", said)
    if by is not None:  # verdicts per group: each group's own knob effects and how they differ
        out.groups = analyze_groups(data, by, m)
        findings += [f"by {by}: {f}" if not f.startswith("  ") else f for f in out.groups.findings]
    out.findings, out.sections = list(findings), findings.grouped(out.instrument)
    out.headline = headline(out, bp.label(params) if params else "", inst.headline()) + margin_line
    if out.groups is not None:
        out.headline += [i.text for i in out.groups.interactions if i.depends]
    if out.pairs is not None and out.pairs.spread:  # a link unlike the others is what a reader needs first
        out.headline.append(out.pairs.spread[0].text)
    out = withhold(out, data.facts)  # an emulated CPU (VM lab under TCG): no performance verdicts
    out.summary = summary(out)  # the five lines a report and a run open with
    return out


def headline(out: Analysis, where: str, instrument: list[str]) -> list[str]:
    """The two or three lines a reader needs first: the best point, and what limited it
    (the instrument's verdict on it, analysis/instrument.py, else the parameter that
    mattered most), and whether it is settled."""
    best, unit = out.best, out.unit
    ci = f" (95% CI {num(best.ci_low)} to {num(best.ci_high)}, N={best.n})" if best.ci_low is not None else f" (N={best.n}, single run)"
    lines = [f"best: {num(best.mean)} {unit}{' at ' + where if where else ''}{ci}"] + instrument
    if not any(line.startswith("bottleneck:") for line in instrument):
        effects = [p.effect for p in out.parameters if p.effect and p.effect.mattered and p.effect.change_pct is not None]
        if effects:
            e = max(effects, key=lambda e: abs(math.log1p(e.change_pct / 100)) if e.change_pct > -100 else math.inf)  # type: ignore[operator]
            lines.append(f"mattered most: {e.param} ({e.summary})")
    if best.n < 2:
        closest = f"; closest call: {out.repeats[0].text}" if out.repeats else ""
        noise = (f"the noise (about {out.noise.cv * 100:.1f}%) is estimated from the design only"
                 if out.noise is not None and out.noise.cv is not None else "no noise estimate yet")
        lines.append(f"single runs: {noise}; set [repeat] runs = 3 (or target_margin) before trusting a difference" + closest)
    return lines


def _parameter(data: StudyData, param: str, ls: list[Line], m: Metric, threshold: float, family: int,
               design: DesignNoise | None, why_single: str, cost_family: int) -> ParameterResult:
    levels, _ = param_lines(data, param, m)
    numeric = all(_is_num(v) for v in levels)
    res = ParameterResult(param, "numeric" if numeric else "categorical", levels)
    judged = judge(data, param, ls, m, family, design, why_single)
    tests = iter(judged.tests)
    compared = iter(judged.compared)
    for ln in ls:
        if ln.curve:
            how = next(tests)
            if m.higher_is_better:
                res.curves.append(curve(param, ln.fixed, ln.levels, ln.vals, m.label, threshold, how))
            res.cost_curves += [cc for c in costs(data) if (cc := cost_curve(param, ln.fixed, ln.levels, ln.points, c, data, cost_family))]
        else:
            res.comparisons += [LevelComparison(param, lv, ln.levels[0], ln.fixed, c, text) for lv, c, text in next(compared)]
    res.effect = judged.effect
    return res


def efficiency(data: StudyData, params: list[str], share: float = SHARE) -> list[Frontier]:
    """The throughput-vs-cost frontier and recommended point per cost (analysis/frontier.py)."""
    return frontiers(data, params, share)


def _fairness_text(fair: list[PointFairness]) -> list[str]:
    if not fair:
        return []
    uneven = [f for f in fair if f.jain_min < UNEVEN]
    worst = min(fair, key=lambda f: f.jain_min)
    span = f"slowest stream {num(worst.slowest_gbps)}, fastest {num(worst.fastest_gbps)} Gbit/s"
    if not uneven:
        return [f"parallel streams shared fairly (Jain's index >= {UNEVEN} everywhere; least fair {worst.label}: "
                f"{worst.jain_min:.2f}, {span})"]
    return [f"parallel streams were uneven at {len(uneven)} point(s): worst {worst.label} with Jain's index "
            f"{worst.jain_min:.2f} ({span})"]


__all__ = ["analyze", "efficiency", "headline"]
