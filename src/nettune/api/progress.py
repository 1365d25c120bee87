"""What `nettune.run_study(progress=...)` accepts, made into the run layer's `Progress`
(run/context.py): nothing (silent), `True` (a progress bar: HTML in Jupyter, rich on a
terminal's stderr), a callable (given a `ProgressUpdate` per event), or a `Progress`.

A study run on a thread of its own (inside Jupyter, run/study.py cannot use the cell's
thread) reports through `Relay`: its calls are queued and replayed in the caller's
thread, so a bar or a callback always runs where the user's code runs.
"""
from __future__ import annotations

import html
import queue
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..engines.result import TestResult
from ..plan.points import Slot
from ..run.context import NoProgress, Progress
from ..run.workloads import run_of
from ..studyfile.models import Study


@dataclass(frozen=True)
class ProgressUpdate:
    """One event of a running study, as a progress callback receives it.

    `event` is "start" (before the first test), "test_start", "test_end", "message" or
    "eta" (after each slot: `seconds` left, re-estimated from the tests so far);
    `done` tests have ended out of `total` planned (adaptive repeats: the most it may
    run); `point` and `run` say which test (None for "start" and "message"); a "test_end"
    has `ok` and `value` (the kind's primary value as text, "9.41 Gbit/s", or the error);
    `text` is one line saying all of it. Example::

        def show(u: nettune.ProgressUpdate) -> None:
            if u.event == "test_end":
                print(f"{u.done}/{u.total} {u.text}")

        nettune.run_study("examples/quick.toml", progress=show)
    """

    event: str
    study: str
    done: int
    total: int
    text: str
    point: dict[str, Any] | None = None
    run: int | None = None
    warmup: bool = False
    ok: bool | None = None
    value: str = ""
    seconds: float | None = None  # "start": the first estimate of the study's length; "test_end": the test's; "eta": left


def result_text(result: TestResult) -> str:
    """A test's primary value as text, or its error."""
    if not result.ok:
        return f"failed: {result.error or 'no reason given'}"
    return run_of(result.engine).result_text(result) or "ok"


def slot_text(slot: Slot) -> str:
    return slot.point.label() + (" (warm-up)" if slot.warmup else f" run {slot.run}")


class Counting:
    """Progress that counts tests and hands each event to `emit` as a ProgressUpdate."""

    def __init__(self, emit: Callable[[ProgressUpdate], None]):
        self.emit = emit
        self.name, self.done, self.total = "", 0, 0

    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None:
        self.name, self.total = study.name, total_tests
        self.emit(ProgressUpdate("start", self.name, 0, total_tests, f"{study.name}: {total_tests} tests, about "
                                 f"{expected_seconds:.0f} s", seconds=expected_seconds))

    def test_start(self, slot: Slot, index: int) -> None:
        self.emit(ProgressUpdate("test_start", self.name, self.done, self.total, slot_text(slot), dict(slot.point.params),
                                 slot.run, slot.warmup))

    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None:
        self.done += 1
        said = result_text(result)
        pair = f" {result.pair.pair}" if result.pair is not None and result.pair.pair else ""
        self.emit(ProgressUpdate("test_end", self.name, self.done, self.total, f"{slot_text(slot)}{pair}: {said}",
                                 dict(slot.point.params), slot.run, slot.warmup, result.ok, said, seconds))

    def message(self, text: str) -> None:
        self.emit(ProgressUpdate("message", self.name, self.done, self.total, text))

    def eta(self, tests_left: int, seconds_left: float) -> None:
        self.emit(ProgressUpdate("eta", self.name, self.done, self.total,
                                 f"{tests_left} tests left, about {seconds_left:.0f} s", seconds=seconds_left))


def in_jupyter() -> bool:
    """Whether this runs in a Jupyter kernel (rich's own detection)."""
    from rich.console import Console

    return Console().is_jupyter


class NotebookBar:
    """A progress bar in a notebook cell: one HTML display, updated in place (IPython's
    display handles; no widget library needed), its text form for plain frontends."""

    def __init__(self) -> None:
        from IPython.display import display

        self.started = time.monotonic()
        self.last, self.left = "", ""
        self.display = display
        self.handle: Any = None  # shown at the first event

    def _bundle(self, u: ProgressUpdate) -> dict[str, str]:
        total = max(u.total, u.done, 1)
        last = (f" · last: {self.last}" if self.last else "") + self.left
        plain = f"{u.study}: {u.done}/{u.total} tests{last}"
        page = (f'<div><b>{html.escape(u.study)}</b> <progress value="{u.done}" max="{total}" style="width:40%"></progress> '
                f"{u.done}/{u.total} tests <span style=\"color:gray\">{html.escape(last)}</span></div>")
        return {"text/plain": plain, "text/html": page}

    def __call__(self, u: ProgressUpdate) -> None:
        if u.event == "message":
            print(u.text)
            return
        if u.event == "test_end":
            self.last = u.text
        if u.event == "eta":
            self.left = f" · about {u.seconds:.0f} s left" if u.seconds is not None else ""
        if self.handle is None:
            self.handle = self.display(self._bundle(u), raw=True, display_id=True)
        else:
            self.handle.update(self._bundle(u), raw=True)


class TerminalBar:
    """rich's progress bar on stderr, a line per finished test (as `nettune run` shows)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True, emoji=False)  # names and values verbatim (`node:b:`)
        self.bar = Bar(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       console=self.console, transient=True)
        self.task: Any = None

    def __call__(self, u: ProgressUpdate) -> None:
        if u.event == "start":
            self.bar.start()
            self.task = self.bar.add_task(u.study, total=u.total)
        elif u.event == "test_start" and self.task is not None:
            self.bar.update(self.task, description=u.text)
        elif u.event == "test_end":
            self.console.print(f"  {u.text}", highlight=False, markup=False)
            if self.task is not None:
                self.bar.update(self.task, completed=u.done, total=max(u.total, u.done))
        elif u.event == "message":
            self.console.print(u.text, highlight=False, markup=False)

    def close(self) -> None:
        self.bar.stop()


class Shown:
    """The Progress for `progress=True` or a callable, and what ends it (the terminal bar)."""

    def __init__(self, progress: Any):
        self.bar: TerminalBar | None = None
        if progress is True:
            if in_jupyter():
                emit: Callable[[ProgressUpdate], None] = NotebookBar()
            else:
                self.bar = TerminalBar()
                emit = self.bar
        else:
            emit = progress
        self.progress = Counting(emit)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def to_progress(progress: Any) -> tuple[Progress, Callable[[], None]]:
    """run_study's `progress` argument as a Progress, and what to call when the run ends:
    None or False: silent; True: a bar; a callable: given a ProgressUpdate per event;
    anything else: an object with the Progress methods, used as it is."""
    if progress is None or progress is False:
        return NoProgress(), lambda: None
    if progress is True or callable(progress):
        shown = Shown(progress)
        return shown.progress, shown.close
    return progress, lambda: None


class Relay:
    """The Progress of a study run on another thread: every call is queued, and `pump`
    replays them in the waiting thread."""

    DONE = object()

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None:
        self.calls.put(lambda p: p.start(study, total_tests, expected_seconds))

    def test_start(self, slot: Slot, index: int) -> None:
        self.calls.put(lambda p: p.test_start(slot, index))

    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None:
        self.calls.put(lambda p: p.test_end(slot, result, seconds))

    def message(self, text: str) -> None:
        self.calls.put(lambda p: p.message(text))

    def eta(self, tests_left: int, seconds_left: float) -> None:
        self.calls.put(lambda p: p.eta(tests_left, seconds_left))

    def finish(self) -> None:
        self.calls.put(self.DONE)

    def pump(self, into: Progress, wait: float) -> bool:
        """Replay what is queued into `into`, waiting up to `wait` seconds for the first;
        False once the study's thread said it finished."""
        try:
            call = self.calls.get(timeout=wait)
        except queue.Empty:
            return True
        while True:
            if call is self.DONE:
                return False
            call(into)
            try:
                call = self.calls.get_nowait()
            except queue.Empty:
                return True


def say(text: str) -> None:
    """A line for the user while the study winds down after an interrupt."""
    print(text, file=sys.stderr, flush=True)
