"""Tables that fit the terminal without ever breaking a value.

Rich shrinks columns to fit the console by folding cells mid-word: at 80 columns (a piped
or narrow terminal) "queues" became "queue s" and a swept value 6291456 became "62914" over
"56", a number that can be misread. `fit_table` decides the widths itself:

  - a value is never broken: a column is at least as wide as its longest value, and as
    its header's longest word (headers fold at spaces only);
  - prose columns (status, notes) wrap at word boundaries;
  - when even that does not fit, whole columns are hidden, least important first, and the
    caller is told which, so it can say so under the table.

Machine-readable outputs (--format csv/json/markdown) never go through here: they are
printed whole, whatever the terminal width.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

PROSE_MIN = 12  # a prose column narrower than this reads badly even when words fit


@dataclass
class Fitted:
    table: RenderableType  # a Table, or rows stacked as blocks when no table can fit
    hidden: list[str] = field(default_factory=list)

    def note(self, width: int) -> str | None:
        """The line to print under the table when columns were hidden."""
        if not self.hidden:
            return None
        return (f"{len(self.hidden)} column(s) hidden to fit {width} columns: {', '.join(self.hidden)} "
                "(widen the terminal, or use --format csv, json or markdown for every column)")


def _words(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _chrome(n: int, boxed: bool) -> int:
    # boxed: "│ a │ b │" = 1 + 3 per column; unboxed (box=None, padding 1): 2 per column
    return 1 + 3 * n if boxed else 2 * n


def column_widths(head: Sequence[str], rows: Sequence[Sequence[str]], prose: set[str]) -> tuple[list[int], list[int]]:
    """(natural, minimum) width of each column. Natural: nothing wraps. Minimum: values
    whole, headers and prose folded at spaces only."""
    natural, minimum = [], []
    for i, h in enumerate(head):
        cells = [str(r[i]) for r in rows]
        longest = max((len(c) for c in cells), default=0)
        natural.append(max(len(h), longest))
        if h in prose:
            minimum.append(max(_words(h), min(PROSE_MIN, longest), max((_words(c) for c in cells), default=0)))
        else:
            minimum.append(max(_words(h), longest))
    return natural, minimum


def fit_table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    *,  # cells are plain text (no rich markup); the title may use markup
    drop_order: Sequence[str] = (),
    prose: Sequence[str] = (),
    right: Sequence[str] | None = None,
    styles: Sequence[str | None] | None = None,
    boxed: bool = True,
    **table_kw: object,
) -> Fitted:
    """A rich Table of `head`/`rows` at most `width` wide (see the module docstring).

    drop_order: the columns that may be hidden, least important first.
    right: columns justified right (default: every column that is not prose).
    styles: one rich style (or None) per row."""
    prose_set = set(prose)
    natural, minimum = column_widths(head, rows, prose_set)
    keep = list(range(len(head)))

    def fits(boxed_: bool) -> bool:
        return sum(minimum[i] for i in keep) + _chrome(len(keep), boxed_) <= width

    if boxed and not fits(True):
        boxed = False  # no box lines: one column of padding each side, every column kept longer
    hidden: list[str] = []
    for name in drop_order:
        if fits(boxed):
            break
        if name in head and head.index(name) in keep:
            keep.remove(head.index(name))
            hidden.append(name)
    if not fits(boxed):
        return Fitted(_stacked(head, rows, width, table_kw.get("title")), [])
    widths = {i: minimum[i] for i in keep}
    spare = width - _chrome(len(keep), boxed) - sum(widths.values())
    # give room back where it removes folding: data columns first (headers whole), prose last
    for i in sorted(keep, key=lambda i: (head[i] in prose_set, natural[i] - minimum[i])):
        if spare <= 0:
            break
        extra = min(spare, natural[i] - widths[i])
        widths[i] += extra
        spare -= extra
    if not boxed:
        table_kw.update(box=None, padding=(0, 1), header_style="bold")
    table = Table(**table_kw)  # type: ignore[arg-type]
    right_set = set(right) if right is not None else {h for h in head if h not in prose_set}
    for i in keep:
        # every width holds its longest value, so only headers (at spaces) and prose wrap
        table.add_column(Text(head[i]), justify="right" if head[i] in right_set else "left", width=widths[i], overflow="fold")
    for n, r in enumerate(rows):
        # cells are plain text: a value with "[...]" is shown as is, never read as markup
        table.add_row(*(Text(str(r[i])) for i in keep), style=styles[n] if styles else None)
    return Fitted(table, hidden)


def _stacked(head: Sequence[str], rows: Sequence[Sequence[str]], width: int, title: object) -> Group:
    """Too narrow for any table: one block per row, the first column as its heading and
    `header: value` pairs wrapped at spaces (a value is broken only if wider than the screen)."""
    import textwrap

    parts: list[RenderableType] = [Text.from_markup(str(title))] if title else []
    for r in rows:
        parts.append(Text(str(r[0]), style="bold"))
        pairs = "; ".join(f"{h}: {v}" for h, v in zip(head[1:], r[1:]) if str(v))
        # wrapped here at spaces; rich must not fold again: a word wider than the screen stays whole
        parts.append(Text(textwrap.fill(pairs, max(width, 20), initial_indent="    ", subsequent_indent="    ",
                                        break_long_words=False, break_on_hyphens=False), no_wrap=True, overflow="ignore"))
    return Group(*parts)


__all__ = ["Fitted", "column_widths", "fit_table"]
