"""Where results live: SQLite, versioned (store/schema.py). `Store` reads (public);
`StoreWriter` (store/writer.py) is what runs and imports write through."""
from .records import RunRecord
from .sqlite import METRIC_COLUMNS, SCHEMA_VERSION, Store

__all__ = ["Store", "RunRecord", "METRIC_COLUMNS", "SCHEMA_VERSION"]
