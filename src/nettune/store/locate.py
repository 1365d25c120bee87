"""Which store `--db` names: a file path is SQLite's (the default, `nettune.db`), a
`postgresql://user@host/dbname` URL is PostgreSQL's (libpq's forms: `?host=/run/postgresql`
for a Unix socket, a password in the URL or in ~/.pgpass). `NETTUNE_DB` gives the default
of every command's `--db` (cli/app.py).

STORES is the family's registry: URL scheme -> member.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import NettuneError
from .base import ResultStore, StoreReader
from .postgres import SCHEMES, PostgresStore, shown
from .sqlite import SqliteStore, Store

STORES: dict[str, Callable[[str], ResultStore]] = {"sqlite": SqliteStore} | {s: PostgresStore for s in SCHEMES}


def scheme(db: str | Path) -> str:
    """The member `db` names: "sqlite" for a path, else its URL scheme."""
    text = str(db)
    if "://" not in text:
        return "sqlite"
    return text.split("://", 1)[0].lower()


def is_url(db: str | Path) -> bool:
    return scheme(db) != "sqlite"


def describe(db: str | Path) -> str:
    """`db` as messages show it: a file's absolute path, a URL without its password."""
    return shown(str(db)) if is_url(db) else str(Path(db).resolve())


def same_place(a: str | Path, b: str | Path) -> bool:
    """Do two --db values name one database?"""
    if is_url(a) or is_url(b):
        return str(a) == str(b)
    return Path(a).resolve() == Path(b).resolve()


def store_at(db: str | Path, must_exist: bool = False) -> ResultStore:
    """The store `db` names, opened (created when new; a file that must exist is checked first)."""
    kind = scheme(db)
    member = STORES.get(kind)
    if member is None:
        raise NettuneError(f"--db {shown(str(db))}: unknown database kind {kind!r}; give a SQLite file path or "
                           "postgresql://user@host/dbname")
    if kind == "sqlite" and must_exist and not Path(db).exists():
        raise NettuneError(f"{db}: no results database here; run a study first (`nettune run FILE`) or pass --db PATH")
    return member(str(db))


def open_read_only(db: str | Path | None) -> StoreReader | ResultStore | None:
    """The store `db` names, for a reader that must create nothing (the dry run): a SQLite
    file read-only (`Store`), a postgresql:// URL as a reader of it would open it; None
    when there is no file there."""
    if db is None:
        return None
    if is_url(db):
        return store_at(db)
    return Store(db) if Path(db).is_file() else None
