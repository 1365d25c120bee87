"""What `nettune run` says when a study ends, as data: the stored runs (for the table),
the counts, the analysis' five-line summary (best point, what mattered or limited it, the
recommended point, how sure, what next), and the commands to look further. The CLI (cli/run_commands.py) only prints a RunSummary."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NettuneError
from ..store.locate import describe, is_url
from ..store.postgres import shown


@dataclass
class RunSummary:
    name: str
    study_id: int
    runs: list[Any]  # every stored run of the study (a resumed study's earlier ones too)
    tests: int  # tests this run made
    failed: int
    resumed: bool
    db: str  # where the results are: the file's absolute path, or the URL without its password
    warnings: list[str] = field(default_factory=list)
    headline: list[str] = field(default_factory=list)  # the analysis' summary but its next step; [] if no run succeeded
    next_commands: list[str] = field(default_factory=list)
    cross_checks: list[dict[str, Any]] = field(default_factory=list)  # --cross-check: point label, rows, verdict


def summarize(store: Any, outcome: Any, name: str, db: str | Path, resumed: bool = False) -> RunSummary:
    """The summary of a finished (or resumed) study, read back from the store."""
    where = describe(db)
    opt = f" --db {shlex.quote(shown(str(db)) if is_url(db) else str(db))}"  # a password stays out of the terminal
    lines = headline(store, outcome.study_id)
    step = [ln.removeprefix("next: ") for ln in lines if ln.startswith("next: ")]  # said once, with the commands
    return RunSummary(
        name=name, study_id=outcome.study_id, runs=store.runs(outcome.study_id), tests=outcome.tests,
        failed=outcome.failed, resumed=resumed, db=where, warnings=list(outcome.warnings),
        headline=[ln for ln in lines if not ln.startswith("next: ")], cross_checks=list(outcome.cross_checks),
        next_commands=step + [f"nettune analyze {name}{opt}", f"nettune report {name}{opt} --out report/"],
    )


def headline(store: Any, study_id: int) -> list[str]:
    """The analysis' summary (analysis/digest.py: best point, what mattered or limited it,
    the recommended point, how sure, what next); nothing if no run succeeded."""
    from ..analysis.analyze import analyze  # noqa: PLC0415 - scipy: only once a study ran
    from ..analysis.data import load  # noqa: PLC0415

    try:
        return list(analyze(load(store, str(study_id))).summary)
    except NettuneError:
        return []
