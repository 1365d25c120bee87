"""The columns of `runs` that the field table defines (record/fields.py): created with the
table, added to an older database when it is opened (additive: `ALTER TABLE ADD COLUMN`),
filled on the way from what older versions kept in each run's `extra_json`, and the
values a result gives them.

Versioned twice: `schema_version` (schema.py) numbers the layout of the tables, and
`fields_version` the field table's columns. A database opened by a nettune whose table has
more rows gets them; one whose `fields_version` is newer than this nettune's is read (the
columns it does not know are left out of `RunRecord`) and written (they stay NULL).
"""
from __future__ import annotations

import json
from typing import Any

from ..record.fields import STORED, Field
from ..record.legacy import split
from .sql import Sql

# 1: the columns of schema 4 (network, CPU, pair, command, energy); 2: max_snd_wnd; 3: cpu_server_host(_softirq); 4: offered_bps; 5: peak_rss_method, energy_note
FIELDS_VERSION = 5


def ddl() -> str:
    """The table's columns for CREATE TABLE runs."""
    return ",\n  ".join(f"{f.name} {f.sql}" for f in STORED)


def names() -> list[str]:
    return [f.name for f in STORED]


def values(result: Any) -> list[Any]:
    """A result's value of every table column, in `names()` order."""
    return [f.of_result(result) for f in STORED]


def ensure(sql: Sql) -> list[Field]:
    """Add the table's columns an older database lacks; returns them (to be filled)."""
    have = sql.columns("runs")
    added = [f for f in STORED if f.name not in have]
    for f in added:
        sql.script(sql.ddl(f"ALTER TABLE runs ADD COLUMN {f.name} {f.sql}"))
    return added


def fill(sql: Sql, added: list[Field]) -> None:
    """The added columns of stored runs, from the parts their `extra_json` holds (pair and
    round since schema 3, command and energy since schema 4); values no part holds (a
    newly parsed metric) stay NULL for runs stored before it."""
    from_parts = [f for f in added if f.part is not None]
    if not from_parts:
        return
    todo = []
    for r in sql.rows("SELECT id, extra_json FROM runs"):
        rid = r["id"]
        try:
            parts = split(json.loads(r["extra_json"] or "{}"))
        except ValueError:
            continue  # unreadable JSON: the run keeps NULLs
        row = [_part_value(parts, f) for f in from_parts]
        if any(v is not None for v in row):
            todo.append((*row, rid))
    sql.many(f"UPDATE runs SET {', '.join(f'{f.name}=?' for f in from_parts)} WHERE id=?", todo)


def _part_value(parts: dict[str, Any], f: Field) -> Any:
    part = parts.get(f.part or "")
    return None if part is None else part.__dict__.get(f.name)


def record_version(sql: Sql) -> None:
    """Note the field table's version (kept if a newer nettune wrote a higher one)."""
    found = sql.value("SELECT value FROM meta WHERE key='fields_version'")
    if found is None or int(found) < FIELDS_VERSION:
        sql.run("INSERT INTO meta (key, value) VALUES ('fields_version', ?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                (str(FIELDS_VERSION),))
