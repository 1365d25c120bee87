"""Run a whole study: plan -> target -> (knobs) -> engine -> probes -> store.

Teardown is in `finally` and SIGTERM is turned into KeyboardInterrupt, so Ctrl-C, a
kill and an exception all end the same way: settings restored, lab removed, processes
stopped, the study marked interrupted or failed in the database.
"""
from __future__ import annotations

import asyncio
import os
import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Callable, Iterator

from ..errors import NettuneError
from ..analysis.stats import adaptive_rounds
from ..plan.points import ResolvedPoint, Slot, expand_and_check
from ..plan.run_order import run_groups
from ..targets.base import Target
from ..targets.procs import kill_pid, owner_token, started_by, study_owner
from .context import KnobLayer, NoProgress as NoProgress, Outcome as Outcome, Progress as Progress, Recording, RunContext
from .credentials import StudyAccess
from .point_runner import PointRunner
from .engine_choice import HostAnswers, choose_engines
from .resume import Stored, clear_dead_run, dead_owners, find_interrupted
from .search_trials import drive_search, search_size
from .workloads import workload_run
from .plan_time import RunClock, plan_time
from .workloads.base import OVERHEAD_GUESS as OVERHEAD_GUESS
from ..studyfile.models import Study
from ..store.base import ResultStore
from ..targets import make_target


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP all unwind as KeyboardInterrupt so every finally block runs.
    Only the main thread takes signals: a study run from another thread (a notebook's
    worker, nettune.run_study in Jupyter) is stopped through its `stop` event instead."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()

    def handler(signum: int, frame: FrameType | None) -> None:
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


def loop_running() -> bool:
    """Whether this thread is inside a running asyncio event loop (a Jupyter cell is)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def tests_per_slot(rp: ResolvedPoint, test_hosts: list[str]) -> int:
    """1, or the number of host pairs when the workload runs over pairs (its kind says)."""
    return workload_run(rp.workload).tests_per_slot(rp.workload, test_hosts)


def expected_seconds(study: Study, resolved: list[ResolvedPoint], target: Target | None = None, *, longest: bool = False,
                     left: list[tuple[Slot, int]] | None = None) -> float:
    """The estimate the plan and the progress bar start from (run/plan_time.py): tests,
    reboots, VM restarts and idle-power windows. longest: as if adaptive repeats ran every
    point to max_runs. left: only these slots, with how many tests each still has to run
    (a resumed study)."""
    eta = plan_time(study, resolved, target, left=left)
    return eta.longest if longest else eta.expected


def run_study(
    study: Study,
    store: ResultStore,
    spec_text: str | None = None,
    spec_file: str | None = None,
    progress: Progress | None = None,
    restore_first: bool = False,
    resume: bool = False,
    cross_check: bool | list[int] = False,
    doctor: bool = True,
    stop: threading.Event | None = None,
) -> Outcome:
    """Run a study into `store`. resume=True continues the latest interrupted study of the
    same name and file text instead (see run/resume.py): settings restored first, only
    the missing tests run, into the same study id. cross_check: afterwards, re-run every
    point analysis marks tool-bound (or these point indices) with the other engine and
    with iperf3 fanned out, side by side (run/cross_check.py). doctor: audit the hosts once
    before the first point's knobs and store the findings with the host facts. stop: set
    from another thread, the study ends after the test in flight as if interrupted
    (settings restored, lab removed, the study marked interrupted; KeyboardInterrupt)."""
    if loop_running():
        raise NettuneError("this thread runs an asyncio event loop (Jupyter, an async app): pyroute2 cannot use it; call "
                           "nettune.run_study, which runs the study on a thread of its own")
    said: list[str] = []
    progress = Recording(progress or NoProgress(), said)
    resolved = expand_and_check(study, spec_text or "", spec_file or "<study>")
    by_index = {r.point.index: r for r in resolved}
    _check_offline(study, resolved, spec_text, spec_file)  # what the dry run refuses, refused before connecting
    groups = run_groups(study, resolved)  # the dry run's order: reboots and VM restarts as rarely as possible
    slots = [s for g in groups for s in g]
    # a search's plan (its budget can hold it) is checked before anything is created
    sized = search_size(study, resolved, spec_text or "", spec_file or "<study>") if study.search is not None else None
    prior = find_interrupted(store, study, spec_text, spec_file or "<study>") if resume else None
    dead = dead_owners(store, study.name)  # before a claim makes the resumed study ours

    # before connecting anywhere: refuses over changes a killed run left on this study's hosts
    notes = _journal_gate(study, restore_first or resume)  # --resume restores first by itself
    target = make_target(study)  # raises NotRoot etc. before anything is created
    target_said = list(target.warnings)  # the target's own (a cluster's pod sysctls it will refuse...), before the study
    for note in target_said:
        progress.message(note)
    claimed = False
    try:
        if prior is not None:
            if not store.claim_study(prior["id"], study_owner(), prior):
                raise NettuneError(f"study {study.name!r} (#{prior['id']}) was just taken over by another nettune run; see `nettune studies`")
            claimed = True
        # engine / processes = "auto" made concrete per point on these hosts (run/engine_choice.py)
        answers = HostAnswers(target)
        resolved, choices, choice_notes = choose_engines(resolved, target, store, answers)
        by_index = {r.point.index: r for r in resolved}
        for note in choice_notes:
            progress.message(note)
        access = StudyAccess(study, target, resolved, spec_file or "<study>")
        versions = preflight(study, resolved, target)
        for note in access.check():  # refuses auth = true where a host cannot; makes the credentials
            progress.message(note)
        for note in notes + _knob_precheck(study, target, resolved, spec_text, spec_file):
            progress.message(note)  # checks every knob of every point first
        for note in clear_dead_run(study, dead):
            progress.message(note)  # a killed run's lab and servers would get in the way
    except BaseException:
        if claimed and prior is not None:
            store.finish_study(prior["id"], prior["status"])  # not continued after all
        target.close()  # e.g. ssh connections already open; the lab has created nothing yet
        raise

    if prior is None:
        study_id, stored = store.begin_study(study, spec_text, spec_file, owner=study_owner()), Stored()
    else:
        study_id, stored = prior["id"], Stored.load(store, prior["id"])
    # a search adds the points it measures as it measures them (run/search_trials.py)
    point_ids = {} if study.search is not None else {r.point.index: store.add_point(study_id, r.point.index, r.point.params) for r in resolved}
    outcome = Outcome(study_id, "running", messages=said, name=study.name)
    status = "failed"
    knobs = _knob_session(study, target, study_id, progress)
    per_slot = {r.point.index: tests_per_slot(r, list(target.test_hosts)) for r in resolved}
    runner = PointRunner(RunContext(study, store, target, knobs, versions, by_index, point_ids, progress, outcome, stored, per_slot,
                                    access=access, choices=choices, answers=answers, doctor=doctor, stop=stop))
    # a search decides what runs itself (run/search_trials.py): no slot of the grid is run as such
    left = [] if study.search is not None else [(s, per_slot[s.point.index] - len(stored.of(s))) for s in slots if len(stored.of(s)) < per_slot[s.point.index]]
    todo = {id(s) for s, _ in left}
    total = sum(n for _, n in left)
    extra = 0
    if study.repeat.adaptive and study.search is None:  # the most it can take; most studies stop earlier
        extra = sum(per_slot[i] * max(0, study.repeat.max_counted - max(study.repeat.min_counted, len(runner.values[i]))) for i in per_slot)
    if prior is not None:
        done = stored.count()
        more = f" (up to {total + extra} with adaptive repeats)" if extra else ""
        progress.message(f"resuming study #{study_id}: {done} tests done" if study.search is not None
                         else f"resuming study #{study_id}: {done} of {done + total} tests done, {total} to run{more}")
    clock = RunClock(study, resolved, target, left, per_slot)
    if clock.costly:
        n = len(clock.costly)
        progress.message(f"the time below counts {n} reboot(s) or VM restart(s) at the most the run waits for each "
                         "(reboot_timeout, reconnect_timeout): an upper bound until the first is behind, then as long as it took")
    # the bar's total and time are the same plan: the tests up front (adaptive rounds add to both as they come)
    if sized is not None:
        progress.start(study, *sized)
    else:
        progress.start(study, total, clock.seconds_left())

    def step(slot: Slot) -> None:
        runner.run(slot)
        clock.slot_done(slot, runner.last_seconds, runner.last_setup)
        progress.eta(clock.tests_left(), clock.seconds_left())

    try:
        with sigterm_as_interrupt():
            if study.search is not None:  # the search decides what runs (run/search_trials.py)
                outcome.search = drive_search(runner, spec_text or "", spec_file or "<study>")
            for group in groups:  # a group's tests, adaptive rounds included, before the next group's reboot or VM restart
                for slot in group:
                    if id(slot) in todo:
                        step(slot)
                if study.repeat.adaptive and study.search is None:
                    _adaptive_rounds(study, runner, sorted({s.point.index for s in group}), step)
            if cross_check is not False:
                from .cross_check import cross_check as run_cross_check  # noqa: PLC0415

                outcome.cross_checks = run_cross_check(runner, study_id, None if cross_check is True else list(cross_check))
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        try:
            if knobs is not None:
                outcome.warnings += knobs.restore_all()
        finally:
            try:
                outcome.warnings += access.close()  # the hosts' credential files, while they are reachable
            finally:
                target.close()
                outcome.warnings += [w for w in target.warnings if w not in target_said]  # what it found since (could not delete...)
                if status == "interrupted":  # a Ctrl-C between a spawn and its bookkeeping must not leave a tool running
                    for pid in started_by({owner_token()}):
                        kill_pid(pid)
            store.finish_study(study_id, status)
            outcome.status = status
    return outcome


def _adaptive_rounds(study: Study, runner: PointRunner, points: list[int], step: Callable[[Slot], None]) -> None:
    """More rounds for these points (one group of run_groups: alike in every value whose
    change costs a reboot or a VM restart) until each one's 95% CI is within target_margin
    (or max_runs). Sequential order finishes one point before the next; otherwise rounds
    interleave. A resumed study goes on from its stored values: the round number is how
    many rounds its furthest point already had (each round gives every point still
    needing one a run)."""
    rep = study.repeat
    groups = [[i] for i in points] if rep.order == "sequential" else [points]
    for group in groups:
        round_no = max(0, max(len(runner.values[i]) for i in group) - rep.min_counted)
        while need := adaptive_rounds(rep, {i: runner.values[i] for i in group}, round_no):
            for idx in need:
                point = runner.ctx.by_index[idx].point
                step(Slot(point, runner.last_run.get(idx, rep.warmup - 1) + 1, False))
            round_no += 1


def preflight(study: Study, resolved: list[ResolvedPoint], target: Target) -> dict[str, str]:
    """Check every tool the study needs is installed on its hosts (each engine's workload
    kind says where and how); return versions by engine."""
    versions: dict[str, str] = {}
    for rp in resolved:
        engine = str(rp.workload.engine)
        if engine not in versions:
            mine = [r for r in resolved if r.workload.engine == engine]
            versions[engine] = workload_run(rp.workload).preflight(engine, mine, target)
    return versions


def _check_offline(study: Study, resolved: list[ResolvedPoint], spec_text: str | None, spec_file: str | None) -> None:
    """The knobs' checks that need no connection (knobs/offline.py), the ones loading the
    file runs: again here for a Study made without loading a file."""
    from ..knobs.offline import check_offline  # noqa: PLC0415

    check_offline(study, resolved, spec_text or "", spec_file or "<study>")


def _journal_gate(study: Study, restore_first: bool) -> list[str]:
    """No unrestored change on this study's hosts (or restore them first); notes for the rest."""
    from ..knobs.gate import journal_gate  # noqa: PLC0415

    return journal_gate(study.knobs is not None, restore_first, study=study)


def _knob_precheck(study: Study, target: Target, resolved: list[ResolvedPoint], spec_text: str | None, spec_file: str | None) -> list[str]:
    """Before anything changes: every knob of every point valid (the journal gate ran already)."""
    from ..knobs.precheck import precheck  # noqa: PLC0415

    return precheck(study, target, resolved, spec_text or "", spec_file or "<study>", gate=False)


def _knob_session(study: Study, target: Target, study_id: int, progress: Progress) -> KnobLayer | None:
    """The knobs layer (issue 4) when the study sets knobs; None otherwise. Its reboots, VM
    restarts and link resets are said on the progress as they start."""
    if study.knobs is None:
        return None
    from ..knobs.apply import KnobSession  # noqa: PLC0415 - optional layer

    return KnobSession(study, target, study_id, announce=progress.message)
