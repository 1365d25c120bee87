"""The results database (SQLite, WAL): every test is committed the moment it finishes.

Tables: studies, points (parameters), runs (metrics), raw_outputs (both sides verbatim),
host_facts. A killed run loses at most the test in flight.

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
import time
from pathlib import Path
from typing import Any

from ..engines.result import TestResult
from ..errors import NettuneError
from .private_file import private_file
from ..record.fields import STORED
from ..record.point_state import PointState
from . import columns
from . import idle_table as idle
from . import instrument_tables as instrument
from .cpu_units import CPU_COLUMNS, units_for
from .records import RunRecord

SCHEMA_VERSION = 4  # 4: command workload and energy columns, idle_power (store/idle_table.py); CPU units (cpu_units_json)

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

# the network and CPU values of a run (the field table's measures group, stored, after duration)
METRIC_COLUMNS = [f.name for f in STORED if f.group == "measures" and f.name != "duration"]
CPU_COLS_OF_SCHEMA_3 = ["cpu_client", "cpu_server", "cpu_host", "cpu_host_softirq"]  # what a schema-3 database has to upgrade


class Store:
    def __init__(self, path: str | Path = "nettune.db"):
        self.path = Path(path)
        if str(path) != ":memory:":
            private_file(self.path)  # 0600: SQLite gives its -wal and -shm the same mode
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
        except sqlite3.Error as e:
            raise NettuneError(f"{self.path}: cannot open the results database: {e}") from None
        self.db.row_factory = sqlite3.Row
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as e:
            raise NettuneError(f"{self.path}: not a nettune results database ({e}); pass another --db") from None

    def _migrate(self) -> None:
        self.db.executescript(SCHEMA)
        instrument.create(self.db)  # host ceilings and cross-checks (store/instrument_tables.py)
        idle.create_idle(self.db)  # schema 4: idle_power (store/idle_table.py)
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is not None and int(row[0]) > SCHEMA_VERSION:
            raise NettuneError(f"{self.path}: written by a newer nettune (schema {row[0]} > {SCHEMA_VERSION}); upgrade nettune")
        with self.db:  # the field table's columns an older database lacks, filled from extra_json (store/columns.py)
            columns.fill(self.db, columns.ensure(self.db))
            columns.record_version(self.db)
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            self.db.commit()
        elif int(row[0]) < SCHEMA_VERSION:
            if int(row[0]) < 2:
                self._upgrade_from_1()
            self._upgrade_from_3()

    def _upgrade_from_3(self) -> None:
        """Schema 3 -> 4: the CPU units column, filled with the units nettune's probes wrote."""
        with self.db:
            have = {r["name"] for r in self.db.execute("PRAGMA table_info(runs)")}
            if "cpu_units_json" not in have:
                self.db.execute("ALTER TABLE runs ADD COLUMN cpu_units_json TEXT NOT NULL DEFAULT '{}'")
            rows = self.db.execute(f"SELECT id, cpu_extra_json, {', '.join(CPU_COLS_OF_SCHEMA_3)} FROM runs WHERE cpu_units_json='{{}}'").fetchall()
            fill = [(json.dumps(units_for(dict(r), json.loads(r["cpu_extra_json"] or "{}"), None)), r["id"]) for r in rows]
            self.db.executemany("UPDATE runs SET cpu_units_json=? WHERE id=?", [f for f in fill if f[0] != "{}"])
            self.db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))

    def _upgrade_from_1(self) -> None:
        """Schema 1 -> 2: the studies' file hash and owner, in one transaction."""
        with self.db:
            have = {r["name"] for r in self.db.execute("PRAGMA table_info(studies)")}
            for col in ("spec_hash", "owner"):
                if col not in have:
                    self.db.execute(f"ALTER TABLE studies ADD COLUMN {col} TEXT")
            rows = self.db.execute("SELECT id, spec_text, spec_json FROM studies WHERE spec_hash IS NULL").fetchall()
            self.db.executemany("UPDATE studies SET spec_hash=? WHERE id=?", [(spec_hash(r["spec_text"], r["spec_json"]), r["id"]) for r in rows])
            self.db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------
    def begin_study(self, study: Any, spec_text: str | None = None, spec_file: str | None = None, status: str = "running", owner: str | None = None) -> int:
        spec_json = study.model_dump_json()
        cur = self.db.execute(
            "INSERT INTO studies (name, description, spec_file, spec_text, spec_json, target_kind, started, status, spec_hash, owner)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            (study.name, study.description, spec_file, spec_text, spec_json, study.target.kind, time.time(), status, spec_hash(spec_text, spec_json), owner),
        )
        self.db.commit()
        return int(cur.lastrowid or 0)

    def claim_study(self, study_id: int, owner: str, was: dict[str, Any]) -> bool:
        """Mark a study running again under `owner`, only if nobody else did since `was`
        (its row as read): two `--resume` at once cannot both continue it."""
        cur = self.db.execute(
            "UPDATE studies SET status='running', owner=?, finished=NULL WHERE id=? AND status=? AND owner IS ?",
            (owner, study_id, was["status"], was.get("owner")),
        )
        self.db.commit()
        return cur.rowcount == 1

    def add_point(self, study_id: int, idx: int, params: dict[str, Any]) -> int:
        """The point's id; a point already stored (a resumed study) keeps its row."""
        row = self.db.execute("SELECT id FROM points WHERE study_id=? AND idx=?", (study_id, idx)).fetchone()
        if row is not None:
            return int(row[0])
        cur = self.db.execute("INSERT INTO points (study_id, idx, params_json) VALUES (?,?,?)", (study_id, idx, json.dumps(params)))
        self.db.commit()
        return int(cur.lastrowid or 0)

    def add_facts(self, study_id: int, facts: dict[str, dict[str, Any]]) -> None:
        self.db.executemany("INSERT INTO host_facts (study_id, host, facts_json) VALUES (?,?,?)", [(study_id, h, json.dumps(f)) for h, f in facts.items()])
        self.db.commit()

    def add_runs(self, study_id: int, point_id: int, run: int, warmup: bool, results: list[TestResult],
                 settings: PointState | dict[str, Any] | None = None) -> None:
        """Several tests in one transaction (the pairs of a parallel round): all or none."""
        try:
            for r in results:
                self.add_run(study_id, point_id, run, warmup, r, settings, commit=False)
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()

    def add_run(self, study_id: int, point_id: int, run: int, warmup: bool, result: TestResult,
                settings: PointState | dict[str, Any] | None = None, commit: bool = True) -> int:
        r = result
        started = r.client.started if r.client else time.time()
        units = units_for(r.model_dump(include=set(CPU_COLUMNS)), r.cpu_extra, r.cpu_units)  # an import may declare them
        state = settings.to_json() if isinstance(settings, PointState) else (settings or {})
        names = columns.names()
        cur = self.db.execute(
            f"INSERT INTO runs (study_id, point_id, run, warmup, ok, error, engine, tool_version, protocol, started,"
            f" cpu_extra_json, tool_cpu_json, warnings_json, streams_json, intervals_json, settings_json, extra_json,"
            f" cpu_units_json, {', '.join(names)}) VALUES ({', '.join('?' * (18 + len(names)))})",
            (study_id, point_id, run, int(warmup), int(r.ok), r.error, r.engine, r.tool_version, r.protocol, started,
             json.dumps(r.cpu_extra), json.dumps(r.tool_cpu), json.dumps(r.warnings),
             json.dumps([s.model_dump(exclude_none=True) for s in r.streams]),
             json.dumps([i.model_dump(exclude_none=True) for i in r.intervals]),
             json.dumps(state), json.dumps(dict(r.extra)), json.dumps(units), *columns.values(r)),
        )
        run_id = int(cur.lastrowid or 0)
        for side in (r.client, r.server):
            if side is not None:
                self.db.execute(
                    "INSERT INTO raw_outputs (run_id, side, host, command_json, exit_code, timed_out, stdout, stderr) VALUES (?,?,?,?,?,?,?,?)",
                    (run_id, side.role, side.host, json.dumps(side.argv), side.exit_code, int(side.timed_out), side.stdout, side.stderr),
                )
        if commit:
            self.db.commit()  # each test is durable the moment it ends
        return run_id

    def finish_study(self, study_id: int, status: str) -> None:
        self.db.execute("UPDATE studies SET finished=?, status=? WHERE id=?", (time.time(), status, study_id))
        self.db.commit()

    # -- reading -------------------------------------------------------------------
    def studies(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT s.id, s.name, s.description, s.target_kind, s.started, s.finished, s.status,"
            " (SELECT COUNT(*) FROM points p WHERE p.study_id=s.id) AS points,"
            " (SELECT COUNT(*) FROM runs r WHERE r.study_id=s.id) AS runs,"
            " (SELECT COUNT(*) FROM runs r WHERE r.study_id=s.id AND r.ok=0) AS failed"
            " FROM studies s ORDER BY s.id"
        ).fetchall()
        return [dict(r) for r in rows]

    def find_study(self, ref: str | int | None = None) -> dict[str, Any]:
        """A study by id ('7' or '#7') or by name (the latest run of that name); None = latest."""
        if ref is None:
            row = self.db.execute("SELECT * FROM studies ORDER BY id DESC LIMIT 1").fetchone()
        elif str(ref).lstrip("#").isdigit():
            row = self.db.execute("SELECT * FROM studies WHERE id=?", (int(str(ref).lstrip("#")),)).fetchone()
        else:
            row = self.db.execute("SELECT * FROM studies WHERE name=? ORDER BY id DESC LIMIT 1", (str(ref),)).fetchone()
        if row is None:
            names = sorted({s["name"] for s in self.studies()})
            hint = f"studies here: {', '.join(names)}" if names else "it is empty; run a study first"
            what = f"no study {ref!r}" if ref is not None else "no study"
            raise NettuneError(f"{self.path}: {what}; {hint} (see `nettune studies`)")
        return dict(row)

    def named(self, name: str) -> list[dict[str, Any]]:
        """Studies of this name, newest first (id, status, owner, file text and hash)."""
        rows = self.db.execute(
            "SELECT id, name, status, owner, started, spec_file, spec_text, spec_hash FROM studies WHERE name=? ORDER BY id DESC", (name,)
        ).fetchall()
        return [dict(r) for r in rows]

    def stored_slots(self, study_id: int) -> list[dict[str, Any]]:
        """What resume needs of each stored test: its slot, pair and primary value (throughput,
        or a command's wall seconds as its duration), no series."""
        rows = self.db.execute(
            "SELECT p.idx AS point_idx, r.run, r.warmup, r.ok, r.engine, r.duration, r.receiver_bps, r.reverse_receiver_bps, r.extra_json"
            " FROM runs r JOIN points p ON p.id=r.point_id WHERE r.study_id=? ORDER BY r.id",
            (study_id,),
        ).fetchall()
        return [dict(r) | {"warmup": bool(r["warmup"]), "ok": bool(r["ok"]), "extra": json.loads(r["extra_json"])} for r in rows]

    def runs(self, study_id: int, include_warmup: bool = True) -> list[RunRecord]:
        q = (
            "SELECT r.*, p.idx AS point_idx, p.params_json, s.name AS study FROM runs r"
            " JOIN points p ON p.id=r.point_id JOIN studies s ON s.id=r.study_id WHERE r.study_id=?"
        )
        if not include_warmup:
            q += " AND r.warmup=0"
        return [RunRecord.from_row(row) for row in self.db.execute(q + " ORDER BY r.id", (study_id,)).fetchall()]

    def points(self, study_id: int) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT id, idx, params_json FROM points WHERE study_id=? ORDER BY idx", (study_id,)).fetchall()
        return [{"id": r["id"], "idx": r["idx"], "point": json.loads(r["params_json"])} for r in rows]

    def facts(self, study_id: int) -> dict[str, dict[str, Any]]:
        rows = self.db.execute("SELECT host, facts_json FROM host_facts WHERE study_id=? ORDER BY id", (study_id,)).fetchall()
        return instrument.with_ceilings(self.db, {r["host"]: json.loads(r["facts_json"]) for r in rows})

    def add_idle(self, study_id: int, point_id: int, host: str, sample: dict[str, Any]) -> None:
        """An idle-power window after a point ([probes] idle_power), a row per source."""
        idle.add_idle(self.db, study_id, point_id, host, sample)

    def idle(self, study_id: int) -> list[dict[str, Any]]:
        return idle.idle_rows(self.db, study_id)

    def idle_points(self, study_id: int) -> list[int]:
        """Indices of the points whose idle power is stored (a resumed study skips them)."""
        return sorted({r["point_idx"] for r in idle.idle_rows(self.db, study_id)})

    def raw_outputs(self, run_id: int) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM raw_outputs WHERE run_id=? ORDER BY id", (run_id,)).fetchall()
        return [dict(r) | {"command": json.loads(r["command_json"])} for r in rows]


def spec_hash(spec_text: str | None, spec_json: str = "") -> str:
    """SHA-256 of the study file's text (of its parsed JSON when run without a file)."""
    return hashlib.sha256((spec_text if spec_text is not None else spec_json).encode()).hexdigest()
