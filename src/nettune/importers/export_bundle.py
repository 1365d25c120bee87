"""The files `nettune export --series` (and every Parquet export) writes next to a table of
runs (exporters/series.py), read back: the series of each run (its streams and intervals,
with each interval's streams), the idle power of each point, and the study (its file
text, its definition with the sweep's derived values, host facts).

Everything is checked as it is read (what an export holds is untrusted): a part whose
rows do not validate is refused with one line naming the file and the row.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from ..engines.result import Interval, IntervalStream, StreamResult
from ..errors import NettuneError
from ..exporters.series import FORMAT_MARK, IDLE, SERIES, sibling
from ..record.fields import IdleColumns
from ..record.parts import ProcessRow

PARTS = (*SERIES, IDLE)


@dataclass
class Bundle:
    """What came with one table of runs (all empty for an export without it)."""

    streams: dict[int, list[StreamResult]] = field(default_factory=dict)  # source run_id -> its streams
    intervals: dict[int, list[Interval]] = field(default_factory=dict)  # source run_id -> its intervals
    processes: dict[int, list[ProcessRow]] = field(default_factory=dict)  # source run_id -> its tool processes
    idle: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # source point_idx -> its idle rows
    study: dict[str, Any] | None = None  # the exported study's document (exporters.series.StudyExport)


def part_of(path: Path) -> Path | None:
    """The table of runs `path` belongs to when it is one of its companion files
    (runs.intervals.csv, runs.study.json ...), else None."""
    name = path.name
    if name.endswith(".study.json"):
        return path.with_name(name.removesuffix(".study.json"))  # without its suffix: any format's runs file
    stem, dot, suffix = name.rpartition(".")
    base, _, part = stem.rpartition(".")
    return path.with_name(f"{base}.{suffix}") if dot and base and part in PARTS else None


def table_of(part: Path) -> str:
    """The table of runs a companion file belongs to, as a message names it."""
    owner = part_of(part)
    if owner is None or owner.suffix:
        return str(owner)
    found = [owner.with_suffix(f".{ext}") for ext in ("parquet", "csv", "json") if owner.with_suffix(f".{ext}").is_file()]
    return str(found[0]) if found else f"{owner}.csv, .json or .parquet"


def owns(runs: Path, part: Path) -> bool:
    """Whether `part` is a companion file of the table of runs `runs`."""
    owner = part_of(part)
    return owner is not None and (owner == runs or (part.name.endswith(".study.json") and owner == runs.with_suffix("")))


def read_bundle(runs: Path, read_table: Callable[[Path], list[dict[str, Any]]]) -> Bundle:
    """The companion files of `runs` that exist, read with `read_table` (the runs file's format)."""
    out = Bundle()
    doc = sibling(runs, "study")
    if doc.is_file():
        out.study = _study(doc)
    rows = {part: read_table(sibling(runs, part)) for part in PARTS if sibling(runs, part).is_file()}
    for i, row in enumerate(rows.get("streams", [])):
        s = _valid(StreamResult, {k: v for k, v in row.items() if k not in ("run_id", "stream")} | {"id": row.get("stream")},
                   sibling(runs, "streams"), i)
        out.streams.setdefault(_key(row, "run_id", sibling(runs, "streams"), i), []).append(s)
    per: dict[tuple[int, str, Any, Any], list[IntervalStream]] = {}
    for i, row in enumerate(rows.get("stream_intervals", [])):
        where = sibling(runs, "stream_intervals")
        st = _valid(IntervalStream, {k: v for k, v in row.items() if k not in ("run_id", "direction", "start", "end", "stream")}
                    | {"id": row.get("stream") if row.get("stream") is not None else 0}, where, i)
        per.setdefault((_key(row, "run_id", where, i), str(row.get("direction")), row.get("start"), row.get("end")), []).append(st)
    for i, row in enumerate(rows.get("intervals", [])):
        rid = _key(row, "run_id", sibling(runs, "intervals"), i)
        streams = per.get((rid, str(row.get("direction")), row.get("start"), row.get("end")), [])
        iv = _valid(Interval, {k: v for k, v in row.items() if k != "run_id"} | {"streams": streams, "stream_bps": [s.bps for s in streams]},
                    sibling(runs, "intervals"), i)
        out.intervals.setdefault(rid, []).append(iv)
    for i, row in enumerate(rows.get("processes", [])):
        where = sibling(runs, "processes")
        p = _valid(ProcessRow, {k: v for k, v in row.items() if k != "run_id"} | {"tool_cpu": numbers(row.get("tool_cpu"))}, where, i)
        out.processes.setdefault(_key(row, "run_id", where, i), []).append(p)
    for i, row in enumerate(rows.get(IDLE, [])):
        idle = _valid(IdleColumns, {k: v for k, v in row.items() if k != "point_idx"}, sibling(runs, IDLE), i)
        out.idle.setdefault(_key(row, "point_idx", sibling(runs, IDLE), i), []).append(idle.model_dump())
    return out


def numbers(text: Any) -> dict[str, float]:
    """A `key=value;...` cell of numbers (cpu_extra, tool_cpu) back to a dict; other items are left out."""
    out = {}
    for item in str(text or "").split(";"):
        key, _, value = item.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            continue
    return {k: v for k, v in out.items() if k}


def nested_series(series: dict[str, Any], path: Path, n: int, bundle: Bundle, rid: int) -> None:
    """A JSON export's series of one run (`streams`, `intervals` with their `streams`,
    `processes`), into `bundle` under its run id."""
    bundle.processes[rid] = [_valid(ProcessRow, p, path, n) for p in _dicts(series.get("processes"))]
    streams = [_valid(StreamResult, s, path, n) for s in _dicts(series.get("streams"))]
    ivs = []
    for iv in _dicts(series.get("intervals")):
        per = [_valid(IntervalStream, st | {"id": st.get("id") if st.get("id") is not None else 0}, path, n)
               for st in _dicts(iv.get("streams"))]
        ivs.append(_valid(Interval, {k: v for k, v in iv.items() if k != "streams"} | {"streams": per, "stream_bps": [s.bps for s in per]}, path, n))
    bundle.streams[rid], bundle.intervals[rid] = streams, ivs


def _dicts(x: Any) -> list[dict[str, Any]]:
    return [e for e in x if isinstance(e, dict)] if isinstance(x, list) else []


def _study(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise NettuneError(f"{path}: not a readable study file of a nettune export ({e})") from None
    if not isinstance(doc, dict) or doc.get(FORMAT_MARK) != 1:
        raise NettuneError(f"{path}: not the study file of a nettune export (no \"{FORMAT_MARK}\": 1)")
    try:
        spec = json.loads(doc.get("spec_json") or "{}")
    except ValueError:
        spec = None
    facts = doc.get("facts") or {}
    if (not isinstance(spec, dict) or not all(isinstance(spec.get(k) or {}, dict) for k in ("sweep", "workload"))
            or not isinstance(facts, dict) or not all(isinstance(f, dict) for f in facts.values())):
        raise NettuneError(f"{path}: spec_json (its sweep, its workload) or facts is not a JSON object; export the study again")
    return doc | {"spec": spec}


def _valid(model: Any, data: Any, path: Path, n: int) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise NettuneError(f"{path}: row {n + 1}: {where}: {first['msg']}") from None


def _key(row: dict[str, Any], key: str, path: Path, n: int) -> int:
    v = row.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
        raise NettuneError(f"{path}: row {n + 1}: {key} {v!r} is not a whole number")
    return int(v)
