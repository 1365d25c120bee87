"""One study's runner of slots (run/study.py drives it): brings the target and knobs to a
point's state when the point changes, runs the tests a slot does not hold yet, stores each
at once, and keeps each point's counted values for adaptive repeats. A point whose
settings cannot be brought into force (PointFailed) gets a failed test per slot with the
reason, and the study goes on."""
from __future__ import annotations

import time
from typing import Any

from ..analysis.metric import stopping_value  # the primary metric's value: throughput, or a command's wall seconds
from ..engines import get_engine
from ..engines.result import TestResult
from ..errors import PointFailed
from ..plan.points import ResolvedPoint, Slot
from ..studyfile.models import Study
from ..store import Store
from .resume import Stored
from .slots import run_slot


class PointRunner:
    """Runs one slot: prepares the target (and knobs) when the point changes, runs the
    tests the slot does not hold yet, stores each at once. Keeps each point's counted
    values for adaptive repeats (those of a resumed study's stored slots included)."""

    def __init__(self, study: Study, store: Store, target: Any, knobs: Any, versions: dict[str, str],
                 by_index: dict[int, ResolvedPoint], point_ids: dict[int, int], progress: Any, outcome: Any,
                 stored: Stored, per_slot: dict[int, int], access: Any = None):
        self.study, self.store, self.target, self.knobs, self.versions = study, store, target, knobs, versions
        self.access = access
        self.by_index, self.point_ids, self.progress, self.outcome = by_index, point_ids, progress, outcome
        self.stored, self.per_slot = stored, per_slot
        self.current: int | None = None
        self.unreached: dict[int, str] = {}  # point index -> why its settings could not be brought into force
        self.choices: dict[int, Any] = {}  # point index -> engines.choice.Choice (engine = "auto")
        self.answers: Any = None  # run.engine_choice.HostAnswers: what the hosts said before the study
        self.settings: dict[str, Any] = {}
        self.count = 0
        self.values: dict[int, list[float | None]] = {i: [] for i in by_index}
        self.last_run: dict[int, int] = {}  # highest counted run number each point has
        for (idx, run, warmup), have in sorted(stored.by_slot.items()):
            if not warmup and idx in self.values and len(have) >= per_slot[idx]:
                self.values[idx].append(_slot_value(list(have.values())))
                self.last_run[idx] = max(run, self.last_run.get(idx, run))
        self.facts_stored = bool(store.facts(outcome.study_id))  # a resumed study has them
        self.doctor = True
        self.findings: dict[str, list[dict[str, Any]]] = {}  # the host audit, stored with the facts
        self.idle_done: set[int] = set(store.idle_points(outcome.study_id)) if study.probes is not None else set()

    def meters(self) -> list[Any]:
        """[probes] power_command: a probe sampling the meter during each test."""
        from .power_probes import meters  # noqa: PLC0415

        return meters(self.study)

    def idle_after(self, idx: int, wl: Any, study_id: int, point_id: int) -> None:
        """[probes] idle_power: once per point, after its first counted run (settings in force)."""
        if self.study.probes is None or self.study.probes.idle_power is None or idx in self.idle_done:
            return
        from .power_probes import sample_idle  # noqa: PLC0415

        self.idle_done.add(idx)
        self.progress.message(f"idle power at {self.by_index[idx].point.label()}: {self.study.probes.idle_power:g} s")
        sample_idle(self.study, self.store, self.target, wl, study_id, point_id)

    def enter(self, rp: ResolvedPoint) -> None:
        """Bring the target (and knobs) to this point's state, unless it is there already."""
        if self.current == rp.point.index:
            return
        self.settings = self.target.prepare(rp)
        if self.current is None and not self.facts_stored and self.doctor:
            from .host_audit import audit_target  # noqa: PLC0415 - only runs that audit load the checks

            self.findings, said = audit_target(self.study, self.target)  # before the knobs: the hosts as found
            self.progress.message(said)
            self.doctor = False  # once (a first point that fails is not audited again at the next)
        if self.knobs is not None:
            self.settings["knobs"] = self.knobs.apply_point(rp)
            self.settings.update(self.target.state())  # read back what the knobs changed
            for note in self.knobs.take_messages():
                self.progress.message(note)
        # the target brings into force what depends on the knobs (Kubernetes: pods re-created
        # after a node value they copy at creation changed) and says what it did
        self.settings.update(self.target.settle(rp))
        if self.current is None and not self.facts_stored:
            facts = self.target.facts()
            for host, f in facts.items():  # the machine each host is (nettune ceiling's key)
                if host in self.target.hosts and self.answers is not None:
                    f.setdefault("machine", self.answers.machine(host))
            for host, found in self.findings.items():
                facts.setdefault(host, {})["doctor"] = found
            self.store.add_facts(self.outcome.study_id, facts)
            self.facts_stored = True
        self.current = rp.point.index

    def _unreached(self, slot: Slot, rp: ResolvedPoint, why: str) -> list[TestResult]:
        """A failed test per slot of a point whose settings are not in force (nothing measured)."""
        res = _unreached_result(get_engine(rp.workload.engine), rp.workload, self.versions.get(rp.workload.engine, ""), why)
        self.store.add_run(self.outcome.study_id, self.point_ids[slot.point.index], slot.run, slot.warmup, res, self.settings)
        self.count += 1
        self.outcome.tests += 1
        self.outcome.failed += 1
        self.progress.test_end(slot, res, 0.0)
        return [res]

    def run(self, slot: Slot) -> list[TestResult]:
        rp = self.by_index[slot.point.index]
        have = self.stored.of(slot)
        if len(have) >= self.per_slot[slot.point.index]:
            return []  # stored before a crash: never run twice
        try:
            if slot.point.index not in self.unreached:
                self.enter(rp)
        except PointFailed as e:  # e.g. the host booted without this point's value: its tests fail, the study goes on
            self.unreached[slot.point.index] = str(e)
            self.progress.message(f"{rp.point.label()}: {e}; its tests are recorded as failed")
        if slot.point.index in self.unreached:
            return self._unreached(slot, rp, self.unreached[slot.point.index])
        if self.count and self.study.repeat.pause:
            time.sleep(self.study.repeat.pause)
        self.progress.test_start(slot, self.count)
        t0 = time.monotonic()
        wl = rp.workload
        engine = get_engine(wl.engine)
        sid, pid = self.outcome.study_id, self.point_ids[slot.point.index]
        # one test, or one per host pair in rounds; each stored the moment it ends (a
        # parallel round's pairs together). Hosts in target.extra_machines (ssh
        # hypervisors) are sampled during every test.
        choice = self.choices.get(slot.point.index)

        def chosen(r: TestResult) -> TestResult:  # engine = "auto": what was picked and why, with every test
            if choice is not None:
                r.extra["engine_choice"] = choice.to_dict()
            return r

        results = run_slot(engine, wl, self.target, self.versions[wl.engine],
                           lambda r: self.store.add_run(sid, pid, slot.run, slot.warmup, chosen(r), self.settings), skip=set(have),
                           on_round=lambda rs: self.store.add_runs(sid, pid, slot.run, slot.warmup, [chosen(r) for r in rs], self.settings),
                           access=self.access, meters=self.meters)
        self.count += 1
        if not slot.warmup:
            self.idle_after(slot.point.index, wl, sid, pid)
        self.outcome.tests += len(results)
        self.outcome.failed += sum(not r.ok for r in results)
        if not slot.warmup:
            self.values[slot.point.index].append(_slot_value(list(have.values()) + results))
            self.last_run[slot.point.index] = max(slot.run, self.last_run.get(slot.point.index, slot.run))
        for res in results:
            self.progress.test_end(slot, res, time.monotonic() - t0)
        return results


def _unreached_result(engine: Any, wl: Any, version: str, why: str) -> TestResult:
    from .driver import run_test_failed  # noqa: PLC0415

    return run_test_failed(engine, wl, version, f"this point's settings are not in force: {why}")


def _slot_value(results: list[TestResult]) -> float | None:
    """What adaptive repeats watch for a slot: its throughput (summed over host pairs)."""
    vals = [stopping_value(r) for r in results]
    return None if any(v is None for v in vals) else sum(v for v in vals if v is not None)
