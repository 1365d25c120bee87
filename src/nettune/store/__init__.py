"""Where results live. SQLite by default; the schema is versioned (store.sqlite.SCHEMA_VERSION)."""
from .sqlite import METRICS, SCHEMA_VERSION, Store

__all__ = ["Store", "METRICS", "SCHEMA_VERSION"]
