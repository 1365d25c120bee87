"""The tidy DataFrames `nettune.results` gives: built from the export tables
(exporters/runs.py, exporters/series.py), typed for pandas.

Runs: one row per test; the sweep parameters as ordered categoricals; `started` a UTC
datetime; every measurement a nullable numeric column (Int64, Float64) in the field
table's stored unit (bits/s, bytes, us, %: `df.attrs["units"]`, and `_bps`, `_bytes`,
`_us` in the names); the unit of each CPU figure unpacked (into `attrs["units"]` when every
run has the same, else a `<figure>_unit` column); `cpu_extra` and `tool_cpu` one column per
key; the settings in force one column each: `knob:KEY` (`knob:KEY@HOST` where hosts
differ) and `iface:mtu`, `iface:tx_queues`, `iface:rx_queues` (same rule).

Series: one row per run, direction, interval and stream (or per interval: the streams'
totals), long, joined to the runs by `run_id` and carrying the point's parameters.
"""
from __future__ import annotations

from typing import Any, Iterable

import pandas as pd

from ..analysis.categories import categorical, is_number
from ..exporters.runs import UNITS as RUN_UNITS, export_table, param_column, param_names
from ..exporters.series import UNITS as SERIES_UNITS, series_rows
from ..record.fields import EXPORTED
from ..store.cpu_units import CPU_COLUMNS, label as unit_label
from ..store.records import RunRecord

NULLABLE = {int: "Int64", float: "Float64", str: "string", bool: "boolean"}
RUN_TYPES = {"study": "category", "study_id": "Int64", "point_idx": "Int64", "run_id": "Int64", "run": "Int64",
             "warmup": "boolean", "ok": "boolean", "error": "string", "engine": "category", "tool_version": "string",
             "protocol": "category", "n_streams": "Int64", "processes": "Int64", "engine_choice": "category",
             "engine_choice_reason": "string", "warnings": "string"}
SERIES_TYPES = {"run_id": "Int64", "point_idx": "Int64", "run": "Int64", "direction": "category", "stream": "Int64",
                "start": "Float64", "time": "Float64", "bps": "Float64", "bytes": "Int64", "retransmits": "Int64",
                "cwnd": "Int64", "snd_wnd": "Int64", "rtt_us": "Float64", "rttvar_us": "Float64", "pmtu": "Int64",
                "omitted": "boolean"}
IFACE = ("mtu", "tx_queues", "rx_queues")


def _column(values: list[Any], dtype: str) -> pd.Series:
    if dtype == "category":
        return pd.Series(categorical(values))
    return pd.Series(values, dtype=dtype)


def runs_frame(runs: list[RunRecord], cores: int | None = None) -> pd.DataFrame:
    """The tidy table of runs (see the module's docstring); `cores`: the test machine's CPU
    count, which a unit in % of the machine's cores needs to say how many."""
    table = export_table(runs)
    params = param_names(runs)
    taken = [c for c in table.columns if c not in params]
    pcols = [param_column(p, taken) for p in params]
    kinds = {f.name: NULLABLE[f.type] for f in EXPORTED}
    units: dict[str, str] = {c: u for c, u in RUN_UNITS.items() if c != "started"}
    cols: dict[str, pd.Series] = {}
    for c in table.columns:
        values = [row.get(c) for row in table.rows]
        if c in pcols:
            cols[c] = pd.Series(categorical(values))
        elif c == "started":
            cols[c] = pd.to_datetime(pd.Series(values, dtype="Float64"), unit="s", utc=True)
        elif c in ("cpu_units", "cpu_extra", "tool_cpu"):
            continue  # unpacked below
        elif c in kinds or c in RUN_TYPES:
            cols[c] = _column(values, kinds.get(c) or RUN_TYPES[c])
        else:
            cols[c] = pd.Series(values)
    cols |= _cpu_units(runs, units, cores)
    for part in ("cpu_extra", "tool_cpu"):
        keys = list(dict.fromkeys(k for r in runs for k in (r.cpu_extra if part == "cpu_extra" else r.tool_cpu)))
        for k in keys:
            name = f"{part}:{k}"
            cols[name] = pd.Series([(r.cpu_extra if part == "cpu_extra" else r.tool_cpu).get(k) for r in runs], dtype="Float64")
            units[name] = unit_label(_one({r.cpu_units.get(k) for r in runs} - {None}) or "pct_core", cores) if part == "cpu_extra" \
                else "% (as the tool reports it)"
    cols |= settings_columns(runs)
    df = pd.DataFrame(cols)
    df.attrs["units"] = {c: u for c, u in units.items() if c in df.columns}
    return df


def _one(units: set[str]) -> str | None:
    return next(iter(units)) if len(units) == 1 else None


def _cpu_units(runs: list[RunRecord], units: dict[str, str], cores: int | None) -> dict[str, pd.Series]:
    """The unit of each CPU figure: in `units` when every run that has it says the same;
    else a `<figure>_unit` column (an imported study mixing units)."""
    out: dict[str, pd.Series] = {}
    for c in CPU_COLUMNS:
        said = {r.cpu_units.get(c) for r in runs if r.get(c) is not None} - {None}
        if len(said) <= 1:
            units[c] = unit_label(_one(said) or "pct_core", cores) if said else units.get(c, "%")
        else:
            out[f"{c}_unit"] = pd.Series(categorical([unit_label(r.cpu_units[c], cores) if c in r.cpu_units else None for r in runs]))
            units[c] = f"per run: {c}_unit"
    return out


def settings_columns(runs: list[RunRecord]) -> dict[str, pd.Series]:
    """One column per knob value and interface setting in force at each run (PointState):
    `knob:KEY` / `iface:FIELD`, or `...@HOST` per host where the hosts' values differ."""
    per_run: list[dict[tuple[str, str], dict[str, Any]]] = []  # (prefix, key) -> host -> value
    for r in runs:
        state = r.state
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        for host, knobs in state.knobs.items():
            for key, value in knobs.items():
                seen.setdefault(("knob", key), {})[host] = value
        for host, hs in state.hosts.items():
            for name in IFACE:
                value = hs.__dict__.get(name)
                if value is not None:
                    seen.setdefault(("iface", name), {})[host] = value
        per_run.append(seen)
    keys = list(dict.fromkeys(k for seen in per_run for k in seen))
    out: dict[str, pd.Series] = {}
    for prefix, key in keys:
        hosts = list(dict.fromkeys(h for seen in per_run for h in seen.get((prefix, key), {})))
        same = all(len({str(v) for v in seen.get((prefix, key), {}).values()}) <= 1 for seen in per_run)
        if same:
            out[f"{prefix}:{key}"] = _setting([_first(seen.get((prefix, key), {}).values()) for seen in per_run])
        else:
            for h in hosts:
                out[f"{prefix}:{key}@{h}"] = _setting([seen.get((prefix, key), {}).get(h) for seen in per_run])
    return out


def _first(values: Iterable[Any]) -> Any:
    return next(iter(values), None)


def _setting(values: list[Any]) -> pd.Series:
    """Numbers as nullable numbers, anything else as an ordered categorical."""
    seen = [v for v in values if v is not None]
    if seen and all(isinstance(v, int) and not isinstance(v, bool) for v in seen):
        return pd.Series(values, dtype="Int64")
    if seen and all(is_number(v) for v in seen):
        return pd.Series(values, dtype="Float64")
    return pd.Series(categorical(values))


def series_frame(runs: list[RunRecord], per: str = "stream") -> pd.DataFrame:
    """The runs' series, long: per="stream" one row per run, direction, interval and
    stream; per="interval" one per run, direction and interval (the streams' totals).
    `time` is the interval's end and `start` its start, in seconds from the test's start."""
    if per not in ("stream", "interval"):
        raise ValueError(f"per={per!r}: use 'stream' (a row per stream and interval) or 'interval' (the streams' totals)")
    rows = series_rows(runs)["stream_intervals" if per == "stream" else "intervals"]
    params = param_names(runs)
    by_id = {r.id: r for r in runs}
    base = ["run_id", "point_idx", "run"]
    taken = base + list(SERIES_TYPES)
    pcols = [param_column(p, taken) for p in params]
    names = base + pcols + [c for c in SERIES_TYPES if c not in base and (per == "stream" or c not in (
        "stream", "bytes", "snd_wnd", "rttvar_us", "pmtu"))]
    table: dict[str, list[Any]] = {c: [] for c in names}
    for row in rows:
        r = by_id[row["run_id"]]
        full = row | {"point_idx": r.point_idx, "run": r.run, "time": row.get("end")}
        full |= {c: r.point.get(p) for c, p in zip(pcols, params)}
        for c in names:
            table[c].append(full.get(c))
    cols = {c: (pd.Series(categorical(v)) if c in pcols else _column(v, SERIES_TYPES[c])) for c, v in table.items()}
    df = pd.DataFrame(cols, columns=names)
    units = SERIES_UNITS | {"time": "s"}
    df.attrs["units"] = {c: units[c] for c in names if c in units and c not in pcols}
    return df
