"""The results database as readers see it: `Store` opens an existing nettune database
read-only and gives back its studies, points and runs (`RunRecord`s). Writing (a run, an
import, `nettune ceiling`) is `store/writer.py`'s `StoreWriter`, the only class that
creates a database; the layout and its upgrades are `store/schema.py`'s.

A reader never changes the file: a database written by an older nettune is copied into
memory and upgraded there (the next run or import into it upgrades the file itself).
"""
from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import NettuneError
from ..record.fields import STORED
from . import idle_table as idle
from . import instrument_tables as instrument
from . import schema
from .records import RunRecord
from .schema import SCHEMA_VERSION as SCHEMA_VERSION, spec_hash as spec_hash  # noqa: F401 - re-exported

# the network and CPU values of a run (the field table's measures group, stored, after duration)
METRIC_COLUMNS = [f.name for f in STORED if f.group == "measures" and f.name != "duration"]


class Store:
    """A nettune results database, opened read-only.

    `Store(path)` opens a database a run or an import wrote; a path that does not exist is
    `FileNotFoundError` (a typo never creates an empty database), a file that is not a
    nettune database is `NettuneError`. Nothing here writes: an older database is
    upgraded in a copy in memory. A `Store` may be read from several threads (SQLite's
    serialized mode). Use it as a context manager, or call `close()`.

    Example::

        from nettune import Store
        with Store("nettune.db") as store:
            for s in store.studies():
                print(s["id"], s["name"], s["status"], s["runs"])
            rows = store.runs(store.find_study("quick")["id"])
            print(rows[0].receiver_bps, rows[0].point)

    For DataFrames, use `nettune.results(path)` instead.
    """

    def __init__(self, path: str | Path = "nettune.db"):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(errno.ENOENT, "no nettune results database here (a run or an import creates one)", str(path))
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        try:
            self.db = sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=sqlite3.threadsafety != 3)
        except sqlite3.Error as e:
            raise NettuneError(f"{self.path}: cannot open the results database: {e}") from None
        self.db.row_factory = sqlite3.Row
        try:
            schema.check_not_newer(self.db, self.path)
            if not schema.current(self.db):
                self.db = self._upgraded_copy()
        except sqlite3.DatabaseError as e:
            self.db.close()
            raise NettuneError(f"{self.path}: not a nettune results database ({e}); pass another --db") from None

    def _upgraded_copy(self) -> sqlite3.Connection:
        """The database in memory, brought to this nettune's layout (the file is left as it is)."""
        if schema.version(self.db) is None and not self.db.execute("SELECT 1 FROM sqlite_master WHERE name='studies'").fetchone():
            raise sqlite3.DatabaseError("no studies table")
        mem = sqlite3.connect(":memory:", check_same_thread=sqlite3.threadsafety != 3)
        self.db.backup(mem)
        self.db.close()
        mem.row_factory = sqlite3.Row
        schema.migrate(mem, self.path)
        return mem

    def close(self) -> None:
        """Close the connection (a `with` block does it)."""
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------
    def studies(self) -> list[dict[str, Any]]:
        """Every study, oldest first: id, name, description, target_kind, started and
        finished (Unix time), status (running, done, failed, interrupted, imported), and
        how many points, runs and failed runs it holds."""
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
        """Every stored test of a study as a `RunRecord`, in the order they ran: its point
        (`point_idx`, `point`), run number, ok/warmup flags, values in the field table's
        units (bits/s, bytes, %), settings in force and series. Example::

            rec = store.runs(7)[0]
            rec.receiver_bps, rec.point["streams"], rec.state.knobs
        """
        q = (
            "SELECT r.*, p.idx AS point_idx, p.params_json, s.name AS study FROM runs r"
            " JOIN points p ON p.id=r.point_id JOIN studies s ON s.id=r.study_id WHERE r.study_id=?"
        )
        if not include_warmup:
            q += " AND r.warmup=0"
        return [RunRecord.from_row(row) for row in self.db.execute(q + " ORDER BY r.id", (study_id,)).fetchall()]

    def points(self, study_id: int) -> list[dict[str, Any]]:
        """The study's points in index order: `{"id", "idx", "point"}`, `point` being its
        sweep parameters (`{"queues": 2, "streams": 4}`)."""
        rows = self.db.execute("SELECT id, idx, params_json FROM points WHERE study_id=? ORDER BY idx", (study_id,)).fetchall()
        return [{"id": r["id"], "idx": r["idx"], "point": json.loads(r["params_json"])} for r in rows]

    def facts(self, study_id: int) -> dict[str, dict[str, Any]]:
        """What each host reported when the study began (kernel, CPUs, NIC, tool versions)."""
        rows = self.db.execute("SELECT host, facts_json FROM host_facts WHERE study_id=? ORDER BY id", (study_id,)).fetchall()
        return instrument.with_ceilings(self.db, {r["host"]: json.loads(r["facts_json"]) for r in rows})

    def idle(self, study_id: int) -> list[dict[str, Any]]:
        """Idle power windows ([probes] idle_power): a row per point, machine and source."""
        return idle.idle_rows(self.db, study_id)

    def idle_points(self, study_id: int) -> list[int]:
        """Indices of the points whose idle power is stored (a resumed study skips them)."""
        return sorted({r["point_idx"] for r in idle.idle_rows(self.db, study_id)})

    def raw_outputs(self, run_id: int) -> list[dict[str, Any]]:
        """Both sides of one test as the tools printed them: command, exit code, stdout, stderr."""
        rows = self.db.execute("SELECT * FROM raw_outputs WHERE run_id=? ORDER BY id", (run_id,)).fetchall()
        return [dict(r) | {"command": json.loads(r["command_json"])} for r in rows]
