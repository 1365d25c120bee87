"""Markdown: a pipe table. Prose columns (`Table.left`) are left-aligned, numbers right;
a '|' in a cell is escaped and a line break becomes a space, so a row stays one line;
'<' and '&' are written as entities, so HTML in a cell (a host's fact, an error text) is
shown, never rendered ('>' alone opens no tag and stays readable: a pair is 'h1->h2')."""
from __future__ import annotations

from typing import Any

from .base import Table, TextExporter


def escape(v: Any) -> str:
    text = "" if v is None else str(v)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("|", "\\|").replace("\n", " ")


class MarkdownExporter(TextExporter):
    name = "markdown"
    suffix = ".md"
    shape = "readable"  # a document for people: `results` gives it the terminal table

    def text(self, table: Table) -> str:
        lines = ["| " + " | ".join(table.columns) + " |",
                 "|" + "|".join("---" if c in table.left else "---:" for c in table.columns) + "|"]
        lines += ["| " + " | ".join(escape(v) for v in table.values(row)) + " |" for row in table.rows]
        return "\n".join(lines) + "\n"


EXPORTER = MarkdownExporter()
