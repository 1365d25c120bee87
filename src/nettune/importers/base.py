"""The importer family: files written by a tool outside nettune that become runs.

A member is one file in this package with an `IMPORTER` object subclassing `ImporterBase`:
its `name`, what it reads (`describes`, for messages), `detect(text)` (is this text its
format?) and `read(path, text, hints)` -> the `TestResult` a live test of that tool would
have given, through the same parser (engines.*). `MEMBERS` (the registry) lists them in the
order they are asked; the first whose `detect` says yes reads the file. Members are
imported when first asked for, as exporters are. Checking the file (size, encoding, a
failed or cut-off report) before and storing it after is `intake.py`'s job.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from ..engines.result import SideOutput, TestResult
from ..errors import NettuneError
from ..studyfile.models import Workload

# --set keys that also tell the parser what the test was
WORKLOAD_HINTS = ("protocol", "parallel", "reverse", "bidir", "duration")

Hints = dict[str, Any]  # the --set values (the point's parameters)


class Importer(Protocol):
    name: str
    describes: str  # "iperf3 JSON (-J)": what a file that no member recognises is not
    auto: bool
    logs: bool  # a tool's log: needs a throughput, its streams are checked against --set parallel

    def detect(self, text: str) -> bool:
        """Whether `text` (a whole file, decoded) is in this importer's format."""
        ...

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        """The run the file records; NettuneError (one line naming `path`) if it cannot be read."""
        ...

    def split(self, text: str) -> list[tuple[str, str]]:
        """The tests in one file, in order, as (the lines before it, the test's own text):
        a script that appended several tests to one log (study A) or a JSON array."""
        ...

    def point(self, text: str) -> dict[str, Any]:
        """Point parameters written in one test's text (split's second part)."""
        ...


class ImporterBase:
    """Defaults for every importer: recognises nothing, so a member that is registered but
    not finished is never asked to read."""

    name = ""
    describes = ""
    auto = True  # asked by detect(); False: only when the user names it (a table with --columns)
    logs = True  # False: a table, whose columns are whatever the user measured

    def detect(self, text: str) -> bool:
        return False

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        raise NotImplementedError

    def split(self, text: str) -> list[tuple[str, str]]:
        return [("", text)]  # one test per file

    def point(self, text: str) -> dict[str, Any]:
        return {}  # parameters the test's own text carries (a table row's parameter columns)


# name -> module of this package holding IMPORTER (the registry), in the order they are asked:
# iperf3's JSON first, as it is recognised by its first character
MEMBERS = {"iperf3-json": ".iperf3_json", "iperf3-text": ".iperf3_text", "iperf2-text": ".iperf2_text", "iperf2-csv": ".iperf2_csv",
           "table-csv": ".table_csv"}


def side(path: Path, text: str, started: float | None = None, role: str = "client") -> SideOutput:
    """The file as one side's raw output: stored verbatim with the run."""
    return SideOutput(role=role, host="imported", argv=["nettune-import", str(path)], stdout=text, started=started, exit_code=0)


def workload(path: Path, engine: str, hints: Hints, **found: Any) -> Workload:
    """The workload the file ran: what it says (`found`), overridden by the --set hints."""
    data = {"engine": engine} | {k: v for k, v in found.items() if v is not None}
    data |= {k: hints[k] for k in WORKLOAD_HINTS if k in hints}  # checked by check_args
    try:
        return Workload.model_validate(data)
    except ValidationError as e:  # so a value read from the file itself is implausible
        err = e.errors(include_url=False)[0]
        field = str(err["loc"][0]) if err["loc"] else "test"
        shown = repr(found.get(field))[:40]
        raise NettuneError(f"{path}: the report's {field} ({shown}) is not usable: {err['msg'].removeprefix('Value error, ')}") from None


def importers() -> list[Importer]:
    """The members of `MEMBERS`, in the order they are asked."""
    members: list[Importer] = [importlib.import_module(module, __package__).IMPORTER for module in MEMBERS.values()]
    return members
