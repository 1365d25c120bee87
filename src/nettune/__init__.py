"""nettune: run network performance studies from one file, then read them as DataFrames.

Notebook use (docs/api.md walks through it)::

    import nettune
    out = nettune.run_study("examples/quick.toml", db="results.db", progress=True)
    res = nettune.results("results.db")
    runs = res.runs(out)            # one row per test, typed columns, units in attrs
    series = res.series(out)        # one row per interval and stream
    res.analysis(out).headline      # what `nettune analyze` says first
    res.compare("before", "after").frame()

`dir(nettune)` lists the public names; each has a docstring with an example. Everything
else is internal and may change.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    from .analysis.verdicts import Analysis as Analysis
    from .api.progress import ProgressUpdate as ProgressUpdate
    from .api.results import Results as Results, StudyComparison as StudyComparison, results as results
    from .api.run import run_study as run_study
    from .engines.result import TestResult as TestResult
    from .errors import NettuneError as NettuneError, SpecError as SpecError
    from .plan.points import Point as Point, expand as expand
    from .plan.study_file import load_study as load_study, parse_study as parse_study
    from .run.context import Outcome as Outcome, Progress as Progress
    from .store.records import RunRecord as RunRecord
    from .store.sqlite import Store as Store
    from .studyfile.models import Study as Study

# Imported when first used, so `import nettune` (and the CLI) stays fast.
_EXPORTS = {
    "run_study": ".api.run",
    "results": ".api.results",
    "Results": ".api.results",
    "StudyComparison": ".api.results",
    "ProgressUpdate": ".api.progress",
    "Progress": ".run.context",
    "Outcome": ".run.context",
    "Analysis": ".analysis.verdicts",
    "Store": ".store.sqlite",
    "RunRecord": ".store.records",
    "TestResult": ".engines.result",
    "load_study": ".plan.study_file",
    "parse_study": ".plan.study_file",
    "Study": ".studyfile.models",
    "expand": ".plan.points",
    "Point": ".plan.points",
    "NettuneError": ".errors",
    "SpecError": ".errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = importlib.import_module(_EXPORTS[name], __name__).__dict__[name]
        globals()[name] = value  # once: later look-ups skip this function
        return value
    raise AttributeError(f"module 'nettune' has no attribute {name!r}")


def __dir__() -> list[str]:
    """Exactly the public names (the submodules the package loads on the way are internal)."""
    return list(__all__)
