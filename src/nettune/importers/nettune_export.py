"""`nettune import` of nettune's own exports: the CSV, JSON and Parquet files `nettune
export` writes become a study again, with the same points, runs, numbers, pairs and rounds.

An export file holds many runs (one row each, the point's parameters as columns), so it
is not a member of the importer family (one tool report = one run): `nettune import`
asks `is_export` first and hands such files here. What an export does not carry is not
invented: per-stream and per-interval series, raw outputs, host facts and CPU of other
machines stay empty. Every file is read and checked before the database is opened.
"""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engines.result import PAIR_COLUMNS, SideOutput, TestResult
from ..errors import NettuneError
from ..exporters.csv import unguard
from ..store.cpu_units import parse_units_text
from ..store.sqlite import METRICS, Store
from .intake import NAME, ImportedStudy

BASE = ["study", "study_id", "point_idx"]  # exporters.runs.EXPORT_BASE: how an export starts
RUN = ["run", "warmup", "ok", "error", "engine", "tool_version", "protocol", "started", "duration", *PAIR_COLUMNS]
AFTER = ["total_bps", *METRICS, "n_streams", "warnings"]
PARQUET_MAGIC = b"PAR1"
TEXT = {"study", "error", "engine", "tool_version", "protocol", "pair", "server", "client", "warnings", "cpu_units"}
UNITS = "cpu_units"  # schema 4's CPU units: optional, so exports written before them still import
INTS = {"run", "round", "sender_bytes", "receiver_bytes", "retransmits", "max_cwnd", "lost_packets", "packets", "reverse_retransmits"}


@dataclass
class ExportRows:
    path: Path
    params: list[str]  # the parameter columns, as named in the file
    rows: list[dict[str, Any]] = field(default_factory=list)


def is_export(path: Path) -> bool:
    """Whether `path` is a file `nettune export` wrote (by its first bytes and header)."""
    if not path.is_file():  # a named pipe would block open() until someone writes to it
        return False
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if head.startswith(PARQUET_MAGIC):
        return True
    text = head.decode("utf-8", "replace").lstrip()
    if text.startswith("study,study_id,point_idx,"):
        return True
    return text.startswith("[") and all(f'"{k}"' in text for k in BASE) and text.index('"study"') < 40


def read_export(path: Path) -> ExportRows:
    """The rows of one export file; NettuneError (one line naming the file) if it is not usable."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise NettuneError(f"{path}: cannot read ({e.strerror})") from None
    if data.startswith(PARQUET_MAGIC):
        rows, columns = _parquet(path)
    elif data.lstrip().startswith(b"["):
        try:
            rows = json.loads(data)
        except ValueError as e:
            raise NettuneError(f"{path}: not valid JSON ({e}); is the export cut off?") from None
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
            raise NettuneError(f"{path}: expected a JSON list of runs as `nettune export --format json` writes")
        columns = list(rows[0])
    else:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8", "replace")))
        columns = list(reader.fieldnames or [])
        rows = [{k: _csv_value(k, v) for k, v in r.items()} for r in reader]
    missing = [c for c in BASE + RUN + AFTER if c not in columns]
    if missing or columns[:3] != BASE:
        raise NettuneError(f"{path}: not a `nettune export` file (missing columns: {', '.join(missing[:5]) or 'study, study_id, point_idx first'})")
    if not rows:
        raise NettuneError(f"{path}: no runs in this export")
    params = columns[3:columns.index(RUN[0])]
    return ExportRows(path, params, [{k: _clean(v) for k, v in r.items()} for r in rows])


def _parquet(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except Exception as e:  # pyarrow raises several kinds for a damaged file
        raise NettuneError(f"{path}: not a readable Parquet file ({str(e).splitlines()[0][:80]})") from None
    return df.to_dict("records"), list(df.columns)


def _csv_value(key: str, text: str | None) -> Any:
    """A CSV cell back to its value: empty is None, text columns stay text ("3.10" is a
    version, not 3.1), flags and numbers (a parameter's too) are flags and numbers."""
    if text is None or text == "":
        return None
    text = unguard(text)  # the formula guard `export --format csv` puts on a text cell
    if key in TEXT:
        return text
    if text in ("True", "False"):  # Python's csv writes a bool as True / False
        return text == "True"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _clean(v: Any) -> Any:
    """pandas gives NaN for a missing number and numpy scalars: plain Python values."""
    import numpy as np

    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, float) and math.isnan(v):
        return None
    return v


def _param_name(column: str) -> str:
    """The export writes a parameter named like a run column as param_<name>; undo it."""
    name = column.removeprefix("param_")
    return name if column.startswith("param_") and name in BASE + RUN + AFTER + [UNITS] else column


def _result(row: dict[str, Any], path: Path) -> TestResult:
    metrics = {m: (int(row[m]) if m in INTS and row.get(m) is not None else row.get(m)) for m in METRICS}
    place: dict[str, Any] = {k: row.get(k) for k in PAIR_COLUMNS if row.get(k) is not None}
    if parse_units_text(row.get(UNITS)):
        place["cpu_units"] = parse_units_text(row.get(UNITS))  # stored as the run's units (store/cpu_units.py)
    if "round" in place:
        place["round"] = int(place["round"])
    # the export joins warnings with "; ", which a warning may itself contain: kept as one text
    warnings = [str(row["warnings"])] if row.get("warnings") else []
    side = SideOutput(role="client", host="imported", argv=["nettune-import", str(path)], started=row.get("started"))
    return TestResult(engine=str(row["engine"]), tool_version=str(row.get("tool_version") or ""), ok=bool(row["ok"]),
                      error=row.get("error"), protocol=str(row.get("protocol") or "tcp"), duration=row.get("duration"),
                      warnings=warnings, client=side, extra=place, **metrics)


def read_exports(files: list[Path]) -> list[ExportRows]:
    """Every file read and checked (NettuneError naming the first unusable one)."""
    return [read_export(f) for f in files]


def import_exports(store: Store, exports: list[ExportRows], name: str, description: str = "") -> tuple[int, int]:
    """A new imported study `name` holding every row of `exports`: (study id, runs)."""
    if not NAME.match(name):
        raise NettuneError(f"--study {name!r}: use letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit)")
    if store.db.execute("SELECT 1 FROM studies WHERE name=?", (name,)).fetchone():
        raise NettuneError(f"study {name!r} is already in {store.path}; import the export under another --study name")
    points: dict[str, dict[str, Any]] = {}  # the point's parameters, keyed by (source study, point)
    for ex in exports:
        for row in ex.rows:
            points.setdefault(json.dumps([str(ex.path), row["study_id"], row["point_idx"]]), {_param_name(c): row.get(c) for c in ex.params})
    sweep: dict[str, list[Any]] = {}
    for params in points.values():
        for k, v in params.items():
            if v not in sweep.setdefault(k, []):
                sweep[k].append(v)
    spec = ImportedStudy(name=name, description=description or "imported from nettune exports", sweep=sweep)
    text = "# Imported with `nettune import` from nettune exports:\n" + "".join(f"# {ex.path}\n" for ex in exports)
    sid = store.begin_study(spec, text, None, status="imported")
    ids: dict[str, int] = {}
    n = 0
    for ex in exports:
        for row in ex.rows:
            key = json.dumps([str(ex.path), row["study_id"], row["point_idx"]])
            if key not in ids:
                ids[key] = store.add_point(sid, len(ids), points[key])
            store.add_run(sid, ids[key], int(row["run"]), bool(row["warmup"]), _result(row, ex.path), {"imported_from": str(ex.path)}, commit=False)
            n += 1
    store.db.commit()
    store.finish_study(sid, "imported")
    return sid, n
