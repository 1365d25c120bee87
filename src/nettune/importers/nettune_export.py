"""`nettune import` of nettune's own exports: the CSV, JSON and Parquet files `nettune
export` writes become a study again, with the same points, runs, numbers, pairs and rounds.

An export file holds many runs (one row each, the point's parameters as columns), so it
is not a member of the importer family (one tool report = one run): `nettune import`
asks `is_export` first and hands such files here. The columns are the field table's
(record/fields.py); an export written before a field joined it imports with that field
empty. With the files `--series` writes next to it (export_bundle.py) the runs get their
series back, the points their idle power, and the study its definition (the sweep's
derived values stay derived) and host facts. What an export does not carry is not
invented: raw outputs, cross-checks and per-machine energy stay empty. Every file is read
and checked before the database is opened.
"""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field as PydanticField

from ..exporters.csv import unguard

from ..engines.result import SideOutput, TestResult
from ..errors import NettuneError
from ..exporters.runs import EXPORT_AFTER, EXPORT_BASE, EXPORT_RUN, SERIES_KEY
from ..record.fields import EXPORTED, FIELDS
from ..record.parts import CommandRun, EngineChoice, EnergyRun, FanOut, PairPlace, ToolDetails
from ..store.cpu_units import parse_units_text
from ..store.base import ResultStore
from .export_bundle import Bundle, nested_series, numbers, owns, part_of, read_bundle, table_of
from .intake import NAME, ImportTarget

BASE = EXPORT_BASE  # how an export starts
RUN = EXPORT_RUN[1:]  # run_id came later: an export without it has no series to join
# what every export carries, since the first: without one of these a file is not an export
REQUIRED = BASE + RUN + [f.name for f in EXPORTED if f.row.since == 1] + ["n_streams", "warnings"]
KNOWN = set(BASE + EXPORT_RUN + EXPORT_AFTER + [SERIES_KEY])
PARQUET_MAGIC = b"PAR1"
TEXT = {"study", "error", "engine", "tool_version", "protocol", "warnings", "cpu_units", "cpu_extra", "tool_cpu", "engine_choice",
        "engine_choice_reason"} | {
    f.name for f in FIELDS.values() if f.type is str}


@dataclass
class ExportRows:
    path: Path
    params: list[str]  # the parameter columns, as named in the file
    rows: list[dict[str, Any]] = field(default_factory=list)
    bundle: Bundle = field(default_factory=Bundle)


class ExportedStudy(BaseModel):
    """What begin_study stores as spec_json for an imported export: the exported study's
    definition (its workload, repeat, probes ...) under the new name, with the sweep as
    the imported points give it (derived values kept as their expressions)."""

    model_config = ConfigDict(extra="allow")
    name: str
    description: str = ""
    target: ImportTarget = PydanticField(default_factory=ImportTarget)
    sweep: dict[str, Any] = PydanticField(default_factory=dict)


def is_export(path: Path) -> bool:
    """Whether `path` is a file `nettune export` wrote (by its first bytes and header), or
    one of the files written next to one (runs.intervals.csv, runs.study.json ...)."""
    if not path.is_file():  # a named pipe would block open() until someone writes to it
        return False
    if part_of(path) is not None:
        return True
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
    """The rows of one export file and what came with it; NettuneError (one line naming
    the file) if it is not usable."""
    rows, columns = _table(path)
    missing = [c for c in REQUIRED if c not in columns]
    if missing or columns[:3] != BASE:
        raise NettuneError(f"{path}: not a `nettune export` file (missing columns: {', '.join(missing[:5]) or 'study, study_id, point_idx first'})")
    if not rows:
        raise NettuneError(f"{path}: no runs in this export")
    for n, row in enumerate(rows):  # what the rows are keyed by: checked here, one line naming the row
        bad = [k for k in ("study_id", "point_idx", "run") if not _whole(row.get(k))] + [k for k in ("warmup", "ok") if not isinstance(row.get(k), bool)]
        if bad:
            raise NettuneError(f"{path}: row {n + 1}: {bad[0]} is {row.get(bad[0])!r}, not what `nettune export` writes there")
    end = min(columns.index(c) for c in ("run_id", "run") if c in columns)
    bundle = read_bundle(path, lambda p: _table(p)[0])
    out = ExportRows(path, columns[3:end], [{k: _clean(v) for k, v in r.items()} for r in rows], bundle)
    for n, row in enumerate(out.rows):  # JSON: the series inside each run
        series, rid = row.pop(SERIES_KEY, None), row.get("run_id")
        if isinstance(series, dict) and isinstance(rid, int):
            nested_series(series, path, n, bundle, rid)
    return out


def _table(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows and columns of one table file (CSV, JSON list, Parquet)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise NettuneError(f"{path}: cannot read ({e.strerror})") from None
    if data.startswith(PARQUET_MAGIC):
        return _parquet(path)
    if data.lstrip().startswith(b"["):
        try:
            rows = json.loads(data)
        except ValueError as e:
            raise NettuneError(f"{path}: not valid JSON ({e}); is the export cut off?") from None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise NettuneError(f"{path}: expected a JSON list of runs as `nettune export --format json` writes")
        return rows, list(rows[0]) if rows else []
    reader = csv.DictReader(io.StringIO(data.decode("utf-8", "replace")))
    columns = list(reader.fieldnames or [])
    return [{k: _csv_value(k, v) for k, v in r.items()} for r in reader], columns


def _parquet(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except Exception as e:  # pyarrow raises several kinds for a damaged file
        raise NettuneError(f"{path}: not a readable Parquet file ({str(e).splitlines()[0][:80]})") from None
    return [{k: _clean(v) for k, v in r.items()} for r in df.to_dict("records")], list(df.columns)


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer()


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
    return name if column.startswith("param_") and name in KNOWN else column


def _result(row: dict[str, Any], path: Path, bundle: Bundle) -> TestResult:
    """One exported run as the result the store keeps (its series from the bundle)."""
    values = {f.name: f.cast(row.get(f.name)) for f in EXPORTED if f.stored}
    parts: dict[str, dict[str, Any]] = {}
    for f in EXPORTED:
        if f.stored and f.part is not None and values[f.name] is not None:
            parts.setdefault(f.part, {})[f.name] = values[f.name]
    # the export joins warnings with "; ", which a warning may itself contain: kept as one text
    warnings = [str(row["warnings"])] if row.get("warnings") else []
    side = SideOutput(role="client", host="imported", argv=["nettune-import", str(path)], started=row.get("started"))
    rid = row.get("run_id")
    n, procs = row.get("n_streams"), bundle.processes.get(rid, []) if isinstance(rid, int) else []
    count = int(row["processes"]) if isinstance(row.get("processes"), (int, float)) else len(procs) or 1
    choice = EngineChoice(engine=str(row["engine"]), processes=count, version=str(row.get("tool_version") or ""),
                          label=str(row["engine_choice"]), reason=str(row.get("engine_choice_reason") or "")) if row.get("engine_choice") else None
    return TestResult(engine=str(row["engine"]), tool_version=str(row.get("tool_version") or ""), ok=bool(row["ok"]),
                      error=row.get("error"), protocol=str(row.get("protocol") or "tcp"), warnings=warnings, client=side,
                      cpu_units=parse_units_text(row.get("cpu_units")), cpu_extra=numbers(row.get("cpu_extra")),
                      tool_cpu=numbers(row.get("tool_cpu")), tool=ToolDetails(num_streams=int(n) if isinstance(n, (int, float)) else None),
                      pair=PairPlace(**parts["pair"]) if "pair" in parts else None,
                      command=CommandRun(**parts["command"]) if "command" in parts else None,
                      energy=EnergyRun(**parts["energy"]) if "energy" in parts else None,
                      fanout=FanOut(processes=count, per_process=procs) if count > 1 or procs else None, engine_choice=choice,
                      streams=bundle.streams.get(rid, []) if isinstance(rid, int) else [],
                      intervals=bundle.intervals.get(rid, []) if isinstance(rid, int) else [],
                      **{f.name: values[f.name] for f in EXPORTED if f.stored and f.part is None})


def read_exports(files: list[Path]) -> list[ExportRows]:
    """Every table of runs read and checked, with its companion files (NettuneError naming
    the first unusable one). A companion file given along with its table is read with it;
    one given without it is refused."""
    tables = [f for f in files if part_of(f) is None]
    for f in files:
        if part_of(f) is not None and not any(owns(t, f) for t in tables):
            raise NettuneError(f"{f}: written next to a table of runs by `nettune export`; import that table ({table_of(f)}) instead")
    return [read_export(f) for f in tables]


def _spec(exports: list[ExportRows], points: dict[str, dict[str, Any]], name: str, description: str) -> ExportedStudy:
    """The imported study's definition: the exported one (when every file came with it) with
    the sweep as the points give it, a derived value kept derived where every file says so."""
    docs = [ex.bundle.study for ex in exports]
    specs = [d["spec"] for d in docs if d is not None]
    complete = bool(specs) and len(specs) == len(docs)
    derived = {k: v for k, v in (specs[0].get("sweep") or {}).items() if isinstance(v, str)} if complete else {}
    derived = {k: v for k, v in derived.items() if all((s.get("sweep") or {}).get(k) == v for s in specs)}
    sweep: dict[str, Any] = {}
    for params in points.values():
        for k, v in params.items():
            if k not in derived and v not in sweep.setdefault(k, []):
                sweep[k].append(v)
    sweep = {k: derived.get(k, sweep.get(k)) for k in next(iter(points.values()), {})}
    base = {k: v for k, v in specs[0].items() if k not in ("name", "description", "target", "sweep")} if complete else {}
    return ExportedStudy.model_validate(base | {"name": name, "description": description or "imported from nettune exports", "sweep": sweep})


def import_exports(store: ResultStore, exports: list[ExportRows], name: str, description: str = "") -> tuple[int, int]:
    """A new imported study `name` holding every row of `exports`: (study id, runs)."""
    if not NAME.match(name):
        raise NettuneError(f"--study {name!r}: use letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit)")
    if store.named(name):
        raise NettuneError(f"study {name!r} is already in {store.where}; import the export under another --study name")
    points: dict[str, dict[str, Any]] = {}  # the point's parameters, keyed by (source study, point)
    for ex in exports:
        for row in ex.rows:
            points.setdefault(json.dumps([str(ex.path), row["study_id"], row["point_idx"]]), {_param_name(c): row.get(c) for c in ex.params})
    spec = _spec(exports, points, name, description)
    texts = [str(ex.bundle.study["spec_text"]) for ex in exports if ex.bundle.study and ex.bundle.study.get("spec_text")]
    text = "# Imported with `nettune import` from nettune exports:\n" + "".join(f"# {ex.path}\n" for ex in exports) + (
        "".join(texts[:1]))
    sid = store.begin_study(spec, text, None, status="imported")
    facts = {h: f for ex in exports if ex.bundle.study for h, f in (ex.bundle.study.get("facts") or {}).items()}
    if facts:
        store.add_facts(sid, facts)
    ids: dict[str, int] = {}
    n = 0
    for ex in exports:
        for row in ex.rows:
            key = json.dumps([str(ex.path), row["study_id"], row["point_idx"]])
            if key not in ids:
                ids[key] = store.add_point(sid, len(ids), points[key])
                for idle in ex.bundle.idle.get(int(row["point_idx"]), []):
                    store.add_idle_row(sid, ids[key], idle)
            store.add_run(sid, ids[key], int(row["run"]), bool(row["warmup"]), _result(row, ex.path, ex.bundle),
                          {"imported_from": str(ex.path)})
            n += 1
    store.finish_study(sid, "imported")
    return sid, n
