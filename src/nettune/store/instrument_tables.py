"""What the database knows about the instrument itself, beside the studies' runs.

Two tables, in the results database's own connection (store.sqlite creates them):

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
import sqlite3
import time
from typing import Any

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


def create(db: sqlite3.Connection) -> None:
    db.executescript(SCHEMA)


def add_ceilings(db: sqlite3.Connection, machine: str, rows: list[dict[str, Any]]) -> None:
    """One `nettune ceiling` run on one machine: it replaces that machine's earlier rows
    of the same configurations (a ceiling is what the machine does now)."""
    now = time.time()
    with db:
        for config in {r["config"] for r in rows}:
            db.execute("DELETE FROM ceilings WHERE machine=? AND config=?", (machine, config))
        db.executemany(
            "INSERT INTO ceilings (machine, config, engine, processes, streams, tool_version, bps, duration, cores, measured)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(machine, r["config"], r["engine"], r["processes"], r["streams"], r.get("tool_version"), r.get("bps"),
              r.get("duration"), r.get("cores"), now) for r in rows])


def open_read_only(path: Any) -> sqlite3.Connection | None:
    """A results database opened read-only (the dry run changes nothing); None when there
    is no file there."""
    from pathlib import Path  # noqa: PLC0415

    if path is None or not Path(path).is_file():
        return None
    return sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)


def ceilings(db: sqlite3.Connection, machine: str) -> dict[str, dict[int, float]]:
    """config -> {streams: bits/s} measured on `machine` (failed tests left out)."""
    out: dict[str, dict[int, float]] = {}
    for r in db.execute("SELECT config, streams, bps FROM ceilings WHERE machine=? AND bps IS NOT NULL ORDER BY id", (machine,)):
        out.setdefault(r[0], {})[int(r[1])] = float(r[2])
    return out


def ceiling_rows(db: sqlite3.Connection, machine: str | None = None) -> list[dict[str, Any]]:
    q = "SELECT machine, config, engine, processes, streams, tool_version, bps, duration, cores, measured FROM ceilings"
    args: tuple[Any, ...] = ()
    if machine is not None:
        q, args = q + " WHERE machine=?", (machine,)
    cur = db.execute(q + " ORDER BY machine, config, streams", args)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def with_ceilings(db: sqlite3.Connection, facts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Host facts with each host's machine ceilings added (`loopback_ceiling`: config ->
    {streams: bits/s}) when its facts name its machine and `nettune ceiling` measured it."""
    out = {}
    for host, f in facts.items():
        machine = f.get("machine") if isinstance(f, dict) else None
        c = ceilings(db, str(machine)) if machine else {}
        out[host] = f | {"loopback_ceiling": {k: {str(p): b for p, b in v.items()} for k, v in c.items()}} if c else f
    return out


def add_cross_check(db: sqlite3.Connection, study_id: int, point_idx: int, label: str, rows: list[dict[str, Any]],
                    verdict: str, check_study_id: int | None) -> None:
    with db:
        db.execute("INSERT INTO cross_checks (study_id, point_idx, label, rows_json, verdict, check_study_id) VALUES (?,?,?,?,?,?)",
                   (study_id, point_idx, label, json.dumps(rows), verdict, check_study_id))


def cross_checks(db: sqlite3.Connection, study_id: int) -> list[dict[str, Any]]:
    rows = db.execute("SELECT point_idx, label, rows_json, verdict, check_study_id FROM cross_checks WHERE study_id=? ORDER BY id",
                      (study_id,)).fetchall()
    return [{"point_idx": r[0], "label": r[1], "rows": json.loads(r[2]), "verdict": r[3], "check_study_id": r[4]} for r in rows]
