"""A search's answer, from its ledger alone (so `nettune report` and `analyze` give the
same answer from the stored runs that `nettune run` printed):

- the verdict: the winner's fresh end-phase runs against the defaults measured in the same
  rounds (compare's Welch/Fieller verdict, one question: analysis/policy.py), or against
  both measurements of the defaults when they drifted;
- the drift check: the defaults at the start against the defaults at the end;
- runners-up within noise of the winner (one family: every configuration compared);
- which factors mattered: the optimizer's importances (optuna's PED-ANOVA over the
  configurations measured) beside the ablation (the winner with each factor put back to
  its default, against the winner, one family);
- for `peak`, the peak and the shape after it;
- the trace: every test in order, its configuration's mean and interval, the best so far.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..analysis.compare import Comparison, compare_values
from ..analysis.metric import time_words
from ..analysis.serial import JsonRecord
from ..errors import NettuneError
from .base import Setting, Strategy
from .ledger import YES, Ledger
from .loop import MAX_FAILED, Budget, contenders, end_configs, end_start, winner_before
from .space import Config

MIN_IMPORTANCE_TRIALS = 6
HIGH, LOW = 0.2, 0.05  # an importance read as high / low beside the ablation


@dataclass(frozen=True)
class Candidate(JsonRecord):
    label: str
    params: dict[str, Any]
    n: int
    mean: float | None
    lo: float | None
    hi: float | None
    feasible: str
    text: str = ""


@dataclass(frozen=True)
class Factor(JsonRecord):
    factor: str  # the parameter or knob
    change: str  # "streams back to 1"
    importance: float | None
    verdict: str  # mattered / hurt / not shown / cannot tell
    text: str


@dataclass(frozen=True)
class Step(JsonRecord):
    seq: int
    label: str
    role: str  # baseline, trial, end
    value: float | None
    mean: float | None
    lo: float | None
    hi: float | None
    best: str
    best_mean: float | None
    best_lo: float | None
    best_hi: float | None
    spent: float


@dataclass(frozen=True)
class Answer(JsonRecord):
    method: str
    objective: str  # what is optimised (total, total per cpu_host)
    unit: str  # what its values are shown in
    higher_is_better: bool
    scale: float
    budget: str
    spent: float
    tests: int
    switches: int
    stopped: str
    complete: bool
    baseline: Candidate
    winner: Candidate | None
    verdict: Comparison | None
    verdict_text: str
    drift: Comparison | None
    drift_text: str
    runners_up: list[Candidate] = field(default_factory=list)
    importances: dict[str, float] = field(default_factory=dict)
    factors: list[Factor] = field(default_factory=list)
    peak: str = ""
    notes: list[str] = field(default_factory=list)
    trace: list[Step] = field(default_factory=list)


def _finite(x: float) -> float | None:
    return None if x is None or math.isinf(x) or math.isnan(x) else x


def candidate(setting: Setting, ledger: Ledger, cfg: Config, before: int | None = None, since: int | None = None) -> Candidate:
    e = ledger.estimate(cfg, before=before, since=since)
    return Candidate(cfg.label(), setting.space.stored_params(cfg), e.n, e.mean, _finite(e.lo), _finite(e.hi), ledger.feasibility(cfg))


def _compare(setting: Setting, a: list[float], b: list[float], labels: tuple[str, str], family: int = 1) -> Comparison | None:
    obj = setting.objective
    try:
        c = compare_values(a, b, obj.higher_is_better, obj.words, obj.metric, labels, family)
    except NettuneError:
        return None
    return time_words(c, obj.higher_is_better, obj.words[0]) if obj.per is None else c


def _said(c: Comparison | None, who: str, why: str, plural: bool = False) -> str:
    if c is None:
        return f"cannot tell: {why}"
    are, look = ("are", "look") if plural else ("is", "looks")
    text = c.text.replace("b is ", f"{who} {are} ", 1).replace("b looks ", f"{who} {look} ", 1)
    return text if "p=" in text else f"{text}, Welch p={c.p_value:.2g}"  # the interval and its p-value, always both


def build_answer(setting: Setting, strategy: Strategy, ledger: Ledger, budget: Budget, stopped: str = "") -> Answer:
    obj, space, confirm = setting.objective, setting.space, setting.confirm
    start = end_start(ledger, space.baseline, confirm)
    before = start if start is not None else ledger.next_seq
    winner = winner_before(strategy, ledger, before, confirm, space.baseline)
    roles = dict((c, r) for r, c in end_configs(setting, winner))
    complete = start is not None and all(len(ledger.values(c, since=start)) >= confirm  # or its failures retried as often as the loop does
                                           or sum(1 for o in ledger.by.get(c, []) if o.seq >= start) >= confirm + MAX_FAILED for c in roles)
    notes: list[str] = []
    base_all = ledger.values(space.baseline)
    base_start, base_end = base_all[:confirm], ledger.values(space.baseline, since=start) if start is not None else []
    drift = _compare(setting, base_start, base_end, ("the defaults at the start", "at the end")) if len(base_end) >= 2 else None
    drifted = drift is not None and drift.verdict not in ("inconclusive", "equivalent")
    drift_text = ("not measured again (the search ended before its end phase)" if drift is None else
                  _said(drift, "at the end, the defaults", "", plural=True) + ("; the verdict compares the winner with both measurements of the "
                                                                  "defaults, so their difference widens its interval" if drifted else ""))
    verdict, verdict_text = None, ""
    win_c = None
    if winner is None:
        verdict_text = ("no configuration was shown to satisfy the constraints" if obj.constraints else "no configuration gave a value")
    else:
        fresh = ledger.values(winner, since=start) if start is not None else []
        # on the same runs as the defaults', the runners-up's and the peak's lines (the search's,
        # before the end phase): over all its runs, a winner shown at 13.65 Gbit/s had a
        # runner-up at 13.87 'no difference shown (-14.0%)' below it
        win_c = candidate(setting, ledger, winner, before=before)
        if winner == space.baseline:
            verdict_text = "the best configuration found is the defaults themselves"
        elif len(fresh) >= 2 and len(base_end) >= 2:
            verdict = _compare(setting, base_all if drifted else base_end, fresh, ("the defaults", "the winner"))
            verdict_text = _said(verdict, "the winner", "")
            if ledger.feasibility(winner) != YES:
                notes.append(f"the winner's constraints are not shown to hold over all its runs ({ledger.feasibility(winner)})")
        else:
            verdict_text = "no verdict: the search was stopped before the winner and the defaults were measured again at the end"
    runners = _runners_up(setting, strategy, ledger, winner, before)
    importances, imp_note = importances_of(setting, strategy, ledger, before)
    if imp_note:
        notes.append(imp_note)
    factors = _factors(setting, ledger, winner, start, importances) if winner is not None and winner != space.baseline else []
    switches = ledger.switches()
    if switches:
        notes.append(f"{switches} reboot(s) or domain restart(s), counted in the budget")
    return Answer(strategy.name, obj.title, obj.label, obj.higher_is_better, obj.scale, budget.text(), round(ledger.spent(), 2),
                  len(ledger.obs), switches, stopped or ("complete" if complete else "interrupted"), complete,
                  candidate(setting, ledger, space.baseline, before=before), win_c, verdict, verdict_text, drift, drift_text,
                  runners, importances, factors, peak_text(setting, strategy, ledger, winner, before), notes,
                  trace(setting, strategy, ledger, start))


def _runners_up(setting: Setting, strategy: Strategy, ledger: Ledger, winner: Config | None, before: int) -> list[Candidate]:
    """Configurations not shown to differ from the winner (the winner's search runs against
    each one's, one family over all compared), best first, at most 5."""
    if winner is None:
        return []
    mine = ledger.values(winner, before=before)
    others = [c for c in contenders(strategy, ledger, setting.space.baseline) if c != winner and ledger.n(c, before) and ledger.feasibility(c, before) == YES]
    two = [c for c in others if ledger.n(c, before) >= 2]
    out = []
    for c in others:
        cand = candidate(setting, ledger, c, before=before)
        if c in two and len(mine) >= 2:
            cmp = _compare(setting, mine, ledger.values(c, before=before), ("the winner", "it"), len(two))
            if cmp is None or cmp.verdict not in ("inconclusive", "equivalent"):
                continue
            out.append(Candidate(**(cand.to_dict() | {"text": _said(cmp, "it", "")})))
        else:
            e, w = ledger.estimate(c, before=before), ledger.estimate(winner, before=before)
            if e.mean is not None and w.mean is not None and e.lo <= w.hi and e.hi >= w.lo:
                out.append(Candidate(**(cand.to_dict() | {"text": "within noise of the winner (one run, the others' pooled noise)"})))
    higher = setting.objective.higher_is_better
    out.sort(key=lambda c: -(c.mean or 0) if higher else (c.mean or 0))
    return out[:5]


def importances_of(setting: Setting, strategy: Strategy, ledger: Ledger, before: int) -> tuple[dict[str, float], str]:
    """optuna's PED-ANOVA importances over the configurations measured (their means)."""
    from .tpe import optuna_study  # noqa: PLC0415 - optuna: only when there is something to rank

    cands = [c for c in sorted(strategy.candidates(ledger), key=ledger.first_seq) if ledger.n(c, before)]
    varying = [p.name for p in setting.space.params if len({c.get(p.name) for c in cands}) > 1]
    if len(varying) < 2:
        return {}, ""
    if len(cands) < MIN_IMPORTANCE_TRIALS:
        return {}, f"importances: {len(cands)} configurations measured, too few to rank the parameters (at least {MIN_IMPORTANCE_TRIALS})"
    import optuna  # noqa: PLC0415

    study = optuna_study(setting.space, ledger, cands, setting.objective.higher_is_better, setting.seed)
    try:
        ev = optuna.importance.PedAnovaImportanceEvaluator()
        imp = optuna.importance.get_param_importances(study, evaluator=ev, params=varying)
    except (RuntimeError, ValueError, ZeroDivisionError) as e:
        return {}, f"importances: optuna could not rank the parameters ({e})"
    return {k: round(float(v), 3) for k, v in imp.items()}, ""


def _factors(setting: Setting, ledger: Ledger, winner: Config, start: int | None, importances: dict[str, float]) -> list[Factor]:
    fresh = ledger.values(winner, since=start) if start is not None else []
    facts = setting.space.factors(winner)
    out = []
    for name, change, cfg in facts:
        imp = importances.get(name)
        vals = ledger.values(cfg, since=start) if start is not None else []
        cmp = _compare(setting, fresh, vals, ("the winner", f"with {change}"), len(facts)) if len(fresh) >= 2 and len(vals) >= 2 else None
        if cmp is None:
            verdict, text = "cannot tell", f"{change}: not measured (the end phase did not run)"
        else:
            worse = cmp.verdict == setting.objective.words[1]
            better = cmp.verdict == setting.objective.words[0]
            verdict = "mattered" if worse else ("hurt" if better else "not shown")
            said = _said(cmp, f"with {change}, it", "")
            text = f"{change}: {said}"
            if imp is not None and imp >= HIGH and verdict == "not shown":
                text += f"; the optimizer ranked {name} high ({imp:.2f}) but putting it back did not show a difference"
            elif imp is not None and imp < LOW and verdict == "mattered":
                text += f"; the optimizer ranked {name} low ({imp:.2f}): among the configurations measured it mattered little"
        if cfg == setting.space.baseline:  # the winner differs from the defaults in this factor only
            text += " (that is the defaults: the verdict above, seen from the winner)"
        out.append(Factor(name, change, imp, verdict, text))
    return out


def peak_text(setting: Setting, strategy: Strategy, ledger: Ledger, winner: Config | None, before: int) -> str:
    """peak: 'peak at streams=10, 288 Gbit/s; -22% at 12, -43% at 20' and what came before."""
    if strategy.name != "peak" or winner is None:
        return ""
    name = setting.space.spec.parameter or setting.space.params[0].name
    obj = setting.objective
    pts = sorted(((c.get(name), ledger.estimate(c, before=before)) for c in strategy.candidates(ledger) if ledger.n(c, before)),
                 key=lambda t: t[0])
    top_v = winner.get(name)
    top = ledger.estimate(winner, before=before)
    if top.mean is None:
        return ""
    head = f"peak at {name}={top_v}, {obj.show(top.mean)} {obj.label}"
    after = [(v, e) for v, e in pts if v > top_v and e.mean is not None]
    first = pts[0] if pts and pts[0][0] != top_v and pts[0][1].mean else None
    rise = f" ({(top.mean / first[1].mean - 1) * 100:+.0f}% from {name}={first[0]})" if first is not None and first[1].mean else ""
    if not after:
        return f"{head}{rise}: the largest value tried, so the peak may lie beyond it (no decline was seen)"
    shape = ", ".join(f"{(e.mean / top.mean - 1) * 100:+.0f}% at {v}" for v, e in after)
    lower = [e for _, e in after if (e.hi < top.mean if obj.higher_is_better else e.lo > top.mean)]
    tail = "" if lower else " (within noise of the peak: a plateau, not a decline)"
    return f"{head}{rise}; {shape}{tail}"


def trace(setting: Setting, strategy: Strategy, ledger: Ledger, start: int | None) -> list[Step]:
    """Every test in order: its value, its configuration's estimate and the best so far."""
    out = []
    cands = contenders(strategy, ledger, setting.space.baseline)
    for o in ledger.obs:
        upto = o.seq + 1
        e = ledger.estimate(o.config, before=upto)
        best = ledger.leader([c for c in cands if ledger.first_seq(c) < upto], before=upto)
        b = ledger.estimate(best, before=upto) if best is not None else None
        role = "baseline" if o.config == setting.space.baseline and (start is None or o.seq < start) else (
            "end" if start is not None and o.seq >= start else "trial")
        spent = sum(x.cost for x in ledger.obs[:upto])
        out.append(Step(o.seq, o.config.label(), role, o.value, e.mean, _finite(e.lo), _finite(e.hi),
                        best.label() if best is not None else "", b.mean if b else None, _finite(b.lo) if b else None,
                        _finite(b.hi) if b else None, round(spent, 3)))
    return out
