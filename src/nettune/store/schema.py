"""The results database's tables and their versioned migrations, the same on both members.

Tables: studies, points (parameters), runs (metrics), raw_outputs (both sides verbatim),
host_facts; idle_power (store/idle_table.py); ceilings and cross_checks
(store/instrument_tables.py). The DDL is written once in SQLite's types; PostgreSQL's
member maps them (INTEGER -> BIGINT, REAL -> DOUBLE PRECISION, ids -> identity columns).

Versions (`schema_version` in `meta`), each an additive step run on an older database
when it is opened, in one transaction, under a lock on PostgreSQL (two processes opening
one database at once migrate it once):

  2  `studies.spec_hash` (SHA-256 of the study file's text: `--resume` continues a study
     only with the same file) and `studies.owner` ('<pid> <kernel start time>', with the
     machine's boot id and name since schema 5: a `running` study whose owner is gone was
     killed); the hash computed from the stored text.
  3  `runs` gets the place of a test in a study over host pairs as columns (`pair`,
     `server`, `client`, `round`, `round_total_bps`), filled from each run's `extra_json`.
  4  `runs.cpu_units_json` (figure -> unit, store/cpu_units.py), filled with the units
     nettune's probes always wrote; command and energy columns; `idle_power`.
  5  `studies.nettune_version`: the nettune that ran the study (`nettune history` says
     when it changed between two runs); NULL for studies stored before.
  6  `ceilings` per path class with its repeats: `path` ('loopback' for the rows stored
     before), `runs`, `ci_low`, `ci_high`, `values_json` (store/instrument_tables.py).
  7  `change_points`: what `nettune history --save` found (store/change_points_table.py),
     for tools that read the store (the Grafana dashboard); created empty.

The value columns of `runs` are the field table's (record/fields.py, store/columns.py):
created, added to older databases and filled from `extra_json` there, versioned by
`fields_version` in `meta`. A database whose `schema_version` is newer than this nettune's
is refused (upgrade nettune); one whose `fields_version` is newer is read and written.
"""
from __future__ import annotations

import hashlib
import json
from typing import Callable

from ..errors import NettuneError
from ..record.fields import STORED
from . import change_points_table as change_points
from . import columns
from . import idle_table as idle
from . import instrument_tables as instrument
from .cpu_units import units_for
from .sql import Sql

SCHEMA_VERSION = 7

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
  owner TEXT,                                 -- '<pid> <start time> <boot id> <machine>' of the runner (schema 2)
  nettune_version TEXT                        -- the nettune that ran it (schema 5)
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

# the network and CPU values of a run (the field table's measures group, stored, after duration)
METRIC_COLUMNS = [f.name for f in STORED if f.group == "measures" and f.name != "duration"]
CPU_COLS_OF_SCHEMA_3 = ["cpu_client", "cpu_server", "cpu_host", "cpu_host_softirq"]  # what a schema-3 database has to upgrade


def spec_hash(spec_text: str | None, spec_json: str = "") -> str:
    """SHA-256 of the study file's text (of its parsed JSON when run without a file)."""
    return hashlib.sha256((spec_text if spec_text is not None else spec_json).encode()).hexdigest()


def _to_2(sql: Sql) -> None:
    """The studies' file hash and owner."""
    have = sql.columns("studies")
    for col in ("spec_hash", "owner"):
        if col not in have:
            sql.script(sql.ddl(f"ALTER TABLE studies ADD COLUMN {col} TEXT"))
    rows = sql.rows("SELECT id, spec_text, spec_json FROM studies WHERE spec_hash IS NULL")
    sql.many("UPDATE studies SET spec_hash=? WHERE id=?", [(spec_hash(r["spec_text"], r["spec_json"]), r["id"]) for r in rows])


def _to_3(sql: Sql) -> None:
    """Pair and round columns: the field table's, added and filled by columns.ensure/fill."""


def _to_4(sql: Sql) -> None:
    """The CPU units column, filled with the units nettune's probes wrote."""
    if "cpu_units_json" not in sql.columns("runs"):
        sql.script(sql.ddl("ALTER TABLE runs ADD COLUMN cpu_units_json TEXT NOT NULL DEFAULT '{}'"))
    rows = sql.rows(f"SELECT id, cpu_extra_json, {', '.join(CPU_COLS_OF_SCHEMA_3)} FROM runs WHERE cpu_units_json='{{}}'")
    fill = [(json.dumps(units_for(r, json.loads(r["cpu_extra_json"] or "{}"), None)), r["id"]) for r in rows]
    sql.many("UPDATE runs SET cpu_units_json=? WHERE id=?", [f for f in fill if f[0] != "{}"])


def _to_5(sql: Sql) -> None:
    """The nettune version of each study (unknown for those stored before)."""
    if "nettune_version" not in sql.columns("studies"):
        sql.script(sql.ddl("ALTER TABLE studies ADD COLUMN nettune_version TEXT"))


def _to_6(sql: Sql) -> None:
    """Ceilings per path class, with every run's value and the mean's interval (rows stored
    before were loopback ceilings of one run each: their interval stays unknown)."""
    have = sql.columns("ceilings")
    for col, decl in instrument.ADDED_IN_6.items():
        if col not in have:
            sql.script(sql.ddl(f"ALTER TABLE ceilings ADD COLUMN {col} {decl}"))


def _to_7(sql: Sql) -> None:
    """`change_points`: created (empty) by migrate's DDL, like every table of its own."""


# version -> the step that brings a database of the version before to it
MIGRATIONS: dict[int, Callable[[Sql], None]] = {2: _to_2, 3: _to_3, 4: _to_4, 5: _to_5, 6: _to_6, 7: _to_7}


def migrate(sql: Sql, where: str) -> None:
    """Create the tables a new database lacks, or bring an older one to SCHEMA_VERSION and
    the field table's columns; one transaction, one process at a time."""
    with sql.transaction():
        sql.lock("nettune schema")
        sql.script(sql.ddl(SCHEMA))
        sql.script(sql.ddl(instrument.SCHEMA))  # host ceilings and cross-checks
        sql.script(sql.ddl(idle.IDLE_SCHEMA))  # schema 4: idle_power
        sql.script(sql.ddl(change_points.CHANGE_POINTS_SCHEMA))  # schema 7: change_points
        found = sql.value("SELECT value FROM meta WHERE key='schema_version'")
        version = int(found) if found is not None else SCHEMA_VERSION
        if version > SCHEMA_VERSION:
            raise NettuneError(f"{where}: written by a newer nettune (schema {version} > {SCHEMA_VERSION}); upgrade nettune")
        columns.fill(sql, columns.ensure(sql))  # the field table's columns an older database lacks, filled from extra_json
        columns.record_version(sql)
        for step in range(version + 1, SCHEMA_VERSION + 1):
            MIGRATIONS[step](sql)
        sql.run("INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                (str(SCHEMA_VERSION),))


def version(sql: Sql) -> int | None:
    """The database's schema version (None: a database nettune never wrote, or empty)."""
    if not sql.columns("meta"):
        return None
    found = sql.value("SELECT value FROM meta WHERE key='schema_version'")
    return None if found is None else int(found)


def check_not_newer(sql: Sql, where: str) -> None:
    have = version(sql)
    if have is not None and have > SCHEMA_VERSION:
        raise NettuneError(f"{where}: written by a newer nettune (schema {have} > {SCHEMA_VERSION}); upgrade nettune")


def current(sql: Sql) -> bool:
    """Whether the database has this nettune's layout already (nothing to create or add): a
    reader (the read-only `Store`) upgrades an older one in a copy, never in place."""
    if version(sql) != SCHEMA_VERSION:
        return False
    fields = sql.value("SELECT value FROM meta WHERE key='fields_version'")
    if fields is None or int(fields) < columns.FIELDS_VERSION:
        return False
    return all(sql.columns(t) for t in ("idle_power", "ceilings", "cross_checks", "change_points"))
