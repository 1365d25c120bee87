"""The results database's layout and its upgrades: created by the writer (store/writer.py),
read by `Store` (store/sqlite.py), which upgrades an older database in memory only.

Tables: studies, points (parameters), runs (metrics), raw_outputs (both sides verbatim),
host_facts; ceilings and cross_checks (store/instrument_tables.py), idle_power
(store/idle_table.py).

Schema 2 adds to `studies` the SHA-256 of the study file's text (`spec_hash`: `--resume`
continues a study only with the same file) and the process running it (`owner`, '<pid>
<kernel start time>': a `running` study whose owner is gone was killed). Schema-1 databases
get both columns when opened (the hash computed from the stored text).

Schema 3 gives `runs` the place of a test in a study over host pairs as real columns
(`pair` "server->client", `server`, `client`, `round`, `round_total_bps`; NULL for a
single-pair test), so exports and the analysis can tell the pairs of a mesh apart. Older
databases get them when opened, filled from each run's `extra_json` where run.slots put them.

Schema 4 stores the unit of every CPU figure of a run (`cpu_units_json`: figure -> unit,
store/cpu_units.py); schema-3 runs get the units nettune's probes always wrote.

The value columns of `runs` are the field table's (record/fields.py, store/columns.py):
created, added to older databases and filled from `extra_json` there, versioned by
`fields_version` in `meta`.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from ..errors import NettuneError
from . import columns
from . import idle_table as idle
from . import instrument_tables as instrument
from .cpu_units import units_for

SCHEMA_VERSION = 4  # 4: command workload and energy columns, idle_power (store/idle_table.py); CPU units (cpu_units_json)

CPU_COLS_OF_SCHEMA_3 = ["cpu_client", "cpu_server", "cpu_host", "cpu_host_softirq"]  # what a schema-3 database has to upgrade

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS studies (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  spec_file TEXT,
  spec_text TEXT,
  spec_json TEXT NOT NULL,
  target_kind TEXT,
  started REAL NOT NULL,
  finished REAL,
  status TEXT NOT NULL DEFAULT 'running',     -- running, done, failed, interrupted, imported
  spec_hash TEXT,                             -- sha256 of spec_text (schema 2)
  owner TEXT                                  -- '<pid> <start time>' of the runner (schema 2)
);
CREATE INDEX IF NOT EXISTS studies_name ON studies(name);
CREATE TABLE IF NOT EXISTS points (
  id INTEGER PRIMARY KEY,
  study_id INTEGER NOT NULL REFERENCES studies(id),
  idx INTEGER NOT NULL,
  params_json TEXT NOT NULL,
  UNIQUE (study_id, idx)
);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  study_id INTEGER NOT NULL REFERENCES studies(id),
  point_id INTEGER NOT NULL REFERENCES points(id),
  run INTEGER NOT NULL,
  warmup INTEGER NOT NULL DEFAULT 0,
  ok INTEGER NOT NULL,
  error TEXT,
  engine TEXT NOT NULL,
  tool_version TEXT,
  protocol TEXT,
  started REAL,
  cpu_extra_json TEXT NOT NULL DEFAULT '{}',
  tool_cpu_json TEXT NOT NULL DEFAULT '{}',
  warnings_json TEXT NOT NULL DEFAULT '[]',
  streams_json TEXT NOT NULL DEFAULT '[]',
  intervals_json TEXT NOT NULL DEFAULT '[]',
  settings_json TEXT NOT NULL DEFAULT '{}',   -- target state and knob values in force (PointState)
  extra_json TEXT NOT NULL DEFAULT '{}',      -- the result's typed parts and details (record/legacy.py)
  cpu_units_json TEXT NOT NULL DEFAULT '{}',  -- unit of each CPU figure (schema 4, store/cpu_units.py)
  -- the field table's columns (store/columns.py): values, pair and round (schema 3), command and energy (schema 4)
  %s
);
CREATE INDEX IF NOT EXISTS runs_study ON runs(study_id);
CREATE TABLE IF NOT EXISTS raw_outputs (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  side TEXT NOT NULL,
  host TEXT,
  command_json TEXT NOT NULL,
  exit_code INTEGER,
  timed_out INTEGER NOT NULL DEFAULT 0,
  stdout TEXT NOT NULL,
  stderr TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS raw_run ON raw_outputs(run_id);
CREATE TABLE IF NOT EXISTS host_facts (
  id INTEGER PRIMARY KEY,
  study_id INTEGER NOT NULL REFERENCES studies(id),
  host TEXT NOT NULL,
  facts_json TEXT NOT NULL
);
""" % columns.ddl()


def version(db: sqlite3.Connection) -> int | None:
    """The database's schema version (None: a database nettune never wrote, or empty)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError:  # no meta table
        return None
    return None if row is None else int(row[0])


def check_not_newer(db: sqlite3.Connection, path: Path) -> None:
    have = version(db)
    if have is not None and have > SCHEMA_VERSION:
        raise NettuneError(f"{path}: written by a newer nettune (schema {have} > {SCHEMA_VERSION}); upgrade nettune")


def current(db: sqlite3.Connection) -> bool:
    """Whether the database has this nettune's layout already (nothing to create or add)."""
    if version(db) != SCHEMA_VERSION:
        return False
    row = db.execute("SELECT value FROM meta WHERE key='fields_version'").fetchone()
    if row is None or int(row[0]) < columns.FIELDS_VERSION:
        return False
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return {"idle_power", "ceilings", "cross_checks"} <= tables


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Create the tables, or bring an older database to this layout (additive only)."""
    check_not_newer(db, path)
    have = version(db)
    db.executescript(SCHEMA)
    instrument.create(db)  # host ceilings and cross-checks (store/instrument_tables.py)
    idle.create_idle(db)  # schema 4: idle_power (store/idle_table.py)
    with db:  # the field table's columns an older database lacks, filled from extra_json (store/columns.py)
        columns.fill(db, columns.ensure(db))
        columns.record_version(db)
    if have is None:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        db.commit()
    elif have < SCHEMA_VERSION:
        if have < 2:
            _upgrade_from_1(db)
        _upgrade_from_3(db)


def _upgrade_from_3(db: sqlite3.Connection) -> None:
    """Schema 3 -> 4: the CPU units column, filled with the units nettune's probes wrote."""
    with db:
        have = {r["name"] for r in db.execute("PRAGMA table_info(runs)")}
        if "cpu_units_json" not in have:
            db.execute("ALTER TABLE runs ADD COLUMN cpu_units_json TEXT NOT NULL DEFAULT '{}'")
        rows = db.execute(f"SELECT id, cpu_extra_json, {', '.join(CPU_COLS_OF_SCHEMA_3)} FROM runs WHERE cpu_units_json='{{}}'").fetchall()
        fill = [(json.dumps(units_for(dict(r), json.loads(r["cpu_extra_json"] or "{}"), None)), r["id"]) for r in rows]
        db.executemany("UPDATE runs SET cpu_units_json=? WHERE id=?", [f for f in fill if f[0] != "{}"])
        db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))


def _upgrade_from_1(db: sqlite3.Connection) -> None:
    """Schema 1 -> 2: the studies' file hash and owner, in one transaction."""
    with db:
        have = {r["name"] for r in db.execute("PRAGMA table_info(studies)")}
        for col in ("spec_hash", "owner"):
            if col not in have:
                db.execute(f"ALTER TABLE studies ADD COLUMN {col} TEXT")
        rows = db.execute("SELECT id, spec_text, spec_json FROM studies WHERE spec_hash IS NULL").fetchall()
        db.executemany("UPDATE studies SET spec_hash=? WHERE id=?", [(spec_hash(r["spec_text"], r["spec_json"]), r["id"]) for r in rows])
        db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))


def spec_hash(spec_text: str | None, spec_json: str = "") -> str:
    """SHA-256 of the study file's text (of its parsed JSON when run without a file)."""
    return hashlib.sha256((spec_text if spec_text is not None else spec_json).encode()).hexdigest()
