"""A study's series and definition next to its table of runs (`nettune export --series`;
Parquet always): what `nettune import` needs to give back the same study.

Files, for `--out runs.EXT` (EXT: csv, json, parquet):

    runs.EXT                   the table of runs (exporters/runs.py), keyed by `run_id`
    runs.intervals.EXT         one row per run, direction and interval: the totals
    runs.stream_intervals.EXT  one row per run, direction, interval and stream (`stream`
                               joins runs.streams.EXT's `stream` of the same run)
    runs.streams.EXT           one row per run and stream: its end-of-test results
    runs.processes.EXT         one row per run and tool process of a fanned-out test
                               (`[workload] processes`): its share and its numbers
    runs.idle_power.EXT        one row per point, machine and source (`[probes] idle_power`)
    runs.study.json            the study: name, file text, parsed definition, host facts

JSON nests the series in each run instead (`series`: `{"streams": [...], "intervals":
[...], "processes": [...]}`, each interval with its `streams`); the idle power and the
study are files as above. A table with no rows (a study without intervals, or without
idle power) is not written. Column lists come from
the records (engines/result.py, record/fields.py), so a field added there is exported.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engines.result import Interval, IntervalStream, StreamResult
from ..errors import NettuneError
from ..record.fields import FIELDS, IDLE_FIELDS
from ..record.parts import ProcessRow
from ..store.cpu_units import units_text
from ..store.records import RunRecord
from .base import Table, get_exporter

SERIES = ("intervals", "stream_intervals", "streams", "processes")
IDLE = "idle_power"
STUDY_SUFFIX = ".study.json"
FORMAT_MARK = "nettune_export"  # the study file's first key: what `nettune import` recognises
INTERVAL_COLUMNS = ["run_id", *(n for n in Interval.model_fields if n not in ("stream_bps", "streams"))]
STREAM_INTERVAL_COLUMNS = ["run_id", "direction", "start", "end", "stream", *(n for n in IntervalStream.model_fields if n != "id")]
STREAM_COLUMNS = ["run_id", "stream", *(n for n in StreamResult.model_fields if n != "id")]
PROCESS_COLUMNS = ["run_id", *(n for n in ProcessRow.model_fields if n not in ("client", "server"))]  # tool_cpu: one "k=v;..." cell
IDLE_COLUMNS = ["point_idx", *IDLE_FIELDS]
# units of the series' columns: a value named like a field table row has its unit, the rest is said here
UNITS = {f.name: f.row.unit for f in [*FIELDS.values(), *IDLE_FIELDS.values()] if f.row.unit} | {
    "start": "s", "end": "s", "bps": "bit/s", "bytes": "bytes", "cwnd": "bytes", "snd_wnd": "bytes", "rtt_us": "us",
    "rttvar_us": "us", "pmtu": "bytes"}
COLUMNS = {"intervals": INTERVAL_COLUMNS, "stream_intervals": STREAM_INTERVAL_COLUMNS, "streams": STREAM_COLUMNS,
           "processes": PROCESS_COLUMNS, IDLE: IDLE_COLUMNS}


@dataclass
class StudyExport:
    """What the export carries beside the runs: the study's row, host facts, idle power."""

    study: dict[str, Any]
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    idle: list[dict[str, Any]] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        s = self.study
        return {FORMAT_MARK: 1, "name": s.get("name"), "description": s.get("description") or "",
                "target_kind": s.get("target_kind"), "status": s.get("status"), "spec_text": s.get("spec_text"),
                "spec_json": s.get("spec_json"), "facts": self.facts, "units": UNITS}


def sibling(out: Path, part: str) -> Path:
    """runs.csv -> runs.intervals.csv; part "study" -> runs.study.json."""
    return out.with_name(out.stem + STUDY_SUFFIX) if part == "study" else out.with_name(f"{out.stem}.{part}{out.suffix}")


def interval_streams(run: RunRecord, iv: dict[str, Any]) -> list[dict[str, Any]]:
    """An interval's streams with their ids; one stored before intervals kept ids (only
    `stream_bps`, by position) gets the ids of its direction's streams when the counts
    agree, else none (`stream` empty: cannot be joined)."""
    if iv.get("streams"):
        return [dict(st) for st in iv["streams"]]
    ids = [s.get("id") for s in run.streams if s.get("direction", "forward") == iv.get("direction", "forward")]
    bps = iv.get("stream_bps") or []
    return [{"id": ids[i] if len(ids) == len(bps) else None, "bps": b} for i, b in enumerate(bps)]


def series_rows(runs: list[RunRecord]) -> dict[str, list[dict[str, Any]]]:
    """The three long tables of the runs' series."""
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in SERIES}
    for r in runs:
        for iv in r.intervals:
            out["intervals"].append({"run_id": r.id} | {k: iv.get(k) for k in INTERVAL_COLUMNS[1:]})
            for st in interval_streams(r, iv):
                out["stream_intervals"].append({"run_id": r.id, "direction": iv.get("direction", "forward"), "start": iv.get("start"),
                                                "end": iv.get("end"), "stream": st.get("id")}
                                               | {k: st.get(k) for k in STREAM_INTERVAL_COLUMNS[5:]})
        for s in r.streams:
            out["streams"].append({"run_id": r.id, "stream": s.get("id")} | {k: s.get(k) for k in STREAM_COLUMNS[2:]})
        for p in r.fanout.per_process if r.fanout is not None else []:
            out["processes"].append({"run_id": r.id} | p.model_dump(include=set(PROCESS_COLUMNS)) | {"tool_cpu": units_text(p.tool_cpu)})
    return out


def nested(table: Table, runs: list[RunRecord], key: str) -> Table:
    """JSON: each run's series inside its row under `key` (`streams`, and `intervals` with
    their `streams`)."""
    by_id = {r.id: r for r in runs}
    rows = []
    for row in table.rows:
        r = by_id[row["run_id"]]
        ivs = [{k: iv.get(k) for k in INTERVAL_COLUMNS[1:]} | {"streams": interval_streams(r, iv)} for iv in r.intervals]
        procs = [p.model_dump(exclude={"client", "server"}) for p in r.fanout.per_process] if r.fanout is not None else []
        rows.append(row | {key: {"streams": list(r.streams), "intervals": ivs, "processes": procs}})
    return Table([*table.columns, key], rows, table.left)


def write_bundle(runs: list[RunRecord], table: Table, fmt: str, out: Path, extra: StudyExport, key: str) -> list[Path]:
    """Write the runs table and, next to it, the series, idle power and the study; returns
    the files written (tables with no rows are left out)."""
    exporter = get_exporter(fmt)
    tables: dict[str, Table] = {}
    if fmt == "json":
        table = nested(table, runs, key)
    else:
        tables = {k: Table(COLUMNS[k], rows, units=UNITS) for k, rows in series_rows(runs).items() if rows}
    idle = [{"point_idx": i.get("point_idx")} | {k: i.get(k) for k in IDLE_FIELDS} for i in extra.idle]
    if idle:
        tables[IDLE] = Table(IDLE_COLUMNS, idle, units=UNITS)
    written = [out]
    try:
        exporter.write(table, out)
        for part, t in tables.items():
            exporter.write(t, sibling(out, part))
            written.append(sibling(out, part))
        sibling(out, "study").write_text(json.dumps(extra.document(), indent=2) + "\n")
        written.append(sibling(out, "study"))
    except OSError as e:
        raise NettuneError(f"--out {out}: cannot write ({e.strerror})") from None
    return written
