"""The results database as a run, an import or `nettune ceiling` writes it: `StoreWriter`
creates the database (0600) if it does not exist, brings an older one to this layout
(store/schema.py) and adds studies, points and tests, each test committed the moment it
ends (a killed run loses at most the test in flight). It reads as `Store` does.

Not part of the public API: notebooks read through `nettune.Store` or `nettune.results`,
and write only by running a study (`nettune.run_study`).
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from ..engines.result import TestResult
from ..errors import NettuneError
from ..record.point_state import PointState
from . import columns
from . import idle_table as idle
from . import schema
from .cpu_units import CPU_COLUMNS, units_for
from .private_file import private_file
from .sqlite import Store


class StoreWriter(Store):
    """A results database opened for writing (created if missing, upgraded if older)."""

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
            schema.migrate(self.db, self.path)
        except sqlite3.DatabaseError as e:
            raise NettuneError(f"{self.path}: not a nettune results database ({e}); pass another --db") from None

    def __enter__(self) -> "StoreWriter":
        return self

    def begin_study(self, study: Any, spec_text: str | None = None, spec_file: str | None = None, status: str = "running", owner: str | None = None) -> int:
        spec_json = study.model_dump_json()
        cur = self.db.execute(
            "INSERT INTO studies (name, description, spec_file, spec_text, spec_json, target_kind, started, status, spec_hash, owner)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            (study.name, study.description, spec_file, spec_text, spec_json, study.target.kind, time.time(), status, schema.spec_hash(spec_text, spec_json), owner),
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

    def add_idle(self, study_id: int, point_id: int, host: str, sample: dict[str, Any]) -> None:
        """An idle-power window after a point ([probes] idle_power), a row per source."""
        idle.add_idle(self.db, study_id, point_id, host, sample)
