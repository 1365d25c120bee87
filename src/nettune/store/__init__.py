"""Where results live. SQLite by default; the schema is versioned (store.sqlite.SCHEMA_VERSION)."""
from .records import RunRecord
from .sqlite import METRICS, SCHEMA_VERSION, Store

__all__ = ["Store", "RunRecord", "METRICS", "SCHEMA_VERSION"]
