"""One study's runner of slots (run/study.py drives it): brings the target and knobs to a
point's state when the point changes, runs the tests a slot does not hold yet (through
the point's workload kind, run/workloads/), stores each at once, and keeps each point's
counted values for adaptive repeats. A point whose settings cannot be brought into force
(PointFailed) gets a failed test per slot with the reason, and the study goes on."""
from __future__ import annotations

import time
from typing import Any

from ..engines.result import TestResult
from ..errors import PointFailed
from ..record.parts import EngineChoice
from ..record.point_state import PointState
from ..plan.points import ResolvedPoint, Slot
from ..probes.base import Probe
from ..studyfile.workload import Workload
from .context import RunContext
from .host_audit import audit_target
from .power_probes import meters, sample_idle
from .workloads import WorkloadRun, workload_run
from .workloads.base import SlotRun


class PointRunner:
    """Runs one slot: prepares the target (and knobs) when the point changes, runs the
    tests the slot does not hold yet, stores each at once. Keeps each point's counted
    values for adaptive repeats (those of a resumed study's stored slots included)."""

    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self.current: int | None = None
        self.unreached: dict[int, str] = {}  # point index -> why its settings could not be brought into force
        self.settings = PointState()  # what the target (and knobs) report in force at the current point
        self.count = 0
        self.last_seconds = 0.0  # the last slot's tests took this long (its settings' time not included)
        self.last_setup = 0.0  # and its settings this long before them (a reboot or VM restart among them)
        self.values: dict[int, list[float | None]] = {i: [] for i in ctx.by_index}
        self.last_run: dict[int, int] = {}  # highest counted run number each point has
        for idx in ctx.by_index:
            self._read_back(idx)
        self.facts_stored = bool(ctx.store.facts(ctx.outcome.study_id))  # a resumed study has them
        self.findings: dict[str, list[dict[str, Any]]] = {}  # the host audit, stored with the facts
        self.doctor = ctx.doctor  # still to audit the hosts (once, before the first point's knobs)
        self.idle_done: set[int] = set(ctx.store.idle_points(ctx.outcome.study_id)) if ctx.study.probes is not None else set()

    def _read_back(self, idx: int) -> None:
        """A resumed point's stored counted slots: their values, and its last run number."""
        ctx = self.ctx
        for (i, run, warmup), have in sorted(ctx.stored.by_slot.items()):
            if i == idx and not warmup and len(have) >= ctx.per_slot[idx]:
                kind = workload_run(ctx.by_index[idx].workload)
                self.values[idx].append(_slot_value(kind, list(have.values())))
                self.last_run[idx] = max(run, self.last_run.get(idx, run))

    def adopt(self, idx: int) -> None:
        """A point added after the start (a search's configuration off the grid): read back
        what a killed run stored of it, so its next run gets the next number, not a stored one."""
        if idx not in self.values:
            self.values[idx] = []
            self._read_back(idx)

    def meters(self) -> list[Probe]:
        """[probes] power_command: a probe sampling the meter during each test."""
        return meters(self.ctx.study)

    def idle_after(self, idx: int, wl: Workload, study_id: int, point_id: int) -> None:
        """[probes] idle_power: once per point, after its first counted run (settings in force)."""
        probes = self.ctx.study.probes
        if probes is None or probes.idle_power is None or idx in self.idle_done:
            return
        self.idle_done.add(idx)
        self.ctx.progress.message(f"idle power at {self.ctx.by_index[idx].point.label()}: {probes.idle_power:g} s")
        sample_idle(self.ctx.study, self.ctx.store, self.ctx.target, wl, study_id, point_id)

    def enter(self, rp: ResolvedPoint) -> None:
        """Bring the target (and knobs) to this point's state, unless it is there already."""
        ctx = self.ctx
        if self.current == rp.point.index:
            return
        self.settings = ctx.target.prepare(rp)
        if self.current is None and not self.facts_stored and self.doctor:
            self.findings, said = audit_target(ctx.study, ctx.target)  # before the knobs: the hosts as found
            ctx.progress.message(said)
            self.doctor = False  # once (a first point that fails is not audited again at the next)
        if ctx.knobs is not None:
            applied = ctx.knobs.apply_point(rp)
            self.settings = self.settings.with_knobs(applied).merged(ctx.target.state())  # read back what the knobs changed
            if ctx.knobs.read_back:  # the CPUs' governor and EPP under the point's tuned profile and amd_pstate mode
                self.settings = self.settings.model_copy(update={"read_back": dict(ctx.knobs.read_back)})
            for note in ctx.knobs.take_messages():
                ctx.progress.message(note)
        # the target brings into force what depends on the knobs (Kubernetes: pods re-created
        # after a node value they copy at creation changed) and says what it did
        self.settings = self.settings.merged(ctx.target.settle(rp))
        if self.current is None and not self.facts_stored:
            facts = ctx.target.facts()
            for host, f in facts.items():  # the machine each host is (nettune ceiling's key)
                if host in ctx.target.hosts and ctx.answers is not None:
                    f.setdefault("machine", ctx.answers.machine(host))
            for host, found in self.findings.items():
                facts.setdefault(host, {})["doctor"] = found
            ctx.store.add_facts(ctx.outcome.study_id, facts)
            self.facts_stored = True
        self.current = rp.point.index

    def _unreached(self, slot: Slot, rp: ResolvedPoint, why: str) -> list[TestResult]:
        """A failed test per slot of a point whose settings are not in force (nothing measured)."""
        ctx = self.ctx
        wl = rp.workload
        res = workload_run(wl).failed(wl, ctx.versions.get(str(wl.engine), ""), f"this point's settings are not in force: {why}")
        ctx.store.add_run(ctx.outcome.study_id, ctx.point_ids[slot.point.index], slot.run, slot.warmup, res, self.settings)
        self.count += 1
        ctx.outcome.tests += 1
        ctx.outcome.failed += 1
        ctx.progress.test_end(slot, res, 0.0)
        return [res]

    def run(self, slot: Slot) -> list[TestResult]:
        ctx = self.ctx
        if ctx.stop is not None and ctx.stop.is_set():  # asked to stop from another thread (run/study.py)
            raise KeyboardInterrupt("stopped on request")
        rp = ctx.by_index[slot.point.index]
        have = ctx.stored.of(slot)
        self.last_seconds = self.last_setup = 0.0
        if len(have) >= ctx.per_slot[slot.point.index]:
            return []  # stored before a crash: never run twice
        t_enter = time.monotonic()
        try:
            if slot.point.index not in self.unreached:
                self.enter(rp)
        except PointFailed as e:  # e.g. the host booted without this point's value: its tests fail, the study goes on
            self.unreached[slot.point.index] = str(e)
            ctx.progress.message(f"{rp.point.label()}: {e}; its tests are recorded as failed")
        self.last_seconds = 0.0
        self.last_setup = time.monotonic() - t_enter
        if slot.point.index in self.unreached:
            return self._unreached(slot, rp, self.unreached[slot.point.index])
        if self.count and ctx.study.repeat.pause:
            if ctx.stop is not None and ctx.stop.wait(ctx.study.repeat.pause):
                raise KeyboardInterrupt("stopped on request")
            if ctx.stop is None:
                time.sleep(ctx.study.repeat.pause)
        ctx.progress.test_start(slot, self.count)
        t0 = time.monotonic()
        wl = rp.workload
        kind = workload_run(wl)
        sid, pid = ctx.outcome.study_id, ctx.point_ids[slot.point.index]
        # one test, or one per host pair in rounds; each stored the moment it ends (a
        # parallel round's pairs together). Hosts in target.extra_machines (ssh
        # hypervisors) are sampled during every test.
        choice = ctx.choices.get(slot.point.index)

        def chosen(r: TestResult) -> TestResult:  # engine = "auto": what was picked and why, with every test
            if choice is not None:
                r.engine_choice = EngineChoice.model_validate(choice.to_dict())
            return r

        results = kind.run_slot(SlotRun(
            wl, ctx.target, ctx.versions[str(wl.engine)],
            on_result=lambda r: ctx.store.add_run(sid, pid, slot.run, slot.warmup, chosen(r), self.settings),
            on_round=lambda rs: ctx.store.add_runs(sid, pid, slot.run, slot.warmup, [chosen(r) for r in rs], self.settings),
            skip=set(have), access=ctx.access, meters=self.meters))
        self.count += 1
        if not slot.warmup:
            self.idle_after(slot.point.index, wl, sid, pid)
        ctx.outcome.tests += len(results)
        ctx.outcome.failed += sum(not r.ok for r in results)
        if not slot.warmup:
            self.values[slot.point.index].append(_slot_value(kind, list(have.values()) + results))
            self.last_run[slot.point.index] = max(slot.run, self.last_run.get(slot.point.index, slot.run))
        self.last_seconds = time.monotonic() - t0
        for res in results:
            ctx.progress.test_end(slot, res, self.last_seconds)
        return results


def _slot_value(kind: WorkloadRun, results: list[TestResult]) -> float | None:
    """What adaptive repeats watch for a slot: its kind's primary metric (throughput summed
    over host pairs; a command's wall seconds)."""
    vals = [kind.value(r) for r in results]
    return None if any(v is None for v in vals) else sum(v for v in vals if v is not None)
