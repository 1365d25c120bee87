"""A results table made by hand (a spreadsheet saved as CSV): parameter columns and metric
columns, one row per run (or one per point: then each point has one run). Read only when
the user names the columns (`nettune import table.csv --columns queues,streams,gbps=receiver_gbps`),
so old studies get the same analyze, compare and report as new ones.

--columns lists the file's columns in order: NAME (a parameter of the point), NAME=METRIC
(a measured value, in the unit the metric's name says: table_metrics.py lists them) or -
(ignored). When the first line is a header, columns are found by NAME in it (in any
order); otherwise by position. A column is a parameter unless mapped, whatever its name
(a `parallel` column is the point's parameter, never a hint to a parser), and any metric
can be the table's measurement: a timed command's seconds (wall_s), a throughput, a CPU
figure. A table of summaries (N, mean, sd per configuration) maps its columns to `n`,
the metric and `sd`: each row is stored as one run holding the mean, with N and sd kept
beside it and a warning (compare such a table with `nettune compare --a-table`).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from ..engines.result import TestResult
from ..errors import NettuneError
from ..store.cpu_units import CPU_COLUMNS, check_unit
from .base import Hints, ImporterBase
from .params import parse_value
from .table_metrics import COMMAND, table_metrics

SUMMARY = ("n", "sd")  # --columns roles of a summary table: its N and its standard deviation


class TableCsvImporter(ImporterBase):
    name = "table-csv"
    describes = "a results table (CSV with --columns)"
    auto = False  # a table could be anything: read only when the user names its columns
    logs = False  # its columns are what the user measured: no throughput required, no stream count

    def __init__(self, columns: list[tuple[str, str | None]] | None = None, cpu_units: dict[str, str] | None = None) -> None:
        self.columns = columns or []
        self.cpu_units = cpu_units or {}  # --cpu-unit: the unit the table's CPU columns are in

    def split(self, text: str) -> list[tuple[str, str]]:
        """One test per data row; the header line (if any) goes along with each row."""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        header = _is_header(lines[0]) if lines else False
        head = lines[0] + "\n" if header else ""
        return [("", f"{head}{ln}\n#line {n}") for n, ln in enumerate(lines, 1) if not (header and n == 1)]

    def _row(self, text: str) -> tuple[dict[str, str], int]:
        body, _, mark = text.rpartition("\n#line ")
        lines = body.splitlines()
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
        names = [c for c, _ in self.columns]
        if len(rows) == 2:  # header + row: by name
            head = [h.strip() for h in rows[0]]
            missing = [n for n in names if n != "-" and n not in head]
            if missing:
                raise NettuneError(f"line 1 (the header) has no column {missing[0]!r}; its columns are {', '.join(head)}")
            return {n: rows[1][head.index(n)].strip() for n in names if n != "-" and head.index(n) < len(rows[1])}, int(mark)
        row = rows[0]
        if len(row) != len(names):
            raise NettuneError(f"line {mark} has {len(row)} fields but --columns names {len(names)}; list every column (use - for one to skip)")
        return {n: v.strip() for n, v in zip(names, row) if n != "-"}, int(mark)

    def point(self, text: str) -> dict[str, Any]:
        try:
            cells, _ = self._row(text)
        except NettuneError:
            return {}  # read() says what is wrong with the row, naming the file
        return {n: parse_value(cells[n]) for n, metric in self.columns if metric is None and n != "-" and n in cells}

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        try:
            cells, line = self._row(text)
        except NettuneError as e:
            raise NettuneError(f"{path}: {e}") from None
        measured = [(n, m) for n, m in self.columns if m is not None and m not in SUMMARY]
        timed = any(table_metrics()[m].field in COMMAND for _, m in measured)  # a table of a timed command's measures
        res = TestResult(engine="command" if timed else "table", protocol="" if timed else "tcp",
                         warnings=["imported from a results table: no per-stream or per-interval data"])
        values: dict[str, float] = {}
        for n, metric in self.columns:
            if metric is None or n not in cells or cells[n] == "":
                continue
            try:
                value = float(cells[n].replace("%", ""))
            except ValueError:
                raise NettuneError(f"{path}: line {line}, column {n}: {cells[n]!r} is not a number; fix the cell or map {n} as a parameter (--columns ...,{n},...)") from None
            values[metric] = value
            if metric not in SUMMARY:
                table_metrics()[metric].put(res, value)
        if not any(m in values for _, m in measured):
            raise NettuneError(f"{path}: line {line}: no measurement in this row (its {', '.join(n for n, _ in measured)} cell is empty)")
        if "n" in values or "sd" in values:
            res.details["summary"] = {"n": values.get("n"), "sd": values.get("sd"), "of": measured[0][1]}
            res.warnings.append(f"a summary row (N={values.get('n', '?'):g}, sd={values.get('sd', float('nan')):g}) stored as one run holding "
                                f"the mean: statistics here see one value per row; `nettune compare --a-table` uses N and sd")
        declared = {f: u for f, u in self.cpu_units.items() if cpu_value(res, f) is not None}
        if declared:
            res.cpu_units = declared  # stored with the run (store/cpu_units.py)
        return res


def cpu_value(res: TestResult, column: str) -> float | None:
    return {"cpu_client": res.cpu_client, "cpu_server": res.cpu_server, "cpu_host": res.cpu_host}.get(column)


def cpu_units(spec: str | None, columns: list[tuple[str, str | None]]) -> dict[str, str]:
    """--cpu-unit UNIT (every CPU column) or METRIC=UNIT[,METRIC=UNIT] (e.g. cpu_host=pct_of_16)."""
    if not spec:
        return {}
    mapped = [m for _, m in columns if m in CPU_COLUMNS]
    if not mapped:
        raise NettuneError(f"--cpu-unit {spec!r}: --columns maps no CPU column (cpu_client, cpu_server, cpu_host)")
    if "=" not in spec:
        unit = check_unit(spec)
        return {m: unit for m in mapped}
    out = {}
    for item in spec.split(","):
        col, _, unit = item.partition("=")
        if col.strip() not in mapped:
            raise NettuneError(f"--cpu-unit {item!r}: {col.strip()!r} is not a CPU column --columns maps; use one of {', '.join(mapped)}")
        out[col.strip()] = check_unit(unit, f"--cpu-unit {col.strip()}=")
    return out


def _is_header(line: str) -> bool:
    cells = next(csv.reader(io.StringIO(line)), [])
    return bool(cells) and not any(_number(c) for c in cells)


def _number(cell: str) -> bool:
    try:
        float(cell.strip().replace("%", ""))
        return True
    except ValueError:
        return False


def table_importer(spec: str, cpu_unit: str | None = None) -> TableCsvImporter:
    """--columns NAME,NAME=METRIC,-,... checked once, before any file is read."""
    cols: list[tuple[str, str | None]] = []
    known = table_metrics()
    for item in (x.strip() for x in spec.split(",")):
        name, sep, metric = item.partition("=")
        if not name.strip():
            raise NettuneError(f"--columns {spec!r}: an empty column name; write NAME, NAME=METRIC or - for each column")
        if sep and metric.strip() not in known and metric.strip() not in SUMMARY:
            raise NettuneError(f"--columns {item!r}: unknown metric {metric.strip()!r}; use one of {', '.join(known)} (or n and sd for a summary table)")
        cols.append((name.strip(), metric.strip() if sep else None))
    measured = [m for _, m in cols if m is not None and m not in SUMMARY]
    if not measured:
        raise NettuneError(f"--columns {spec!r}: no column is mapped to a metric; map what the table measured, e.g. gbps=receiver_gbps or seconds=wall_s")
    roles = [m for _, m in cols if m in SUMMARY]
    if roles and len(measured) != 1:
        raise NettuneError(f"--columns {spec!r}: a summary table (n, sd) has one measured column, the mean; it maps {len(measured)}")
    if len(roles) != len(set(roles)) or len(measured) != len(set(measured)):
        raise NettuneError(f"--columns {spec!r}: a metric is mapped twice")
    return TableCsvImporter(cols, cpu_units(cpu_unit, cols))


IMPORTER = TableCsvImporter()
