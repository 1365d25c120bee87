"""CSV: a header row, then one line per row; missing values are empty, lists of text
are joined with '; ', numbers are written as they are stored (an integer stays an
integer). Lines end in '\\n'.

A text cell a spreadsheet would run as a formula (it begins with =, +, -, @, a tab or a
carriage return, after any 's of its own) gets a leading ' (OWASP, CSV Injection): a
host name or an error text from a remote host must not become a formula on the machine
that opens the file. `nettune import` takes exactly that ' off again (unguard).
`--format csv-raw` writes every cell as it is (csv_raw.py)."""
from __future__ import annotations

import csv
import io
from typing import Any

from .base import Table, TextExporter

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def guard(text: str) -> str:
    """A text cell a spreadsheet cannot run as a formula (see the module doc)."""
    return "'" + text if text.lstrip("'").startswith(FORMULA_START) else text


def unguard(text: str) -> str:
    """The text guard() was given (for `nettune import` of a CSV export): guard adds one '
    to every text that begins with a trigger after its own 's, and only to those."""
    return text[1:] if text.startswith("'") and text.lstrip("'").startswith(FORMULA_START) else text


def _cell(v: Any, guarded: bool = True) -> Any:
    if v is None:
        return ""
    if isinstance(v, list):
        v = "; ".join(str(x) for x in v)
    return guard(v) if guarded and isinstance(v, str) else v


class CsvExporter(TextExporter):
    name = "csv"
    suffix = ".csv"
    guarded = True  # cells a spreadsheet would run as formulas get a leading ' (csv-raw: False)

    def text(self, table: Table) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(table.columns)
        for row in table.rows:
            w.writerow([_cell(v, self.guarded) for v in table.values(row)])
        return buf.getvalue()


EXPORTER = CsvExporter()
