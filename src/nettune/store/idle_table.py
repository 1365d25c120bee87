"""The `idle_power` table (schema 4): the idle power of each point ([probes] idle_power),
a row per machine and source, with the columns the field table's `IdleColumns` describes.
Self-contained: schema.py creates it, the store (base.py) calls `add_idle`, `add_idle_row`
and `idle_rows`."""
from __future__ import annotations

from typing import Any

from .sql import Sql

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


def add_idle(sql: Sql, study_id: int, point_id: int, host: str, sample: dict[str, Any]) -> None:
    """One idle window (probes.idle_power's dict): a row per source, in one transaction."""
    with sql.transaction():
        for source in ("powercap", "meter"):
            s = sample.get(source)
            if s is not None:
                add_idle_row(sql, study_id, point_id, {"host": host, "seconds": sample["seconds"], "source": source} | s)


def add_idle_row(sql: Sql, study_id: int, point_id: int, row: dict[str, Any]) -> None:
    """One row as `idle_rows` gives it back (an imported export's too)."""
    sql.run("INSERT INTO idle_power (study_id, point_id, host, seconds, source, min_w, median_w, samples, why)"
               " VALUES (?,?,?,?,?,?,?,?,?)", (study_id, point_id, row["host"], row["seconds"], row["source"], row.get("min_w"),
                                              row.get("median_w"), row.get("samples"), row.get("why")))


def idle_rows(sql: Sql, study_id: int) -> list[dict[str, Any]]:
    """Every idle window of a study, with its point's index."""
    return sql.rows("SELECT i.*, p.idx AS point_idx FROM idle_power i JOIN points p ON p.id=i.point_id"
                    " WHERE i.study_id=? ORDER BY i.id", (study_id,))
