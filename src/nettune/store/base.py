"""The results store: one protocol, one base holding every query, two members.

`ResultStore` is what every caller uses (the run layer writes through it, analysis,
exports, imports, reports and `nettune history` read through it); `StoreBase` implements
it once over a `Sql` connection (store/sql.py) in the SQL both databases speak. The
members only open their connection: `SqliteStore` (store/sqlite.py, a file, WAL, the
default) and `PostgresStore` (store/postgres.py, `postgresql://...`, one database shared
by several machines). `store_at` (store/locate.py) picks one from `--db`.

Guarantees, the same on both: every test is committed the moment it ends (`add_run`;
the pairs of one parallel round together, `add_runs`); a killed run loses at most the
test in flight; ids come from the database, so several processes write to one database
at once without mixing their tests; a study is continued (`--resume`) only by the process
that claimed it (`claim_study`, compare-and-set on its owner).
"""
from __future__ import annotations

import json
import time
from contextlib import AbstractContextManager
from importlib import metadata
from typing import Any, Protocol

from ..engines.result import TestResult
from ..errors import NettuneError
from ..record.point_state import PointState
from . import change_points_table as cp
from . import columns
from . import idle_table as idle
from . import instrument_tables as instrument
from .cpu_units import CPU_COLUMNS, units_for
from .records import RunRecord
from .schema import migrate, spec_hash
from .sql import Sql


def nettune_version() -> str:
    try:
        return metadata.version("nettune")
    except metadata.PackageNotFoundError:
        return "unknown"


class ResultStore(Protocol):
    """Where a study's results live; every method commits what it writes before it returns
    (unless inside `transaction()`)."""

    where: str  # the database as the user named it (a path, or the URL without its password)
    dialect: str  # "sqlite", "postgresql"

    def close(self) -> None: ...
    def __enter__(self) -> "ResultStore": ...
    def __exit__(self, *exc: Any) -> None: ...
    def transaction(self) -> AbstractContextManager[None]: ...

    # writing
    def begin_study(self, study: Any, spec_text: str | None = None, spec_file: str | None = None, status: str = "running",
                    owner: str | None = None) -> int: ...
    def claim_study(self, study_id: int, owner: str, was: dict[str, Any]) -> bool: ...
    def update_study(self, study_id: int, spec_json: str | None = None, spec_text: str | None = None) -> None: ...
    def add_point(self, study_id: int, idx: int, params: dict[str, Any]) -> int: ...
    def add_facts(self, study_id: int, facts: dict[str, dict[str, Any]]) -> None: ...
    def add_runs(self, study_id: int, point_id: int, run: int, warmup: bool, results: list[TestResult],
                 settings: PointState | dict[str, Any] | None = None) -> None: ...
    def add_run(self, study_id: int, point_id: int, run: int, warmup: bool, result: TestResult,
                settings: PointState | dict[str, Any] | None = None) -> int: ...
    def finish_study(self, study_id: int, status: str) -> None: ...
    def add_idle(self, study_id: int, point_id: int, host: str, sample: dict[str, Any]) -> None: ...
    def add_idle_row(self, study_id: int, point_id: int, row: dict[str, Any]) -> None: ...
    def add_ceilings(self, machine: str, rows: list[dict[str, Any]], path: str = "loopback") -> None: ...
    def add_cross_check(self, study_id: int, point_idx: int, label: str, rows: list[dict[str, Any]], verdict: str,
                        check_study_id: int | None) -> None: ...
    def save_change_points(self, study_name: str, metric: str, unit: str, rows: list[dict[str, Any]]) -> None: ...

    # reading
    def studies(self) -> list[dict[str, Any]]: ...
    def find_study(self, ref: str | int | None = None) -> dict[str, Any]: ...
    def named(self, name: str) -> list[dict[str, Any]]: ...
    def stored_slots(self, study_id: int) -> list[dict[str, Any]]: ...
    def last_run(self, point_id: int) -> int | None: ...
    def runs(self, study_id: int, include_warmup: bool = True) -> list[RunRecord]: ...
    def points(self, study_id: int) -> list[dict[str, Any]]: ...
    def facts(self, study_id: int) -> dict[str, dict[str, Any]]: ...
    def idle(self, study_id: int) -> list[dict[str, Any]]: ...
    def idle_points(self, study_id: int) -> list[int]: ...
    def raw_outputs(self, run_id: int) -> list[dict[str, Any]]: ...
    def ceilings(self, machine: str, path: str = "loopback") -> dict[str, dict[int, float]]: ...
    def ceiling_runs(self, machine: str) -> dict[str, dict[str, dict[str, list[float]]]]: ...
    def ceiling_rows(self, machine: str | None = None) -> list[dict[str, Any]]: ...
    def cross_checks(self, study_id: int) -> list[dict[str, Any]]: ...
    def change_points(self, study_name: str) -> list[dict[str, Any]]: ...


class StoreReader:
    """The reading half of ResultStore over a Sql connection (the public read-only `Store`,
    store/sqlite.py, is one): a member sets `sql`, `where` and `dialect`."""

    sql: Sql
    where = ""
    dialect = ""

    def close(self) -> None:
        self.sql.close()

    def __enter__(self) -> "StoreReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------
    def studies(self) -> list[dict[str, Any]]:
        return self.sql.rows(
            "SELECT s.id, s.name, s.description, s.target_kind, s.started, s.finished, s.status,"
            " (SELECT COUNT(*) FROM points p WHERE p.study_id=s.id) AS points,"
            " (SELECT COUNT(*) FROM runs r WHERE r.study_id=s.id) AS runs,"
            " (SELECT COUNT(*) FROM runs r WHERE r.study_id=s.id AND r.ok=0) AS failed"
            " FROM studies s ORDER BY s.id"
        )

    def find_study(self, ref: str | int | None = None) -> dict[str, Any]:
        """A study by id ('7' or '#7') or by name (the latest run of that name); None = latest."""
        if ref is None:
            row = self.sql.row("SELECT * FROM studies ORDER BY id DESC LIMIT 1")
        elif str(ref).lstrip("#").isdigit():
            row = self.sql.row("SELECT * FROM studies WHERE id=?", (int(str(ref).lstrip("#")),))
        else:
            row = self.sql.row("SELECT * FROM studies WHERE name=? ORDER BY id DESC LIMIT 1", (str(ref),))
        if row is None:
            names = sorted({s["name"] for s in self.studies()})
            hint = f"studies here: {', '.join(names)}" if names else "it is empty; run a study first"
            what = f"no study {ref!r}" if ref is not None else "no study"
            raise NettuneError(f"{self.where}: {what}; {hint} (see `nettune studies`)")
        return row

    def named(self, name: str) -> list[dict[str, Any]]:
        """Studies of this name, newest first (id, status, owner, times, file text and hash, nettune version)."""
        return self.sql.rows(
            "SELECT id, name, status, owner, started, finished, spec_file, spec_text, spec_hash, nettune_version FROM studies"
            " WHERE name=? ORDER BY id DESC", (name,))

    def stored_slots(self, study_id: int) -> list[dict[str, Any]]:
        """What resume needs of each stored test: its slot, pair and primary value (throughput,
        or a command's wall seconds as its duration), no series."""
        rows = self.sql.rows(
            "SELECT p.idx AS point_idx, r.run, r.warmup, r.ok, r.engine, r.duration, r.receiver_bps, r.reverse_receiver_bps, r.extra_json"
            " FROM runs r JOIN points p ON p.id=r.point_id WHERE r.study_id=? ORDER BY r.id",
            (study_id,),
        )
        return [r | {"warmup": bool(r["warmup"]), "ok": bool(r["ok"]), "extra": json.loads(r["extra_json"])} for r in rows]

    def last_run(self, point_id: int) -> int | None:
        """The highest run number stored at a point (None: none yet)."""
        found = self.sql.value("SELECT MAX(run) FROM runs WHERE point_id=?", (point_id,))
        return None if found is None else int(found)

    def runs(self, study_id: int, include_warmup: bool = True) -> list[RunRecord]:
        q = (
            "SELECT r.*, p.idx AS point_idx, p.params_json, s.name AS study FROM runs r"
            " JOIN points p ON p.id=r.point_id JOIN studies s ON s.id=r.study_id WHERE r.study_id=?"
        )
        if not include_warmup:
            q += " AND r.warmup=0"
        return [RunRecord.from_row(row) for row in self.sql.rows(q + " ORDER BY r.id", (study_id,))]

    def points(self, study_id: int) -> list[dict[str, Any]]:
        rows = self.sql.rows("SELECT id, idx, params_json FROM points WHERE study_id=? ORDER BY idx", (study_id,))
        return [{"id": r["id"], "idx": r["idx"], "point": json.loads(r["params_json"])} for r in rows]

    def facts(self, study_id: int) -> dict[str, dict[str, Any]]:
        rows = self.sql.rows("SELECT host, facts_json FROM host_facts WHERE study_id=? ORDER BY id", (study_id,))
        return instrument.with_ceilings(self.sql, {r["host"]: json.loads(r["facts_json"]) for r in rows})

    def idle(self, study_id: int) -> list[dict[str, Any]]:
        return idle.idle_rows(self.sql, study_id)

    def idle_points(self, study_id: int) -> list[int]:
        """Indices of the points whose idle power is stored (a resumed study skips them)."""
        return sorted({r["point_idx"] for r in idle.idle_rows(self.sql, study_id)})

    def raw_outputs(self, run_id: int) -> list[dict[str, Any]]:
        rows = self.sql.rows("SELECT * FROM raw_outputs WHERE run_id=? ORDER BY id", (run_id,))
        return [r | {"command": json.loads(r["command_json"])} for r in rows]

    def ceilings(self, machine: str, path: str = "loopback") -> dict[str, dict[int, float]]:
        """config -> {streams: mean bits/s} `nettune ceiling` measured on `machine`'s `path` class."""
        return instrument.ceilings(self.sql, machine, path)

    def ceiling_runs(self, machine: str) -> dict[str, dict[str, dict[str, list[float]]]]:
        """path -> config -> {streams (text): every run's bits/s} measured on `machine`."""
        return instrument.ceiling_runs(self.sql, machine)

    def ceiling_rows(self, machine: str | None = None) -> list[dict[str, Any]]:
        return instrument.ceiling_rows(self.sql, machine)

    def cross_checks(self, study_id: int) -> list[dict[str, Any]]:
        return instrument.cross_checks(self.sql, study_id)

    def change_points(self, study_name: str) -> list[dict[str, Any]]:
        """What `nettune history --save` stored for a study name, oldest first."""
        return cp.change_point_rows(self.sql, study_name)


class StoreBase(StoreReader):
    """ResultStore over a Sql connection: a member sets `sql`, `where` and `dialect`, then
    calls `_ready()` (the tables created or migrated)."""

    def _ready(self) -> None:
        migrate(self.sql, self.where)

    def __enter__(self) -> "StoreBase":
        return self

    def transaction(self) -> AbstractContextManager[None]:
        """Everything written inside commits together, or nothing (an import)."""
        return self.sql.transaction()

    # -- writing -------------------------------------------------------------------
    def begin_study(self, study: Any, spec_text: str | None = None, spec_file: str | None = None, status: str = "running",
                    owner: str | None = None) -> int:
        spec_json = study.model_dump_json()
        return self.sql.insert(
            "INSERT INTO studies (name, description, spec_file, spec_text, spec_json, target_kind, started, status, spec_hash, owner,"
            " nettune_version) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (study.name, study.description, spec_file, spec_text, spec_json, study.target.kind, time.time(), status,
             spec_hash(spec_text, spec_json), owner, nettune_version()),
        )

    def claim_study(self, study_id: int, owner: str, was: dict[str, Any]) -> bool:
        """Mark a study running again under `owner`, only if nobody else did since `was`
        (its row as read): two `--resume` at once, on one machine or two, cannot both continue it."""
        return self.sql.run(
            "UPDATE studies SET status='running', owner=?, finished=NULL WHERE id=? AND status=? AND COALESCE(owner, '')=?",
            (owner, study_id, was["status"], was.get("owner") or ""),
        ) == 1

    def update_study(self, study_id: int, spec_json: str | None = None, spec_text: str | None = None) -> None:
        """An imported study's sweep and header grow with each file imported into it."""
        if spec_json is not None:
            self.sql.run("UPDATE studies SET spec_json=? WHERE id=?", (spec_json, study_id))
        if spec_text is not None:
            self.sql.run("UPDATE studies SET spec_text=? WHERE id=?", (spec_text, study_id))

    def add_point(self, study_id: int, idx: int, params: dict[str, Any]) -> int:
        """The point's id; a point already stored (a resumed study) keeps its row."""
        found = self.sql.value("SELECT id FROM points WHERE study_id=? AND idx=?", (study_id, idx))
        if found is not None:
            return int(found)
        return self.sql.insert("INSERT INTO points (study_id, idx, params_json) VALUES (?,?,?)", (study_id, idx, json.dumps(params)))

    def add_facts(self, study_id: int, facts: dict[str, dict[str, Any]]) -> None:
        with self.sql.transaction():
            self.sql.many("INSERT INTO host_facts (study_id, host, facts_json) VALUES (?,?,?)",
                          [(study_id, h, json.dumps(f)) for h, f in facts.items()])

    def add_runs(self, study_id: int, point_id: int, run: int, warmup: bool, results: list[TestResult],
                 settings: PointState | dict[str, Any] | None = None) -> None:
        """Several tests in one transaction (the pairs of a parallel round): all or none."""
        with self.sql.transaction():
            for r in results:
                self.add_run(study_id, point_id, run, warmup, r, settings)

    def add_run(self, study_id: int, point_id: int, run: int, warmup: bool, result: TestResult,
                settings: PointState | dict[str, Any] | None = None) -> int:
        """One test and its raw outputs, committed together the moment it ends (inside
        `transaction()`, with the outermost block)."""
        r = result
        started = r.client.started if r.client else time.time()
        units = units_for(r.model_dump(include=set(CPU_COLUMNS)), r.cpu_extra, r.cpu_units)  # an import may declare them
        state = settings.to_json() if isinstance(settings, PointState) else (settings or {})
        names = columns.names()
        with self.sql.transaction():
            run_id = self.sql.insert(
                f"INSERT INTO runs (study_id, point_id, run, warmup, ok, error, engine, tool_version, protocol, started,"
                f" cpu_extra_json, tool_cpu_json, warnings_json, streams_json, intervals_json, settings_json, extra_json,"
                f" cpu_units_json, {', '.join(names)}) VALUES ({', '.join('?' * (18 + len(names)))})",
                (study_id, point_id, run, int(warmup), int(r.ok), r.error, r.engine, r.tool_version, r.protocol, started,
                 json.dumps(r.cpu_extra), json.dumps(r.tool_cpu), json.dumps(r.warnings),
                 json.dumps([s.model_dump(exclude_none=True) for s in r.streams]),
                 json.dumps([i.model_dump(exclude_none=True) for i in r.intervals]),
                 json.dumps(state), json.dumps(dict(r.extra)), json.dumps(units), *columns.values(r)),
            )
            self.sql.many(
                "INSERT INTO raw_outputs (run_id, side, host, command_json, exit_code, timed_out, stdout, stderr) VALUES (?,?,?,?,?,?,?,?)",
                [(run_id, side.role, side.host, json.dumps(side.argv), side.exit_code, int(side.timed_out), side.stdout, side.stderr)
                 for side in (r.client, r.server) if side is not None],
            )
        return run_id

    def finish_study(self, study_id: int, status: str) -> None:
        self.sql.run("UPDATE studies SET finished=?, status=? WHERE id=?", (time.time(), status, study_id))

    def add_idle(self, study_id: int, point_id: int, host: str, sample: dict[str, Any]) -> None:
        """An idle-power window after a point ([probes] idle_power), a row per source."""
        idle.add_idle(self.sql, study_id, point_id, host, sample)

    def add_idle_row(self, study_id: int, point_id: int, row: dict[str, Any]) -> None:
        """One idle row as `idle` gives it back (an imported export's)."""
        idle.add_idle_row(self.sql, study_id, point_id, row)

    def add_ceilings(self, machine: str, rows: list[dict[str, Any]], path: str = "loopback") -> None:
        instrument.add_ceilings(self.sql, machine, rows, path)

    def add_cross_check(self, study_id: int, point_idx: int, label: str, rows: list[dict[str, Any]], verdict: str,
                        check_study_id: int | None) -> None:
        instrument.add_cross_check(self.sql, study_id, point_idx, label, rows, verdict, check_study_id)

    def save_change_points(self, study_name: str, metric: str, unit: str, rows: list[dict[str, Any]]) -> None:
        """`nettune history --save`: replace the study's change points of that metric."""
        cp.save_change_points(self.sql, study_name, metric, unit, rows)
