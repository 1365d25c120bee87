"""The records one study's run passes between its stages: what the caller watches
(Progress), what it gets back (Outcome), and what every slot of the study shares
(RunContext, built once by run_study and read by the PointRunner and --cross-check)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..engines.choice import Choice
from ..engines.result import TestResult
from ..plan.points import ResolvedPoint, Slot
from ..store.base import ResultStore
from ..studyfile.models import Study
from ..targets.base import Target
from .credentials import StudyAccess
from .engine_choice import HostAnswers
from .resume import Stored


class Progress(Protocol):
    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None: ...
    def test_start(self, slot: Slot, index: int) -> None: ...
    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None: ...
    def message(self, text: str) -> None: ...

    def eta(self, tests_left: int, seconds_left: float) -> None:
        """After each slot: what is left, re-estimated from the tests so far (run/plan_time.py)."""
        ...


class NoProgress:
    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None: ...
    def test_start(self, slot: Slot, index: int) -> None: ...
    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None: ...
    def message(self, text: str) -> None: ...
    def eta(self, tests_left: int, seconds_left: float) -> None: ...


@dataclass
class Outcome:
    study_id: int
    status: str
    tests: int = 0
    failed: int = 0
    warnings: list[str] = field(default_factory=list)
    cross_checks: list[dict[str, Any]] = field(default_factory=list)  # --cross-check: side-by-side rows and verdicts


class KnobLayer(Protocol):
    """The knobs layer as a run uses it (knobs/apply.py KnobSession, loaded only when the
    study sets knobs): each point's settings applied, its notes, everything put back."""

    def apply_point(self, rp: ResolvedPoint) -> dict[str, dict[str, Any]]: ...

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
