"""What the database knows about the instrument itself, beside the studies' runs.

Two tables, in the results database itself (store/schema.py creates them; the store's
methods of the same names call these):

- `ceilings`: what each tool configuration (engine, processes) reached at each stream
  count on a path of a host machine, as `nettune ceiling` measured it: every run's bits/s
  (`values_json`), their mean (`bps`), count and 95% interval. `path` names the path
  class: "loopback" (the machine's own 127.0.0.1) or "lab mtu=N" (two lab namespaces of
  the machine on an unshaped link). A machine is known by its node name (`uname -n`), so
  a lab's namespaces and a local study's hosts, all this machine, share one ceiling, and
  a study run later finds the ceiling measured earlier.
- `cross_checks`: `nettune run --cross-check`'s side-by-side rows for a point analysis
  marked tool-bound: each configuration's runs (Gbit/s), mean and count, and the verdict;
  the runs themselves are stored in a study of their own (`check_study_id`).
"""
from __future__ import annotations

import json
import time
from typing import Any

from .sql import Sql

SCHEMA = """
CREATE TABLE IF NOT EXISTS ceilings (
  id INTEGER PRIMARY KEY,
  machine TEXT NOT NULL,          -- uname -n of the host machine
  config TEXT NOT NULL,           -- "iperf3", "iperf3 x4", "iperf2"
  engine TEXT NOT NULL,
  processes INTEGER NOT NULL,
  streams INTEGER NOT NULL,
  tool_version TEXT,
  bps REAL,                       -- receiver throughput on loopback; NULL: the test failed
  duration REAL,
  cores INTEGER,
  measured REAL NOT NULL,
  path TEXT NOT NULL DEFAULT 'loopback',  -- path class: "loopback", "lab mtu=N"
  runs INTEGER,                   -- runs behind bps (their mean)
  ci_low REAL,                    -- 95% Student-t interval of the mean (NULL with one run)
  ci_high REAL,
  values_json TEXT                -- every run's bits/s
);
CREATE INDEX IF NOT EXISTS ceilings_machine ON ceilings(machine);
CREATE TABLE IF NOT EXISTS cross_checks (
  id INTEGER PRIMARY KEY,
  study_id INTEGER NOT NULL REFERENCES studies(id),
  point_idx INTEGER NOT NULL,
  label TEXT NOT NULL,
  rows_json TEXT NOT NULL,        -- [{config, engine, processes, version, gbps, n}] in the order run
  verdict TEXT NOT NULL,
  check_study_id INTEGER REFERENCES studies(id)
);
"""

# the columns schema 6 added to `ceilings` (store/schema.py adds them to an older database)
ADDED_IN_6 = {"path": "TEXT NOT NULL DEFAULT 'loopback'", "runs": "INTEGER", "ci_low": "REAL", "ci_high": "REAL", "values_json": "TEXT"}


def add_ceilings(sql: Sql, machine: str, rows: list[dict[str, Any]], path: str = "loopback") -> None:
    """One `nettune ceiling` run on one machine and path: it replaces that machine's
    earlier rows of the same path and configurations (a ceiling is what the machine does
    now). A row: config, engine, processes, streams, and `values` (bits/s of each run;
    failed runs left out) or a single `bps`."""
    now = time.time()
    with sql.transaction():
        for config in {r["config"] for r in rows}:
            sql.run("DELETE FROM ceilings WHERE machine=? AND path=? AND config=?", (machine, path, config))
        out: list[tuple[Any, ...]] = []
        for r in rows:
            given: list[Any] = list(r["values"]) if r.get("values") is not None else [r.get("bps")]
            vals = [float(v) for v in given if v is not None]
            mean, lo, hi = ceiling_interval(vals)
            out.append((machine, path, r["config"], r["engine"], r["processes"], r["streams"], r.get("tool_version"), mean,
                        r.get("duration"), r.get("cores"), now, len(vals), lo, hi, json.dumps(vals)))
        sql.many(
            "INSERT INTO ceilings (machine, path, config, engine, processes, streams, tool_version, bps, duration, cores, measured,"
            " runs, ci_low, ci_high, values_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", out)


def ceiling_interval(vals: list[float]) -> tuple[float | None, float | None, float | None]:
    """Mean and 95% Student-t interval (None where fewer than two runs give none)."""
    if not vals:
        return None, None, None
    mean = sum(vals) / len(vals)
    if len(vals) < 2:
        return mean, None, None
    from scipy import stats  # noqa: PLC0415 - only when a ceiling is stored

    sd = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5
    half = float(stats.t.ppf(0.975, len(vals) - 1)) * sd / len(vals) ** 0.5
    return mean, mean - half, mean + half


def ceilings(sql: Sql, machine: str, path: str = "loopback") -> dict[str, dict[int, float]]:
    """config -> {streams: mean bits/s} measured on `machine`'s `path` (failed tests left out)."""
    out: dict[str, dict[int, float]] = {}
    for r in sql.rows("SELECT config, streams, bps FROM ceilings WHERE machine=? AND path=? AND bps IS NOT NULL ORDER BY id",
                      (machine, path)):
        out.setdefault(str(r["config"]), {})[int(r["streams"])] = float(r["bps"])
    return out


def ceiling_runs(sql: Sql, machine: str) -> dict[str, dict[str, dict[str, list[float]]]]:
    """path -> config -> {streams (text): every run's bits/s} measured on `machine`."""
    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    for r in sql.rows("SELECT path, config, streams, bps, values_json FROM ceilings WHERE machine=? AND bps IS NOT NULL ORDER BY id",
                      (machine,)):
        vals = _floats(r["values_json"]) or [float(r["bps"])]
        out.setdefault(str(r["path"]), {}).setdefault(str(r["config"]), {})[str(int(r["streams"]))] = vals
    return out


def _floats(text: Any) -> list[float]:
    """A stored list of numbers (values_json), read as untrusted: anything else is []."""
    try:
        got = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    return [float(v) for v in got if isinstance(v, (int, float)) and not isinstance(v, bool)] if isinstance(got, list) else []


def ceiling_rows(sql: Sql, machine: str | None = None) -> list[dict[str, Any]]:
    q = ("SELECT machine, path, config, engine, processes, streams, tool_version, bps, runs, ci_low, ci_high, duration, cores, measured"
         " FROM ceilings")
    args: tuple[Any, ...] = ()
    if machine is not None:
        q, args = q + " WHERE machine=?", (machine,)
    return sql.rows(q + " ORDER BY machine, path, config, streams", args)


def with_ceilings(sql: Sql, facts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Host facts with each host's machine ceilings added when its facts name its machine
    and `nettune ceiling` measured it: `ceilings` (path -> config -> {streams: every run's
    bits/s}) and, for the report, `loopback_ceiling` (config -> {streams: mean bits/s})."""
    out = {}
    for host, f in facts.items():
        machine = f.get("machine") if isinstance(f, dict) else None
        runs = ceiling_runs(sql, str(machine)) if machine else {}
        if not runs:
            out[host] = f
            continue
        loop = {k: {p: sum(v) / len(v) for p, v in by.items()} for k, by in (runs.get("loopback") or {}).items()}
        out[host] = f | {"ceilings": runs} | ({"loopback_ceiling": loop} if loop else {})
    return out


def add_cross_check(sql: Sql, study_id: int, point_idx: int, label: str, rows: list[dict[str, Any]],
                    verdict: str, check_study_id: int | None) -> None:
    sql.run("INSERT INTO cross_checks (study_id, point_idx, label, rows_json, verdict, check_study_id) VALUES (?,?,?,?,?,?)",
                   (study_id, point_idx, label, json.dumps(rows), verdict, check_study_id))


def cross_checks(sql: Sql, study_id: int) -> list[dict[str, Any]]:
    rows = sql.rows("SELECT point_idx, label, rows_json, verdict, check_study_id FROM cross_checks WHERE study_id=? ORDER BY id",
                    (study_id,))
    return [{"point_idx": r["point_idx"], "label": r["label"], "rows": json.loads(r["rows_json"]), "verdict": r["verdict"],
             "check_study_id": r["check_study_id"]} for r in rows]
