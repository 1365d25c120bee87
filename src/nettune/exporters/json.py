"""JSON: a list with one object per row, the columns as keys in order; nested values
(a point's parameters, per-stream results) stay nested. NaN is written as null."""
from __future__ import annotations

import json
import math
from typing import Any

from .base import Table, TextExporter


def _value(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


class JsonExporter(TextExporter):
    name = "json"
    suffix = ".json"
    shape = "nested"

    def text(self, table: Table) -> str:
        records = [{c: _value(v) for c, v in zip(table.columns, table.values(row))} for row in table.rows]
        return json.dumps(records, indent=2) + "\n"


EXPORTER = JsonExporter()
