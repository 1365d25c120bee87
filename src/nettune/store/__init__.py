"""Where results live: one protocol (`ResultStore`, store/base.py), two members (SQLite, the
default, store/sqlite.py; PostgreSQL, store/postgres.py), picked from --db by `store_at`
(store/locate.py). The schema is versioned (store/schema.py SCHEMA_VERSION). `Store` reads
a SQLite file (public, no writer); `StoreWriter` (store/writer.py) is what runs and
imports write through."""
from .base import ResultStore
from .locate import STORES, describe, is_url, store_at
from .records import RunRecord
from .schema import METRIC_COLUMNS, SCHEMA_VERSION
from .sqlite import SqliteStore, Store

__all__ = ["ResultStore", "Store", "SqliteStore", "STORES", "store_at", "describe", "is_url", "RunRecord", "METRIC_COLUMNS", "SCHEMA_VERSION"]
