"""One connection to a results database, in the SQL both members speak.

The store's queries are written once, in the subset SQLite and PostgreSQL share, with `?`
placeholders; a member's `Sql` subclass (store/sqlite.py, store/postgres.py) translates
what differs (placeholders, the DDL's types, how a new row's id comes back, how a table's
columns are listed, how a write transaction starts) and nothing else. This is the whole
dialect layer: a dozen statements' worth of differences do not earn SQLAlchemy Core (a
second query language, and its own engine and pool, over two drivers nettune uses plainly).

Statements outside `transaction()` commit on their own (both connections run in
autocommit mode); inside it they commit together or not at all. Transactions nest: only
the outermost commits, so a writer that commits each test (`add_run`) can be called
inside an import that must leave nothing behind when it fails.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Sequence

from ..errors import NettuneError


class Sql:
    """A connection, its dialect, and the few calls the store makes on it."""

    dialect = ""  # "sqlite", "postgresql"
    begin = "BEGIN"  # the statement that opens a write transaction

    def __init__(self) -> None:
        self.depth = 0  # open transaction() blocks

    # -- what a member implements ----------------------------------------------------
    def _execute(self, query: str, args: Sequence[Any]) -> Any:
        """Run one statement (placeholders already translated); a cursor."""
        raise NotImplementedError

    def _executemany(self, query: str, rows: list[Sequence[Any]]) -> None:
        raise NotImplementedError

    def translate(self, query: str) -> str:
        """A query in the shared SQL as this dialect writes it."""
        return query

    def ddl(self, text: str) -> str:
        """CREATE/ALTER text in the shared SQL (SQLite's types) as this dialect writes it."""
        return text

    def script(self, text: str) -> None:
        """Several DDL statements, no parameters."""
        raise NotImplementedError

    def insert(self, query: str, args: Sequence[Any]) -> int:
        """An INSERT into a table with an `id` column; the new row's id."""
        raise NotImplementedError

    def columns(self, table: str) -> set[str]:
        raise NotImplementedError

    def lock(self, name: str) -> None:
        """Inside a transaction: wait until no other process holds `name` (migrations)."""

    def close(self) -> None:
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------
    def rows(self, query: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self._execute(self.translate(query), args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def row(self, query: str, args: Sequence[Any] = ()) -> dict[str, Any] | None:
        found = self.rows(query, args)
        return found[0] if found else None

    def value(self, query: str, args: Sequence[Any] = ()) -> Any:
        """The first column of the first row (None without one)."""
        found = self.row(query, args)
        return None if found is None else next(iter(found.values()))

    def run(self, query: str, args: Sequence[Any] = ()) -> int:
        """A statement that writes; the rows it changed."""
        return int(self._execute(self.translate(query), args).rowcount)

    def many(self, query: str, rows: Iterable[Sequence[Any]]) -> None:
        todo = list(rows)
        if todo:
            self._executemany(self.translate(query), todo)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All statements inside commit together (the outermost block commits)."""
        if self.depth:
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1
            return
        self._execute(self.begin, ())
        self.depth = 1
        try:
            yield
        except BaseException:
            self.depth = 0
            try:
                self._execute("ROLLBACK", ())
            except Exception:  # noqa: BLE001 - a lost connection: the server rolls back; the first error is the one to tell
                pass
            raise
        self.depth = 0
        self._execute("COMMIT", ())


@contextmanager
def closed_on_failure(close: Any, driver_error: Any, say: Any) -> Iterator[None]:
    """The setup of a connection just opened (pragmas, schema check, upgrade): on any failure
    the connection is closed, and a driver error becomes one line, `say(error)`, with no
    traceback. Every member opens its connection through this."""
    try:
        yield
    except driver_error as e:
        close()
        raise NettuneError(say(e)) from None
    except BaseException:
        close()
        raise
