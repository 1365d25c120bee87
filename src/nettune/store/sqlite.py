"""The SQLite member of the store (the default): one file, WAL, every test committed the
moment it finishes, created 0600 (store/private_file.py). The tables and their versions
are store/schema.py's, the queries store/base.py's; this file only opens the connection.

Two ways in: `SqliteStore` (= `StoreWriter`, store/writer.py) is what runs and imports
write through, and creates or upgrades the file; `Store`, the public one
(`from nettune import Store`), opens an existing database read-only and has no writer: a
database written by an older nettune is copied into memory and upgraded there (the next run
or import into it upgrades the file itself).
"""
from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from urllib.parse import quote
from typing import Any, Sequence

from ..errors import NettuneError
from . import schema
from .base import StoreBase, StoreReader
from .private_file import private_file
from .schema import METRIC_COLUMNS, SCHEMA_VERSION
from .sql import Sql, closed_on_failure

__all__ = ["SqliteStore", "Store", "METRIC_COLUMNS", "SCHEMA_VERSION"]


class SqliteSql(Sql):
    dialect = "sqlite"
    begin = "BEGIN IMMEDIATE"  # take the write lock at the start: two writers wait (timeout) instead of failing mid-way

    def __init__(self, db: sqlite3.Connection) -> None:
        super().__init__()
        self.db = db

    def _execute(self, query: str, args: Sequence[Any]) -> Any:
        return self.db.execute(query, tuple(args))

    def _executemany(self, query: str, rows: list[Sequence[Any]]) -> None:
        self.db.executemany(query, rows)

    def script(self, text: str) -> None:
        # statement by statement (executescript would commit an open transaction first)
        pending = ""
        for line in text.splitlines(keepends=True):
            pending += line
            if sqlite3.complete_statement(pending):
                self.db.execute(pending)
                pending = ""
        if pending.strip():
            self.db.execute(pending)

    def insert(self, query: str, args: Sequence[Any]) -> int:
        return int(self.db.execute(query, tuple(args)).lastrowid or 0)

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        self.db.close()


def _not_ours(path: Path, e: Exception) -> str:
    return f"{path}: not a nettune results database ({e}); pass another --db"


class SqliteStore(StoreBase):
    dialect = "sqlite"

    def __init__(self, path: str | Path = "nettune.db"):
        self.path = Path(path)
        self.where = str(self.path)
        if str(path) != ":memory:":
            private_file(self.path)  # 0600: SQLite gives its -wal and -shm the same mode
        try:
            # autocommit: each statement outside Sql.transaction() is durable when it returns
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except sqlite3.Error as e:
            raise NettuneError(f"{self.path}: cannot open the results database: {e}") from None
        self.db.row_factory = sqlite3.Row
        self.sql = SqliteSql(self.db)
        with closed_on_failure(self.db.close, sqlite3.DatabaseError, lambda e: _not_ours(self.path, e)):
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._ready()


class Store(StoreReader):
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

    For DataFrames, use `nettune.results(path)` instead. A team's PostgreSQL store is
    read with `nettune.store.store_at("postgresql://...")`.
    """

    dialect = "sqlite"

    def __init__(self, path: str | Path = "nettune.db"):
        self.path = Path(path)
        self.where = str(self.path)
        if not self.path.is_file():
            raise FileNotFoundError(errno.ENOENT, "no nettune results database here (a run or an import creates one)", str(path))
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        try:
            self.db = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None, check_same_thread=sqlite3.threadsafety != 3)
        except sqlite3.Error as e:
            raise NettuneError(f"{self.path}: cannot open the results database: {e}") from None
        self.db.row_factory = sqlite3.Row
        self.sql = SqliteSql(self.db)
        with closed_on_failure(self.db.close, sqlite3.DatabaseError, lambda e: _not_ours(self.path, e)):
            schema.check_not_newer(self.sql, self.where)
            if not schema.current(self.sql):
                self._upgraded_copy()

    def _upgraded_copy(self) -> None:
        """The database in memory, brought to this nettune's layout (the file is left as it is)."""
        if schema.version(self.sql) is None and not self.sql.columns("studies"):
            raise sqlite3.DatabaseError("no studies table")
        mem = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=sqlite3.threadsafety != 3)
        self.db.backup(mem)
        self.db.close()
        mem.row_factory = sqlite3.Row
        self.db, self.sql = mem, SqliteSql(mem)
        schema.migrate(self.sql, self.where)
