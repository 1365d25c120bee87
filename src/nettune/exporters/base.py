"""The exporter family: every file or text nettune writes from a table of runs or points
(`nettune results --format`, `nettune export`, the tables of `nettune report`).

A member is one file in this package with an `EXPORTER` object: its `name` (what
`--format` takes), the file `suffix`, whether it writes bytes (`binary`: then it needs a
file), and one `write(table, out)` method. Add a format by adding a file and its line in
`MEMBERS`. Members are imported when first asked for, so `nettune results` does not load
pandas for a CSV.
"""
from __future__ import annotations

import importlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from ..errors import NettuneError


@dataclass
class Table:
    """What an exporter writes: named columns and one dict per row.

    Values are what the format can carry: JSON keeps nested dicts and lists, the flat
    formats are given flat values. `left` names the columns of prose (left-aligned in
    Markdown); the others are numbers, right-aligned."""

    columns: list[str]
    rows: list[dict[str, Any]]
    left: frozenset[str] = field(default_factory=frozenset)

    def values(self, row: dict[str, Any]) -> list[Any]:
        return [row.get(c) for c in self.columns]


class Exporter(Protocol):
    name: str  # what --format takes
    suffix: str  # file suffix, with the dot
    binary: bool  # writes bytes: needs a file (--out)

    def write(self, table: Table, out: IO[str] | Path) -> None:
        """Write `table` to a text stream, or to the file `out` (created or replaced)."""
        ...


class TextExporter:
    """Base of the text formats: render the table once, write it to a stream or a file."""

    name = ""
    suffix = ""
    binary = False

    def text(self, table: Table) -> str:
        raise NotImplementedError

    def write(self, table: Table, out: IO[str] | Path) -> None:
        text = self.text(table)
        if isinstance(out, Path):
            out.write_text(text)
        else:
            out.write(text)


# name -> module of this package holding EXPORTER (the registry)
MEMBERS = {"csv": ".csv", "json": ".json", "markdown": ".markdown", "parquet": ".parquet"}


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
        exporter.write(table, out)
    except OSError as e:
        raise NettuneError(f"--out {out}: cannot write ({e.strerror})") from None
    return None
