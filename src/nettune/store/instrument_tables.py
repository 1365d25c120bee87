"""What the database knows about the instrument itself, beside the studies' runs.

Two tables, in the results database itself (store/schema.py creates them; the store's
methods of the same names call these):

- `ceilings`: a host machine's loopback ceiling per configuration (engine, processes)
  and stream count, as `nettune ceiling` measured it. A machine is known by its node
  name (`uname -n`), so a lab's namespaces and a local study's hosts, all this machine,
  share one ceiling, and a study run later finds the ceiling measured earlier.
- `cross_checks`: `nettune run --cross-check`'s side-by-side rows for a point analysis
  marked tool-bound: each configuration's mean over its runs, and the verdict; the runs
  themselves are stored in a study of their own (`check_study_id`).
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
  measured REAL NOT NULL
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


def add_ceilings(sql: Sql, machine: str, rows: list[dict[str, Any]]) -> None:
    """One `nettune ceiling` run on one machine: it replaces that machine's earlier rows
    of the same configurations (a ceiling is what the machine does now)."""
    now = time.time()
    with sql.transaction():
        for config in {r["config"] for r in rows}:
            sql.run("DELETE FROM ceilings WHERE machine=? AND config=?", (machine, config))
        sql.many(
            "INSERT INTO ceilings (machine, config, engine, processes, streams, tool_version, bps, duration, cores, measured)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(machine, r["config"], r["engine"], r["processes"], r["streams"], r.get("tool_version"), r.get("bps"),
              r.get("duration"), r.get("cores"), now) for r in rows])


def ceilings(sql: Sql, machine: str) -> dict[str, dict[int, float]]:
    """config -> {streams: bits/s} measured on `machine` (failed tests left out)."""
    out: dict[str, dict[int, float]] = {}
    for r in sql.rows("SELECT config, streams, bps FROM ceilings WHERE machine=? AND bps IS NOT NULL ORDER BY id", (machine,)):
        out.setdefault(r["config"], {})[int(r["streams"])] = float(r["bps"])
    return out


def ceiling_rows(sql: Sql, machine: str | None = None) -> list[dict[str, Any]]:
    q = "SELECT machine, config, engine, processes, streams, tool_version, bps, duration, cores, measured FROM ceilings"
    args: tuple[Any, ...] = ()
    if machine is not None:
        q, args = q + " WHERE machine=?", (machine,)
    return sql.rows(q + " ORDER BY machine, config, streams", args)


def with_ceilings(sql: Sql, facts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Host facts with each host's machine ceilings added (`loopback_ceiling`: config ->
    {streams: bits/s}) when its facts name its machine and `nettune ceiling` measured it."""
    out = {}
    for host, f in facts.items():
        machine = f.get("machine") if isinstance(f, dict) else None
        c = ceilings(sql, str(machine)) if machine else {}
        out[host] = f | {"loopback_ceiling": {k: {str(p): b for p, b in v.items()} for k, v in c.items()}} if c else f
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
