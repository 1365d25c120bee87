"""Analysis results are dataclasses; `JsonRecord` gives them the JSON form `nettune
analyze --format json` prints (fields in declaration order, nested records as objects)
and read access by field name, for notebooks and tests written against that JSON."""
from __future__ import annotations

from dataclasses import fields
from typing import Any


def plain(v: Any) -> Any:
    """Records, and dicts/lists/tuples holding them, as plain JSON-shaped values."""
    if isinstance(v, JsonRecord):
        return v.to_dict()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(plain(x) for x in v)
    return v


class JsonRecord:
    """Mixin for dataclasses: to_dict() and `record["field"]` (the JSON form's value)."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: plain(self.__dict__[f.name]) for f in fields(self)}  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]
