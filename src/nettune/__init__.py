"""nettune: run network performance studies from one file.

Notebook use::

    from nettune import load_study, run_study, Store
    study = load_study("examples/quick.toml")
    with Store("nettune.db") as store:
        outcome = run_study(study, store)
        rows = store.runs(outcome.study_id)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    from .engines.result import TestResult
    from .errors import NettuneError, SpecError
    from .plan.points import Point, expand
    from .run.study import Outcome, run_study
    from .plan.study_file import load_study, parse_study
    from .studyfile.models import Study
    from .store.sqlite import Store

# Imported lazily so `import nettune` stays cheap (the CLI starts in well under a second).
_EXPORTS = {
    "load_study": ".plan.study_file",
    "parse_study": ".plan.study_file",
    "Study": ".studyfile.models",
    "expand": ".plan.points",
    "Point": ".plan.points",
    "run_study": ".run.study",
    "Outcome": ".run.study",
    "Store": ".store.sqlite",
    "TestResult": ".engines.result",
    "NettuneError": ".errors",
    "SpecError": ".errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module 'nettune' has no attribute {name!r}")
