"""CSV with every cell as it is stored: `--format csv-raw`, for a program that reads the
file, where the formula guard of `--format csv` (a leading ' on a text that begins with
=, +, -, @, a tab or a carriage return) would only be in the way. Do not open it in a
spreadsheet if the database came from someone else."""
from __future__ import annotations

from .csv import CsvExporter


class RawCsvExporter(CsvExporter):
    name = "csv-raw"
    guarded = False


EXPORTER = RawCsvExporter()
