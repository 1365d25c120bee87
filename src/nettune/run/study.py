"""Run a whole study: plan -> target -> (knobs) -> engine -> probes -> store.

Teardown is in `finally` and SIGTERM is turned into KeyboardInterrupt, so Ctrl-C, a
kill and an exception all end the same way: settings restored, lab removed, processes
stopped, the study marked interrupted or failed in the database.
"""
from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol

from ..engines import get_engine
from ..engines.result import TestResult
from ..errors import NettuneError, ToolMissing
from ..analysis.stats import adaptive_rounds, stopping_value
from ..plan.points import ResolvedPoint, Slot, expand_and_check, schedule
from .pairs import pair_rounds, run_slot, workload_hosts
from ..spec.models import Study
from ..store import Store
from ..targets import make_target

OVERHEAD_GUESS = 0.6  # seconds per test beyond its duration, for the first ETA only


class Progress(Protocol):
    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None: ...
    def test_start(self, slot: Slot, index: int) -> None: ...
    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None: ...
    def message(self, text: str) -> None: ...


class NoProgress:
    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None: ...
    def test_start(self, slot: Slot, index: int) -> None: ...
    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None: ...
    def message(self, text: str) -> None: ...


@dataclass
class Outcome:
    study_id: int
    status: str
    tests: int = 0
    failed: int = 0
    warnings: list[str] = field(default_factory=list)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP all unwind as KeyboardInterrupt so every finally block runs."""

    owner = os.getpid()

    def handler(signum: int, frame: Any) -> None:
        if os.getpid() != owner:
            # a fork()ed helper (pyroute2 forks to enter namespaces and SIGTERMs the child
            # when done) must never unwind our stack: it would restore knobs, remove the lab
            os._exit(128 + signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def hosts_pairs(wl: Any, target: Any) -> list[Any]:
    return [p for rnd in pair_rounds(wl, target) for p in rnd]


def tests_per_slot(rp: ResolvedPoint, target: Any) -> int:
    """1, or the number of host pairs when the workload runs over pairs."""
    return len(hosts_pairs(rp.workload, target)) if rp.workload.pairs is not None else 1


def slot_seconds(rp: ResolvedPoint, target: Any = None) -> float:
    """Rough seconds one slot of this point takes: its tests (one per host pair, or one
    per round when a round's pairs run at once), each duration + omit + overhead."""
    wl = rp.workload
    tests = 1
    if wl.pairs is not None:
        rounds = pair_rounds(wl, target if target is not None else rp.target)
        tests = len(rounds) if wl.parallel_pairs else sum(map(len, rounds))
    return (wl.duration + wl.omit + OVERHEAD_GUESS) * tests


def expected_seconds(study: Study, resolved: list[ResolvedPoint], target: Any = None, longest: bool = False) -> float:
    """First estimate for the ETA (the progress bar refines it as tests finish).
    longest: as if adaptive repeats ran every point to max_runs (the most it can take).
    Counted from the slots per point, never by building the schedule (which can be huge)."""
    rep = study.repeat
    per_point = rep.warmup + (rep.max_counted if longest else rep.min_counted)
    slots = per_point * len(resolved)
    return per_point * sum(slot_seconds(r, target) for r in resolved) + rep.pause * max(0, slots - 1)


def run_study(
    study: Study,
    store: Store,
    spec_text: str | None = None,
    spec_file: str | None = None,
    progress: Progress | None = None,
    restore_first: bool = False,
) -> Outcome:
    progress = progress or NoProgress()
    resolved = expand_and_check(study, spec_text or "", spec_file or "<study>")
    by_index = {r.point.index: r for r in resolved}
    slots = schedule(study, [r.point for r in resolved])

    target = make_target(study)  # raises NotRoot etc. before anything is created
    try:
        versions = preflight(study, resolved, target)
        for note in _knob_precheck(study, target, resolved, spec_text, spec_file, restore_first):
            progress.message(note)  # refuses over an unrestored journal; checks every knob first
    except BaseException:
        target.close()  # e.g. ssh connections already open; the lab has created nothing yet
        raise

    study_id = store.begin_study(study, spec_text, spec_file)
    point_ids = {r.point.index: store.add_point(study_id, r.point.index, r.point.params) for r in resolved}
    outcome = Outcome(study_id, "running")
    status = "failed"
    knobs = _knob_session(study, target, study_id)
    runner = _PointRunner(study, store, target, knobs, versions, by_index, point_ids, progress, outcome)
    per_slot = {r.point.index: tests_per_slot(r, target) for r in resolved}
    total = sum(per_slot[s.point.index] for s in slots)
    if study.repeat.adaptive:  # the most it can take; most studies stop earlier
        total += sum(per_slot.values()) * (study.repeat.max_counted - study.repeat.min_counted)
    progress.start(study, total, expected_seconds(study, resolved, target))
    try:
        with sigterm_as_interrupt():
            for slot in slots:
                runner.run(slot)
            if study.repeat.adaptive:
                _adaptive_rounds(study, runner)
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        try:
            if knobs is not None:
                outcome.warnings += knobs.restore_all()
        finally:
            target.close()
            store.finish_study(study_id, status)
            outcome.status = status
    return outcome


class _PointRunner:
    """Runs one slot: prepares the target (and knobs) when the point changes, runs the
    test, stores it at once. Keeps each point's counted values for adaptive repeats."""

    def __init__(self, study: Study, store: Store, target: Any, knobs: Any, versions: dict[str, str],
                 by_index: dict[int, ResolvedPoint], point_ids: dict[int, int], progress: Progress, outcome: Outcome):
        self.study, self.store, self.target, self.knobs, self.versions = study, store, target, knobs, versions
        self.by_index, self.point_ids, self.progress, self.outcome = by_index, point_ids, progress, outcome
        self.current: int | None = None
        self.settings: dict[str, Any] = {}
        self.count = 0
        self.values: dict[int, list[float | None]] = {i: [] for i in by_index}

    def run(self, slot: Slot) -> TestResult:
        rp = self.by_index[slot.point.index]
        if self.current != slot.point.index:
            self.settings = self.target.prepare(rp)
            if self.knobs is not None:
                self.settings["knobs"] = self.knobs.apply_point(rp)
                if hasattr(self.target, "state"):  # read back what the knobs changed
                    self.settings.update(self.target.state())
                for note in self.knobs.take_messages():
                    self.progress.message(note)
            if self.current is None:
                self.store.add_facts(self.outcome.study_id, self.target.facts())
            self.current = slot.point.index
        if self.count and self.study.repeat.pause:
            time.sleep(self.study.repeat.pause)
        self.progress.test_start(slot, self.count)
        t0 = time.monotonic()
        wl = rp.workload
        engine = get_engine(wl.engine)
        sid, pid = self.outcome.study_id, self.point_ids[slot.point.index]
        # one test, or one per host pair in rounds; each stored the moment it ends.
        # Hosts in target.extra_machines (ssh hypervisors) are sampled during every test.
        results = run_slot(engine, wl, self.target, self.versions[wl.engine],
                           lambda r: self.store.add_run(sid, pid, slot.run, slot.warmup, r, self.settings))
        self.count += 1
        self.outcome.tests += len(results)
        self.outcome.failed += sum(not r.ok for r in results)
        if not slot.warmup:
            self.values[slot.point.index].append(_slot_value(results))
        for res in results:
            self.progress.test_end(slot, res, time.monotonic() - t0)
        return results[-1]


def _slot_value(results: list[TestResult]) -> float | None:
    """What adaptive repeats watch for a slot: its throughput (summed over host pairs)."""
    vals = [stopping_value(r) for r in results]
    return None if any(v is None for v in vals) else sum(v for v in vals if v is not None)


def _adaptive_rounds(study: Study, runner: _PointRunner) -> None:
    """More rounds until every point's 95% CI is within target_margin (or max_runs).
    Sequential order finishes one point before the next; otherwise rounds interleave."""
    rep = study.repeat
    groups = [[i] for i in sorted(runner.values)] if rep.order == "sequential" else [sorted(runner.values)]
    for group in groups:
        round_no = 0
        while need := adaptive_rounds(rep, {i: runner.values[i] for i in group}, round_no):
            for idx in need:
                point = runner.by_index[idx].point
                runner.run(Slot(point, rep.warmup + len(runner.values[idx]), False))
            round_no += 1


def preflight(study: Study, resolved: list[ResolvedPoint], target: Any) -> dict[str, str]:
    """Check every tool the study needs is installed on its hosts; return versions."""
    versions: dict[str, str] = {}
    for rp in resolved:
        wl = rp.workload
        if wl.engine in versions:
            continue
        engine = get_engine(wl.engine)
        names = workload_hosts(wl, target)
        for name in names:
            host = target.hosts[name]
            if host.which(engine.binary) is None:
                raise ToolMissing(f"{engine.binary} is not installed on {host.name}: {engine.install_hint}")
        client = target.hosts[names[-1]]
        r = getattr(client, "probe_run", client.run)(engine.version_argv(), timeout=10)
        versions[wl.engine] = engine.version(r.stdout + r.stderr)
        if not versions[wl.engine]:
            raise NettuneError(f"cannot tell the version of {engine.binary} ({(r.stdout + r.stderr).strip()[:80]!r}); is it really {wl.engine}?")
    return versions


def _knob_precheck(study: Study, target: Any, resolved: list[ResolvedPoint], spec_text: str | None, spec_file: str | None, restore_first: bool) -> list[str]:
    """Before anything changes: no unrestored journal (or restore it first), every knob valid."""
    from ..knobs.session import precheck  # noqa: PLC0415

    return precheck(study, target, resolved, spec_text or "", spec_file or "<study>", restore_first)


def _knob_session(study: Study, target: Any, study_id: int) -> Any:
    """The knobs layer (issue 4) when the study sets knobs; None otherwise."""
    if not getattr(study, "knobs", None):
        return None
    from ..knobs.session import KnobSession  # noqa: PLC0415 - optional layer

    return KnobSession(study, target, study_id)
