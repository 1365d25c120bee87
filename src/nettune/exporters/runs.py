"""The tables of runs the commands export, built from `store.RunRecord`s:

- `results_table`: `nettune results --format json` (the point nested, per-stream results
  kept) and, `flat=True`, `--format csv` (the point's parameters as the first columns);
- `export_table`: `nettune export`, one flat row per run with the parameters as columns,
  the same columns in every format.

The value columns are the field table's exported rows (record/fields.py), in its order.
The column rule, in every format: a sweep parameter gets its own column named after it,
unless a run column has that name (`protocol`, `duration`, `run`...): then it is
`param_<name>`, so no column appears twice.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ..errors import NettuneError
from ..record.fields import EXPORTED
from ..store.cpu_units import units_text
from ..store.records import RunRecord
from .base import MEMBERS, Table, export_table as write_table, one_of
from .series import StudyExport, nested, write_bundle

VALUES = [f.name for f in EXPORTED]  # the field table's columns, in its order
# Fields every `results --format json` record carries (docs/results.md lists them; a test
# checks that the doc and these lists agree).
JSON_FIELDS = ["study", "study_id", "point", "run", "warmup", "ok", "error", "engine", "tool_version", "protocol",
               *VALUES, "cpu_units", "cpu_extra", "tool_cpu", "warnings", "settings", "streams", "intervals"]
# The JSON fields a CSV cell can hold (after the parameters; warnings joined with '; ').
CSV_FIELDS = [f for f in JSON_FIELDS if f not in ("point", "cpu_extra", "tool_cpu", "settings", "streams", "intervals")]

EXPORT_BASE = ["study", "study_id", "point_idx"]
EXPORT_RUN = ["run_id", "run", "warmup", "ok", "error", "engine", "tool_version", "protocol", "started"]
# cpu_units, cpu_extra, tool_cpu: one flat cell each ("key=value;key=value", store/cpu_units.py);
# processes: tool processes of a fanned-out test; engine_choice(_reason): what engine = "auto" picked and why
EXPORT_AFTER = [*VALUES, "cpu_units", "cpu_extra", "tool_cpu", "n_streams", "processes", "engine_choice", "engine_choice_reason", "warnings"]
UNITS = {"started": "s"} | {f.name: f.row.unit for f in EXPORTED if f.row.unit}  # Unix time; the table's units
SERIES_KEY = "series"  # JSON --series: each run's series under this key (a parameter of that name is param_series)


def param_names(runs: list[RunRecord]) -> list[str]:
    """Every parameter of every point, in first-seen order."""
    names: dict[str, None] = {}
    for r in runs:
        names.update(dict.fromkeys(r.point))
    return list(names)


def param_column(name: str, taken: Iterable[str]) -> str:
    """A parameter's column: its name, or `param_<name>` if a run column is called that."""
    return f"param_{name}" if name in taken else name


def values(r: RunRecord) -> dict[str, Any]:
    """The field table's exported values of one run (derived ones computed)."""
    return {f.name: f.of(r) for f in EXPORTED}


def _record(r: RunRecord) -> dict[str, Any]:
    return r.to_dict() | values(r)


def results_table(runs: list[RunRecord], flat: bool = False) -> Table:
    """`nettune results`: nested JSON records, or (flat) the CSV's parameter columns first."""
    if not flat:
        return Table(JSON_FIELDS, [_record(r) for r in runs])
    params = param_names(runs)
    cols = [param_column(p, CSV_FIELDS) for p in params]
    rows = [{c: r.point.get(p) for c, p in zip(cols, params)} | {k: v for k, v in _record(r).items() if k in CSV_FIELDS}
            | {"cpu_units": units_text(r.cpu_units)} for r in runs]  # flat: one cell
    return Table(cols + CSV_FIELDS, rows)


def export_table(runs: list[RunRecord]) -> Table:
    """`nettune export`: every run (warm-up and failed ones too, with their flags)."""
    params = param_names(runs)
    taken = EXPORT_BASE + EXPORT_RUN + EXPORT_AFTER + [SERIES_KEY]
    cols = [param_column(p, taken) for p in params]
    rows = []
    for r in runs:
        row: dict[str, Any] = {"study": r.study, "study_id": r.study_id, "point_idx": r.point_idx}
        row |= {c: r.point.get(p) for c, p in zip(cols, params)}
        row |= {"run_id": r.id} | {k: r[k] for k in EXPORT_RUN[1:]}
        row |= values(r)
        row |= {"cpu_units": units_text(r.cpu_units), "cpu_extra": units_text(r.cpu_extra), "tool_cpu": units_text(r.tool_cpu)}
        row["n_streams"] = r.n_streams or None
        row["processes"] = r.processes
        choice = r.engine_choice
        row["engine_choice"], row["engine_choice_reason"] = (choice.label, choice.reason) if choice is not None else (None, None)
        row["warnings"] = "; ".join(r.warnings)
        rows.append(row)
    return Table(EXPORT_BASE + cols + EXPORT_RUN + EXPORT_AFTER, rows, units=UNITS)


def frame(runs: list[RunRecord]) -> Any:
    """The export table as a pandas DataFrame (as written to parquet)."""
    from .parquet import frame as to_frame

    return to_frame(export_table(runs))


def export(runs: list[RunRecord], fmt: str, out: Path | None) -> str | None:
    """`nettune export`: write the runs as `fmt` to `out`; without `out` return the text."""
    if fmt not in MEMBERS:
        raise NettuneError(f"--format {fmt!r}: use {one_of(MEMBERS)}")
    return write_table(export_table(runs), fmt, out)


def export_series(runs: list[RunRecord], fmt: str, out: Path | None, study: StudyExport) -> str | list[Path]:
    """`nettune export --series` (and every Parquet export): the runs with their series,
    idle power and study (exporters/series.py); the files written, or JSON text without `out`."""
    if fmt not in MEMBERS or fmt == "markdown":
        raise NettuneError(f"--series: --format {fmt!r} cannot carry series; use csv, json or parquet")
    if out is None:
        if fmt != "json":
            raise NettuneError(f"--series with --format {fmt} writes several files: give --out FILE.{fmt}")
        text = write_table(nested(export_table(runs), runs, SERIES_KEY), fmt, None)
        assert text is not None
        return text
    return write_bundle(runs, export_table(runs), fmt, out, study, SERIES_KEY)
