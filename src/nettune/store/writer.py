"""The results database as a run, an import or `nettune ceiling` writes it: `StoreWriter`
is the SQLite member of the store (store/sqlite.py `SqliteStore`): it creates the database
(0600) if it does not exist, brings an older one to this layout (store/schema.py) and adds
studies, points and tests, each test committed the moment it ends. It reads as `Store` does.
Commands open the member --db names with `store_at` (store/locate.py), PostgreSQL's too.

Not part of the public API: notebooks read through `nettune.Store` or `nettune.results`,
and write only by running a study (`nettune.run_study`).
"""
from __future__ import annotations

from .sqlite import SqliteStore as StoreWriter

__all__ = ["StoreWriter"]
