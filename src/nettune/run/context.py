"""The records one study's run passes between its stages: what the caller watches
(Progress), what it gets back (Outcome), and what every slot of the study shares
(RunContext, built once by run_study and read by the PointRunner and --cross-check)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..engines.choice import Choice
from ..engines.result import TestResult
from ..plan.points import ResolvedPoint, Slot
from ..search.answer import Answer
from ..store.base import ResultStore
from ..studyfile.models import Study
from ..targets.base import Target
from .credentials import StudyAccess
from .engine_choice import HostAnswers
from .resume import Stored

if TYPE_CHECKING:  # the analysis is loaded only when a caller analyses (nettune.run_study)
    from ..analysis.verdicts import Analysis


class Progress(Protocol):
    """What a running study tells its watcher, in the thread that watches it.

    `nettune.run_study(..., progress=obj)` calls these five methods (the CLI's progress bar
    is one); a plain callable or `progress=True` is adapted to it (nettune/api/progress.py).
    Every method must return quickly: the study waits for it. Example::

        class Log:
            def start(self, study, total_tests, expected_seconds):
                print(f"{study.name}: {total_tests} tests, about {expected_seconds:.0f} s")
            def test_start(self, slot, index):
                pass
            def test_end(self, slot, result, seconds):
                print(slot.point.label(), slot.run, "ok" if result.ok else result.error)
            def message(self, text):
                print(text)
            def eta(self, tests_left, seconds_left):
                pass

        nettune.run_study("examples/quick.toml", progress=Log())
    """

    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None:
        """Before the first test: the study, how many tests it plans (adaptive repeats: the
        most it may run) and a first estimate of its seconds."""

    def test_start(self, slot: Slot, index: int) -> None:
        """A test begins: its slot (point, run number, warm-up or not), tests begun before it."""

    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None:
        """A test ended and is stored: its result (ok or failed, with the error) and how long it took."""

    def message(self, text: str) -> None:
        """A note for the user (a setting that did not read back, a host audit's summary, ...)."""

    def eta(self, tests_left: int, seconds_left: float) -> None:
        """After each slot: what is left, re-estimated from the tests so far (run/plan_time.py)."""
        ...


class NoProgress:
    """Says nothing (run_study's default)."""

    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None: ...
    def test_start(self, slot: Slot, index: int) -> None: ...
    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None: ...
    def message(self, text: str) -> None: ...
    def eta(self, tests_left: int, seconds_left: float) -> None: ...


class Recording:
    """Passes every call on to `inner` and keeps the messages (Outcome.messages)."""

    def __init__(self, inner: Progress, said: list[str]):
        self.inner, self.said = inner, said

    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None:
        self.inner.start(study, total_tests, expected_seconds)

    def test_start(self, slot: Slot, index: int) -> None:
        self.inner.test_start(slot, index)

    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None:
        self.inner.test_end(slot, result, seconds)

    def message(self, text: str) -> None:
        self.said.append(text)
        self.inner.message(text)

    def eta(self, tests_left: int, seconds_left: float) -> None:
        self.inner.eta(tests_left, seconds_left)


@dataclass
class Outcome:
    """What `run_study` gives back: the study's id in the database and how it ended.

    `status` is "done" (an interrupted or failed study raises instead); `tests` and
    `failed` count the tests this call ran; `warnings` are what restoring the settings
    said; `messages` every note the run made (also when it ran silently); `analysis` the
    study analysed as `nettune analyze` does (`nettune.run_study` fills it; None with
    `analysis_error` saying why, e.g. no test succeeded). Example::

        out = nettune.run_study("examples/quick.toml", db="results.db")
        out.study_id, out.status, out.tests, out.failed
        out.analysis.best.mean, out.analysis.unit      # e.g. 9.4, "Gbit/s"
        nettune.results(out.db).runs(out)                # the runs as a DataFrame
    """

    study_id: int
    status: str
    tests: int = 0
    failed: int = 0
    warnings: list[str] = field(default_factory=list)
    cross_checks: list[dict[str, Any]] = field(default_factory=list)  # --cross-check: side-by-side rows and verdicts
    search: Answer | None = None  # [search]: its answer (search/answer.py)
    messages: list[str] = field(default_factory=list)  # the notes the run made (Progress.message), in order
    name: str = ""  # the study's name
    db: Path | None = None  # the results database it is in (nettune.run_study)
    analysis: Analysis | None = None  # nettune.run_study: the study analysed (analysis/verdicts.py)
    analysis_error: str | None = None  # why there is no analysis


class KnobLayer(Protocol):
    """The knobs layer as a run uses it (knobs/apply.py KnobSession, loaded only when the
    study sets knobs): each point's settings applied, its notes, everything put back."""

    def apply_point(self, rp: ResolvedPoint) -> dict[str, dict[str, Any]]: ...

    # place -> what the last point's knobs decide beyond their own values, read once all
    # were set (a tuned profile's and an amd_pstate mode's governor and EPP)
    read_back: dict[str, dict[str, Any]]

    def take_messages(self) -> list[str]: ...

    def restore_all(self) -> list[str]: ...


@dataclass
class RunContext:
    """What every slot of one study shares."""

    study: Study
    store: ResultStore
    target: Target
    knobs: KnobLayer | None
    versions: dict[str, str]  # engine -> the tool version its preflight read
    by_index: dict[int, ResolvedPoint]  # point index -> the point, its engine and processes concrete
    point_ids: dict[int, int]  # point index -> its row in the store
    progress: Progress
    outcome: Outcome
    stored: Stored  # what the study already holds (a resumed study's tests)
    per_slot: dict[int, int]  # point index -> tests one slot of it stores
    access: StudyAccess | None = None  # servers' binding and credentials
    choices: dict[int, Choice] = field(default_factory=dict)  # point index -> what engine = "auto" picked
    answers: HostAnswers | None = None  # what the hosts said before the study (versions, cores, machine)
    doctor: bool = True  # audit the hosts once before the first point's knobs
    stop: threading.Event | None = None  # set by another thread: end after the test in flight, as if interrupted
