"""The SQLite member of the store (the default): one file, WAL, every test committed the
moment it finishes, created 0600 (store/private_file.py). The tables and their versions
are store/schema.py's, the queries store/base.py's; this file only opens the connection.

`Store` is this class's name of old (`from nettune import Store`, `Store("nettune.db")`).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Sequence

from ..errors import NettuneError
from .base import StoreBase
from .private_file import private_file
from .schema import METRIC_COLUMNS, SCHEMA_VERSION
from .sql import Sql

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
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._ready()
        except sqlite3.DatabaseError as e:
            self.db.close()
            raise NettuneError(f"{self.path}: not a nettune results database ({e}); pass another --db") from None
        except NettuneError:
            self.db.close()
            raise


Store = SqliteStore
