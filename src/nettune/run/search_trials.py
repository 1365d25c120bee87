"""A study's [search] run through the study's own slots (docs/search.md).

The search (search/) decides what to measure; this is its Measurer on a real target:
each configuration becomes a point of the study (a grid point keeps its sweep index, a
configuration off the grid, such as the defaults or an ablation, gets the next free one),
is brought into force by the same PointRunner as any point (knobs journaled first, the
boot-time ones with one reboot), and each measurement is one counted slot stored at once.
So a kill -9 leaves nothing the journal does not know, and `--resume` reads the stored
slots back into the search's ledger and continues without repeating one."""
from __future__ import annotations

import time

from ..engines.result import TestResult
from ..plan.points import ResolvedPoint, Slot
from ..search.answer import Answer
from ..search.objective import Observation, Reading, of_result
from ..search.session import SearchPlan, observations, plan_search
from ..search.space import Config, SwitchKey
from ..studyfile.models import Study
from .engine_choice import choose_engines
from .point_runner import PointRunner
from .workloads import workload_run
from .workloads.base import OVERHEAD_GUESS


class RunMeasurer:
    """The search's Measurer over a study's PointRunner."""

    def __init__(self, plan: SearchPlan, runner: PointRunner):
        self.plan = plan
        self.runner = runner
        ctx = runner.ctx
        self.index: dict[Config, int] = {}
        self.said: set[str] = set()
        for p in ctx.store.points(ctx.outcome.study_id):  # a resumed study's points keep their index
            cfg = plan.space.from_stored(p["point"])
            if cfg is not None:
                self.index[cfg] = int(p["idx"])
                self._register(cfg, int(p["idx"]))
        self.next_free = max([len(plan.space.grid_index), *(i + 1 for i in self.index.values()), *(i + 1 for i in plan.space.grid_index.values())])

    def _register(self, cfg: Config, idx: int) -> ResolvedPoint:
        """The configuration's point in the study's context (resolved, engine chosen, stored)."""
        ctx = self.runner.ctx
        if idx in ctx.point_ids and idx in ctx.by_index and ctx.by_index[idx].point.params == self.plan.space.stored_params(cfg):
            return ctx.by_index[idx]
        rp = self.plan.space.resolved(cfg, idx)
        (rp,), choices, notes = choose_engines([rp], ctx.target, ctx.store, ctx.answers)
        for note in notes:
            if note not in self.said:
                self.said.add(note)
                ctx.progress.message(note)
        ctx.choices.update(choices)
        engine = str(rp.workload.engine)
        if engine not in ctx.versions:
            ctx.versions[engine] = workload_run(rp.workload).preflight(engine, [rp], ctx.target)
        ctx.by_index[idx] = rp
        ctx.per_slot[idx] = workload_run(rp.workload).tests_per_slot(rp.workload, list(ctx.target.test_hosts))
        ctx.point_ids[idx] = ctx.store.add_point(ctx.outcome.study_id, idx, rp.point.params)
        self.runner.adopt(idx)
        return rp

    def point_of(self, cfg: Config) -> int:
        if cfg not in self.index:
            on_grid = self.plan.space.grid_index.get(cfg) if not cfg.as_found else None
            self.index[cfg] = on_grid if on_grid is not None else self.next_free
            if on_grid is None:
                self.next_free += 1
        return self.index[cfg]

    def switch_key(self, cfg: Config) -> SwitchKey:
        return self.plan.space.switch_key(self._register(cfg, self.point_of(cfg)))

    def current(self) -> Config | None:
        now = self.runner.current
        return next((c for c, i in self.index.items() if i == now), None) if now is not None else None

    def measure(self, cfg: Config, seq: int) -> Observation:
        idx = self.point_of(cfg)
        rp = self._register(cfg, idx)
        before = self.current()
        switched = int(before is not None and self.switch_key(before) != self.plan.space.switch_key(rp))
        ctx = self.runner.ctx
        warm = ctx.study.repeat.warmup
        t0 = time.monotonic()
        tests = 0
        if idx not in self.runner.last_run:  # its warm-ups first (stored, not counted)
            for w in range(warm):
                tests += len(self.runner.run(Slot(rp.point, w, True)))
        run = self.runner.last_run.get(idx, warm - 1) + 1
        results: list[TestResult] = self.runner.run(Slot(rp.point, run, False))
        metrics = Reading.of(self.plan.objective, results, of_result).metrics()
        full = self.plan.space.full_duration
        frac = (cfg.duration / full) if cfg.duration is not None and full else 1.0
        cost = frac * (len(results) + tests) + switched * self.plan.reboot_cost
        return Observation(cfg, seq, metrics, self.plan.objective.value(metrics), cost, time.monotonic() - t0, switched, idx, run)


def drive_search(runner: PointRunner, text: str, file: str) -> Answer:
    """Run the study's search on this runner (a resumed study's stored runs first read
    back), then its answer."""
    ctx = runner.ctx
    wl = next(iter(ctx.by_index.values())).workload
    plan = plan_search(ctx.study, text, file, workload_run(wl).test_seconds(wl))
    measurer = RunMeasurer(plan, runner)
    keys = {c: measurer.switch_key(c) for c in measurer.index}
    ledger = observations(plan, ctx.store.runs(ctx.outcome.study_id, include_warmup=True), lambda c: keys.get(c))
    if ledger.obs:
        ctx.progress.message(f"search: {len(ledger.obs)} measurements read back from the stored runs; continuing")
    loop = plan.loop(measurer, ledger, ctx.progress.message)
    loop.run()
    return plan.answer(ledger, loop.stopped)


def search_size(study: Study, resolved: list[ResolvedPoint], text: str, file: str) -> tuple[int, float]:
    """(the most tests the search may run, their expected seconds) for the progress bar; a
    timed command of undeclared length counts its overhead only, as plan_time does (its
    length is unknown until it has run: `search_length_unknown` says so)."""
    wl = resolved[0].workload
    kind = workload_run(wl)
    per = kind.test_seconds(wl) if kind.length_declared(study.workload) else OVERHEAD_GUESS
    plan = plan_search(study, text, file, per)
    return int(plan.tests()), plan.budget.seconds if plan.budget.seconds is not None else plan.tests() * per


def search_length_unknown(study: Study, resolved: list[ResolvedPoint]) -> bool:
    """Is a test's length unknown before the first one runs (a timed command without duration)?"""
    return not workload_run(resolved[0].workload).length_declared(study.workload)
