"""`nettune.run_study`: a study from a path, TOML text or a parsed `Study`, run into a
results database and analysed, the same in a script, a Jupyter cell and a worker thread.

Where it runs. pyroute2's netlink sockets run their own asyncio loop on the calling
thread and fail on a thread whose loop is already running ("This event loop is already
running"): a Jupyter cell's. There the study runs on a thread of its own, which has no
loop; the cell's thread waits for it, replays its progress (a bar or a callback runs in
the cell) and turns an interrupt (the notebook's stop button, SIGTERM, SIGHUP) into a stop
request: the study ends after the test in flight as `nettune run` does on Ctrl-C
(settings restored, lab removed, the study marked interrupted) and KeyboardInterrupt is
raised in the cell. Elsewhere the study runs on the calling thread: in the main thread
signals unwind it (run/study.py), in another thread nothing installs signal handlers.

The results database is opened by the thread that writes it and closed before returning
(an SQLite connection belongs to its thread); the analysis is read afterwards through a
read-only `Store`.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

# the run layer, the analysis and pyroute2 are loaded when a study runs: `from nettune
# import run_study` stays cheap
if TYPE_CHECKING:
    from ..run.context import Outcome, Progress
    from ..studyfile.models import Study

StudyInput = Union["Study", str, "os.PathLike[str]"]


def read_study(study: StudyInput) -> tuple[Study, str | None, str | None]:
    """(the parsed study, its text, its file name): a `Study` as given, a string with a line
    break as TOML text, anything else as a path to a study file."""
    from ..plan.study_file import load_study, parse_study
    from ..studyfile.models import Study

    if isinstance(study, Study):
        return study, None, None
    if isinstance(study, str) and "\n" in study:
        return parse_study(study, "<text>"), study, "<text>"
    if not isinstance(study, (str, os.PathLike)):
        raise TypeError(f"study={study!r}: give a path to a study file, the file's TOML text, or a nettune.Study")
    path = Path(study)
    if not path.is_file():
        raise FileNotFoundError(2, "no study file here (give a path, the TOML text, or a nettune.Study)", str(path))
    return load_study(path), path.read_text(), str(path)


class StudyRun:
    """One call of run_study: what to run, where, and how it reports."""

    def __init__(self, study: Study, text: str | None, file: str | None, db: Path, options: dict[str, Any]):
        self.study, self.text, self.file, self.db, self.options = study, text, file, db, options

    def run(self, progress: Progress, stop: threading.Event | None = None) -> Outcome:
        """The study on this thread, into a database this thread opens and closes."""
        from ..run.study import run_study as run_into
        from ..store.writer import StoreWriter

        with StoreWriter(self.db) as store:
            return run_into(self.study, store, self.text, self.file, progress=progress, stop=stop, **self.options)

    def on_own_thread(self, progress: Progress) -> Outcome:
        """The study on a new thread without an event loop; this thread replays its
        progress and asks it to stop on an interrupt, then waits for it to wind down."""
        from ..run.study import sigterm_as_interrupt
        from .progress import Relay, say

        relay, stop = Relay(), threading.Event()
        box: dict[str, Any] = {}

        def body() -> None:
            try:
                box["outcome"] = self.run(relay, stop)
            except BaseException as e:  # handed to the caller's thread
                box["error"] = e
            finally:
                relay.finish()

        worker = threading.Thread(target=body, name=f"nettune-study-{self.study.name}")
        worker.start()
        with sigterm_as_interrupt():  # the main thread (a kernel's): SIGTERM and SIGHUP unwind as Ctrl-C does
            while True:
                try:
                    if not relay.pump(progress, 0.25):
                        break
                except KeyboardInterrupt:
                    if not stop.is_set():
                        say(f"{self.study.name}: interrupted; stopping after the test in flight, then restoring the "
                            "settings and removing what the study set up")
                    else:
                        say(f"{self.study.name}: still winding down (settings, lab); waiting for it")
                    stop.set()
        worker.join()
        if "error" in box:
            raise box["error"]
        out: Outcome = box["outcome"]
        return out


def run_study(study: StudyInput, db: str | os.PathLike[str] = "nettune.db", *, progress: Any = None,
              resume: bool = False, restore_first: bool = False, doctor: bool = True, analysis: bool = True) -> Outcome:
    """Run a study into a results database and return its `Outcome`, analysed.

    `study`: a path to a study file, the file's TOML text (a string with a line break), or
    a parsed `nettune.Study`. `db`: the results database (created if missing). `progress`:
    None (silent; the notes are still in `outcome.messages`), True (a progress bar: in
    Jupyter an HTML bar in the cell, elsewhere rich's bar on stderr), a callable given a
    `nettune.ProgressUpdate` per event, or an object with the `nettune.Progress` methods.
    `resume`: continue the latest interrupted study of this name and text instead;
    `restore_first`: put back what a killed run left before starting; `doctor`: audit the
    hosts first (stored with the host facts); `analysis`: analyse the study when it ends
    (`outcome.analysis`, as `nettune analyze` does).

    Works in a script, in a Jupyter cell (the study runs on a thread of its own there) and
    from a worker thread. An interrupt ends the study after the test in flight with the
    settings restored and the lab removed, the study marked interrupted, and raises
    KeyboardInterrupt; a bad study file raises `SpecError` before anything is touched.

    Example::

        import nettune
        out = nettune.run_study("examples/quick.toml", db="results.db", progress=True)
        print(out.status, out.tests, out.analysis.headline[0])
        runs = nettune.results("results.db").runs(out)
    """
    from ..run.study import loop_running
    from .progress import to_progress

    if not isinstance(db, (str, os.PathLike)):  # nettune before 0.1's run_study(study, store)
        raise TypeError(f"db={db!r}: give the results database's path (run_study opens and closes it)")
    spec, text, file = read_study(study)
    options = {"resume": resume, "restore_first": restore_first, "doctor": doctor}
    job = StudyRun(spec, text, file, Path(db), options)
    shown, close = to_progress(progress)
    try:
        outcome = job.on_own_thread(shown) if loop_running() else job.run(shown)
    finally:
        close()
    outcome.db = Path(db)
    if analysis:
        attach_analysis(outcome)
    return outcome


def attach_analysis(outcome: Outcome) -> None:
    """The study analysed into `outcome.analysis` (or why not, in `analysis_error`)."""
    from ..analysis.analyze import analyze
    from ..analysis.data import load
    from ..errors import NettuneError
    from ..store.sqlite import Store

    assert outcome.db is not None
    try:
        with Store(outcome.db) as store:
            outcome.analysis = analyze(load(store, outcome.study_id))
    except NettuneError as e:
        outcome.analysis, outcome.analysis_error = None, str(e)
