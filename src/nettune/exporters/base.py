"""The exporter family: every file or text nettune writes from a table of runs or points
(`nettune results --format`, `nettune export`, the tables of `nettune report`).

A member is one file in this package with an `EXPORTER` object, subclassing
`ExporterBase` (text formats: `TextExporter`): its `name` (what `--format` takes), the file
`suffix`, whether it writes bytes (`binary`: then it needs a file), which table of runs
`nettune results` gives it (`shape`), and one `write(table, out)` method. Add a format by
adding a file and its line in `MEMBERS`: `results --format`, `export --format` and their
messages take their choices from `MEMBERS`. Members are imported when first asked for, so
`nettune results` does not load pandas for a CSV.
"""
from __future__ import annotations

import importlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Literal, Protocol

from ..errors import NettuneError
from ..store.private_file import private_file


@dataclass
class Table:
    """What an exporter writes: named columns and one dict per row.

    Values are what the format can carry: JSON keeps nested dicts and lists, the flat
    formats are given flat values. `left` names the columns of prose (left-aligned in
    Markdown); the others are numbers, right-aligned."""

    columns: list[str]
    rows: list[dict[str, Any]]
    left: frozenset[str] = field(default_factory=frozenset)
    units: dict[str, str] = field(default_factory=dict)  # column -> unit (Parquet keeps them: df.attrs["units"])

    def values(self, row: dict[str, Any]) -> list[Any]:
        return [row.get(c) for c in self.columns]


# The table of runs `nettune results` gives a format: "flat" (one plain value per cell, the
# point's parameters as the first columns), "nested" (the point and per-stream results kept
# as dicts and lists), or "readable" (the terminal table's columns, formatted for people).
Shape = Literal["flat", "nested", "readable"]


class Exporter(Protocol):
    name: str  # what --format takes
    suffix: str  # file suffix, with the dot
    binary: bool  # writes bytes: needs a file (--out)
    shape: Shape  # the table of runs `nettune results` gives it

    def write(self, table: Table, out: IO[str] | Path) -> None:
        """Write `table` to a text stream, or to the file `out` (created or replaced)."""
        ...


class ExporterBase:
    """Defaults for every exporter: a text format given flat values."""

    name = ""
    suffix = ""
    binary = False
    shape: Shape = "flat"

    def write(self, table: Table, out: IO[str] | Path) -> None:
        raise NotImplementedError


class TextExporter(ExporterBase):
    """Base of the text formats: render the table once, write it to a stream or a file."""

    def text(self, table: Table) -> str:
        raise NotImplementedError

    def write(self, table: Table, out: IO[str] | Path) -> None:
        text = self.text(table)
        if isinstance(out, Path):
            out.write_text(text)
        else:
            out.write(text)


# name -> module of this package holding EXPORTER (the registry), in the order messages list them
MEMBERS = {"markdown": ".markdown", "csv-raw": ".csv_raw", "csv": ".csv", "json": ".json", "parquet": ".parquet"}


def one_of(names: Iterable[str]) -> str:
    """"a, b or c": the choices of a --format, for its help and its error message."""
    *first, last = names
    return f"{', '.join(first)} or {last}" if first else last


def get_exporter(name: str) -> Exporter:
    try:
        module = MEMBERS[name]
    except KeyError:
        raise NettuneError(f"unknown format {name!r}: use {', '.join(MEMBERS)}") from None
    member: Exporter = importlib.import_module(module, __package__).EXPORTER
    return member


def export_table(table: Table, fmt: str, out: Path | None) -> str | None:
    """Write `table` as `fmt` to the file `out`; without `out` return the text."""
    exporter = get_exporter(fmt)
    if out is None:
        if exporter.binary:
            raise NettuneError(f"--format {fmt} is binary: give --out FILE{exporter.suffix}")
        buf = io.StringIO()
        exporter.write(table, buf)
        return buf.getvalue()
    try:
        private_file(out)  # a new export is the owner's alone (0600); an existing file keeps its mode
        exporter.write(table, out)
    except OSError as e:
        raise NettuneError(f"--out {out}: cannot write ({e.strerror})") from None
    return None
