"""The `change_points` table (schema 7): the change points `nettune history STUDY --save`
found in a study's reruns, so that tools reading the store (the Grafana dashboard,
contrib/grafana/) can show them. Derived data: each save replaces the rows of that study
name and metric, in one transaction. Self-contained: schema.py creates it, the store
(base.py) calls `save_change_points` and `change_point_rows`."""
from __future__ import annotations

import json
import time
from typing import Any

from .sql import Sql

CHANGE_POINTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS change_points (
  id INTEGER PRIMARY KEY,
  study_name TEXT NOT NULL,
  metric TEXT NOT NULL,           -- the metric's name (nettune history --metric)
  unit TEXT NOT NULL,             -- of before, after, step, ci_low, ci_high
  series TEXT NOT NULL,           -- the point (and pair) as history labels it
  point_json TEXT NOT NULL,
  pair TEXT,
  kind TEXT NOT NULL,             -- 'step' (inside the series) or 'latest' (the latest rerun alone)
  study_before INTEGER NOT NULL REFERENCES studies(id),
  study_after INTEGER NOT NULL REFERENCES studies(id),
  at_time REAL NOT NULL,          -- when the first rerun after the step started (epoch seconds)
  before REAL, after REAL, step REAL, ci_low REAL, ci_high REAL, p_value REAL,
  changed_json TEXT NOT NULL DEFAULT '[]',  -- what differed between the reruns either side
  saved REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS change_points_study ON change_points(study_name);
"""

COLUMNS = ("series", "point_json", "pair", "kind", "study_before", "study_after", "at_time", "before", "after", "step",
           "ci_low", "ci_high", "p_value", "changed_json")


def save_change_points(sql: Sql, study_name: str, metric: str, unit: str, rows: list[dict[str, Any]]) -> None:
    """Replace the change points of one study name and metric (rows: COLUMNS, `point` and
    `changed` as Python values)."""
    now = time.time()
    with sql.transaction():
        sql.run("DELETE FROM change_points WHERE study_name=? AND metric=?", (study_name, metric))
        sql.many(f"INSERT INTO change_points (study_name, metric, unit, {', '.join(COLUMNS)}, saved)"
                 f" VALUES ({', '.join('?' * (len(COLUMNS) + 4))})",
                 [(study_name, metric, unit, r["series"], json.dumps(r["point"], sort_keys=True), r["pair"], r["kind"],
                   r["study_before"], r["study_after"], r["at_time"], r["before"], r["after"], r["step"], r["ci_low"],
                   r["ci_high"], r["p_value"], json.dumps(r["changed"]), now) for r in rows])


def change_point_rows(sql: Sql, study_name: str) -> list[dict[str, Any]]:
    """The saved change points of a study name, oldest first."""
    rows = sql.rows("SELECT * FROM change_points WHERE study_name=? ORDER BY at_time, id", (study_name,))
    return [r | {"point": json.loads(r["point_json"]), "changed": json.loads(r["changed_json"])} for r in rows]
