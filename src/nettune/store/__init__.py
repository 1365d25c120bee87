"""Where results live. SQLite by default; the schema is versioned (store.sqlite.SCHEMA_VERSION)."""
from .records import RunRecord
from .sqlite import METRIC_COLUMNS, SCHEMA_VERSION, Store

__all__ = ["Store", "RunRecord", "METRIC_COLUMNS", "SCHEMA_VERSION"]
