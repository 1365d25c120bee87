"""CSV: a header row, then one line per row; missing values are empty, lists of text
are joined with '; ', numbers are written as they are stored (an integer stays an
integer). Lines end in '\\n'."""
from __future__ import annotations

import csv
import io
from typing import Any

from .base import Table, TextExporter


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, list):
        return "; ".join(str(x) for x in v)
    return v


class CsvExporter(TextExporter):
    name = "csv"
    suffix = ".csv"

    def text(self, table: Table) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(table.columns)
        for row in table.rows:
            w.writerow([_cell(v) for v in table.values(row)])
        return buf.getvalue()


EXPORTER = CsvExporter()
