"""Schema 4 (this block): the measurements of a command workload and the energy of every
test as real columns of `runs`, and the idle power of each point in `idle_power`.

    wall_s        wall seconds of a command workload's run (its primary metric)
    cpu_s         user+system CPU seconds of its process tree; cpu_user_s, cpu_sys_s where known
    peak_rss_kb   peak RSS of the largest process of its tree (KiB), where the host reports it
    exit_code     the run's exit status
    energy_j      joules over the test, summed over every host measured (powercap: package + DRAM)
    power_w       average watts over the test (the same hosts)
    meter_j, meter_w  the same from the external meter ([probes] power_command)
    energy_why    why a host has no energy (no powercap zones, not root ...), '; '-joined

The values come from a result's `extra` ("command", "energy"), where the engine and the
probes put them, so a schema-3 database gets the columns when opened (additive, filled
from extra_json). Self-contained: sqlite.py calls `upgrade`, `values` and `create_idle`.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Any

COLUMNS: dict[str, str] = {
    "wall_s": "REAL", "cpu_s": "REAL", "cpu_user_s": "REAL", "cpu_sys_s": "REAL", "peak_rss_kb": "INTEGER",
    "exit_code": "INTEGER", "energy_j": "REAL", "power_w": "REAL", "meter_j": "REAL", "meter_w": "REAL", "energy_why": "TEXT",
}

IDLE_SCHEMA = """
CREATE TABLE IF NOT EXISTS idle_power (
  id INTEGER PRIMARY KEY,
  study_id INTEGER NOT NULL REFERENCES studies(id),
  point_id INTEGER NOT NULL REFERENCES points(id),
  host TEXT NOT NULL,           -- 'machine' (the test machine) or a host name
  seconds REAL NOT NULL,
  source TEXT NOT NULL,         -- 'powercap' or 'meter'
  min_w REAL, median_w REAL, samples INTEGER,
  why TEXT                      -- no sample: the reason
);
"""


def values(extra: dict[str, Any]) -> dict[str, Any]:
    """The schema-4 columns of a result, from its `extra` (None where not measured)."""
    cmd = extra.get("command") or {}
    out: dict[str, Any] = {k: cmd.get(k) for k in ("wall_s", "cpu_s", "cpu_user_s", "cpu_sys_s", "peak_rss_kb", "exit_code")}
    if out["wall_s"] is not None and cmd.get("timed_out"):
        out["wall_s"] = None  # a run stopped at the timeout has no wall time of its own
    energy = extra.get("energy") or {}
    hosts = {k: v for k, v in energy.items() if k != "meter" and isinstance(v, dict)}
    measured = [v for v in hosts.values() if "joules" in v]
    out["energy_j"] = round(sum(sum(v["joules"].values()) for v in measured), 6) if measured else None
    out["power_w"] = round(sum(float(v["watts"]) for v in measured), 3) if measured else None
    meter = energy.get("meter") or {}
    out["meter_j"], out["meter_w"] = meter.get("joules"), meter.get("watts")
    why = [f"{k}: {v['why']}" for k, v in hosts.items() if v.get("why")] + ([f"meter: {meter['why']}"] if meter.get("why") else [])
    out["energy_why"] = "; ".join(why) or None
    return out


def create(db: sqlite3.Connection) -> None:
    """The columns (where missing) and the idle table, on every open (cheap, idempotent)."""
    have = {r[1] for r in db.execute("PRAGMA table_info(runs)")}
    for col, kind in COLUMNS.items():
        if col not in have:
            db.execute(f"ALTER TABLE runs ADD COLUMN {col} {kind}")
    create_idle(db)
    db.commit()


def fill(db: sqlite3.Connection) -> None:
    """Schema 3 -> 4 (additive): the new columns of stored runs, from their extra_json."""
    rows = db.execute("SELECT id, extra_json FROM runs").fetchall()
    todo = [(values(json.loads(r[1] or "{}")), r[0]) for r in rows]
    db.executemany(f"UPDATE runs SET {', '.join(f'{c}=?' for c in COLUMNS)} WHERE id=?",
                   [(*(v[c] for c in COLUMNS), rid) for v, rid in todo if any(x is not None for x in v.values())])


def create_idle(db: sqlite3.Connection) -> None:
    db.executescript(IDLE_SCHEMA)


def add_idle(db: sqlite3.Connection, study_id: int, point_id: int, host: str, sample: dict[str, Any]) -> None:
    """One idle window (probes.idle_power's dict): a row per source."""
    for source in ("powercap", "meter"):
        s = sample.get(source)
        if s is not None:
            db.execute("INSERT INTO idle_power (study_id, point_id, host, seconds, source, min_w, median_w, samples, why)"
                       " VALUES (?,?,?,?,?,?,?,?,?)", (study_id, point_id, host, sample["seconds"], source, s.get("min_w"),
                                                      s.get("median_w"), s.get("samples"), s.get("why")))
    db.commit()


def idle_rows(db: sqlite3.Connection, study_id: int) -> list[dict[str, Any]]:
    """Every idle window of a study, with its point's index (the Store's rows are sqlite3.Row)."""
    rows = db.execute("SELECT i.*, p.idx AS point_idx FROM idle_power i JOIN points p ON p.id=i.point_id"
                      " WHERE i.study_id=? ORDER BY i.id", (study_id,)).fetchall()
    return [dict(r) for r in rows]
