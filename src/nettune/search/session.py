"""A study's search as a plan (its space, objective, method, budget) and its stored runs
read back as a ledger, for the run (run/search_trials.py), the dry run, the report and
`nettune persist --best`."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import NettuneError, SpecError
from ..plan.run_order import COSTLY_KINDS, kind_of
from ..studyfile.load import find_line
from ..studyfile.models import Study
from ..studyfile.search_section import SearchSpec
from .answer import Answer, build_answer
from .base import Setting, Strategy
from .ledger import Ledger
from .loop import Budget, Measurer, SearchLoop, default_units, reserve_units
from .objective import Objective, Observation, Reading, objective_of, of_record
from .registry import strategy
from .space import Config, Space, build_space


@dataclass
class SearchPlan:
    setting: Setting
    strategy: Strategy
    budget: Budget
    reserve: float
    reboot_cost: float

    @property
    def space(self) -> Space:
        return self.setting.space

    @property
    def objective(self) -> Objective:
        return self.setting.objective

    def loop(self, measurer: Measurer, ledger: Ledger, say: Callable[[str], None] | None = None) -> SearchLoop:
        return SearchLoop(self.setting, self.strategy, measurer, ledger, self.budget, self.reserve, say)

    def answer(self, ledger: Ledger, stopped: str = "") -> Answer:
        return build_answer(self.setting, self.strategy, ledger, self.budget, stopped)

    def tests(self) -> float:
        """The most tests the search may run (for the progress bar and the ETA)."""
        if self.budget.units is not None:
            return self.budget.units
        return self.setting.units + self.reserve + self.setting.confirm

    def _left(self) -> str:
        """What the budget leaves the method once the defaults and the end phase are held back
        (a budget of 20 tests over 3 parameters leaves 2: said before the run, not found after)."""
        s = self.setting
        if self.budget.units is not None:
            return f"{s.units:g} test{'s' if s.units != 1 else ''}"
        return f"about {s.units:.0f} tests' time"

    def describe(self) -> list[str]:
        s, obj = self.setting, self.objective
        cons = "; constraints: " + ", ".join(c.text() for c in obj.constraints) if obj.constraints else ""
        base = s.space.baseline.label()
        return [f"search: {self.strategy.describe()}",
                f"objective: {'higher' if obj.higher_is_better else 'lower'} {obj.title} is better ({obj.label}){cons}",
                f"budget: {self.budget.text()} (the defaults {s.confirm} runs first; at the end {s.confirm} rounds of the defaults, "
                f"the winner and its ablation, up to {self.reserve:g} tests; {self._left()} left for the search itself); seed {s.seed}",
                f"defaults: {base}"]


def switching(study: Study) -> bool:
    """Does the study change knobs whose change is a reboot or a domain restart?"""
    keys = list(study.knobs.knobs()) if study.knobs is not None else []
    return any(kind_of(k) in COSTLY_KINDS for k in keys)


def plan_search(study: Study, text: str = "", file: str = "<study>", test_seconds: float | None = None) -> SearchPlan:
    """The search a study's [search] asks for; SpecError (search.budget) when its budget
    cannot hold the defaults, the end phase and one trial."""
    spec = study.search or SearchSpec()
    space = build_space(study, text, file)
    objective = objective_of(study)
    initial = study.repeat.min_counted
    confirm = max(spec.confirm, 2)
    boot = switching(study)
    probe = Setting(space, objective, spec.seed, 0.0, initial, confirm)
    reserve = reserve_units(probe, spec.reboot_cost, boot)
    per_test = test_seconds or float((space.full_duration or 10) + 1)
    seconds = spec.budget_time()
    if seconds is not None:
        units = seconds / per_test - reserve - confirm
        budget = Budget(None, seconds)
    else:
        total = float(spec.budget) if isinstance(spec.budget, int) and spec.budget > 0 else default_units(probe, reserve)
        units = total - reserve - confirm
        budget = Budget(total, None)
    if units < 1:
        need = confirm + reserve + 1
        what = f"{need:g} tests" if seconds is None else f"about {need * per_test / 60:.1f} minutes"
        raise SpecError(file, "search.budget", f"{budget.text()} cannot hold the defaults ({confirm} runs), the end phase (up to "
                        f"{reserve:g} tests: confirm = {confirm} rounds of the defaults, the winner and up to "
                        f"{space.max_factors()} ablations) and one trial: give at least {what}", find_line(text, ["search", "budget"]))
    setting = Setting(space, objective, spec.seed, units, initial, confirm)
    return SearchPlan(setting, strategy(spec.method, setting), budget, reserve, spec.reboot_cost)


def observations(plan: SearchPlan, runs: list[Any], switch_key: Callable[[Config], Any]) -> Ledger:
    """A ledger from a study's stored runs (store RunRecords), in the order they were
    stored: one observation per counted slot (its pairs' mean), warm-ups costed into the
    next; runs of points that are not this search's configurations are left out."""
    ledger = Ledger(plan.objective)
    space = plan.space
    slots: dict[tuple[int, int], list[Any]] = {}
    order: list[tuple[int, int]] = []
    warm: dict[int, float] = {}
    configs: dict[int, Config | None] = {}
    for r in sorted(runs, key=lambda r: r.id):
        if r.point_idx not in configs:
            configs[r.point_idx] = space.from_stored(r.point)
        if r.warmup:
            warm[r.point_idx] = warm.get(r.point_idx, 0.0) + 1
            continue
        key = (r.point_idx, r.run)
        if key not in slots:
            order.append(key)
        slots.setdefault(key, []).append(r)
    prev: Any = None
    for key in order:
        cfg = configs[key[0]]
        if cfg is None:
            continue
        tests = slots[key]
        metrics = Reading.of(plan.objective, tests, of_record).metrics()
        frac = (cfg.duration / space.full_duration) if cfg.duration is not None and space.full_duration else 1.0
        sk = switch_key(cfg)
        switched = int(prev is not None and sk != prev)
        prev = sk
        cost = frac * len(tests) + warm.pop(key[0], 0.0) * frac + switched * plan.reboot_cost
        seconds = sum(float(t.duration or 0) + 1.0 for t in tests)
        ledger.add(Observation(cfg, ledger.next_seq, metrics, plan.objective.value(metrics), cost, seconds, switched, key[0], key[1]))
    return ledger


def stored_study(row: dict[str, Any]) -> Study:
    """The study a stored study row was run from (NettuneError when it does not read back)."""
    from ..plan.study_file import parse_study  # noqa: PLC0415

    text = row.get("spec_text")
    if text:
        return parse_study(text, row.get("spec_file") or "<stored study>", max_points=10**9)  # it ran: no new limit
    try:
        return Study.model_validate(json.loads(row.get("spec_json") or "{}"))
    except (ValueError, TypeError) as e:
        raise NettuneError(f"study {row.get('name')!r}: its stored study file does not read back ({str(e).splitlines()[0]})") from None


def answer_of(data: Any) -> Answer | None:
    """The answer of a stored search study (analysis.data.StudyData), None when the study
    has no [search]; NettuneError when its study file does not read back."""
    row = data.study
    try:  # a dumped Study carries "search": null: only a value there is a search
        searched = bool((json.loads(row.get("spec_json") or "{}") or {}).get("search"))
    except (ValueError, TypeError, AttributeError):
        searched = False
    if not searched and "[search]" not in (row.get("spec_text") or ""):
        return None
    study = stored_study(row)
    if study.search is None:
        return None
    plan = plan_search(study, row.get("spec_text") or "", row.get("spec_file") or "<stored study>")
    keys = {}
    for p in data.points:
        cfg = plan.space.from_stored(p.params)
        if cfg is not None:
            keys[cfg] = plan.space.switch_key(plan.space.resolved(cfg, p.idx))
    ledger = observations(plan, data.runs, lambda c: keys.get(c))
    return plan.answer(ledger, "" if row.get("status") == "done" else f"the study is {row.get('status')}")
