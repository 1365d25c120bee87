"""The `nettune` app object and what every command module shares: the consoles, the
one-line error handling, the fitted-table printer and the --db option. Command modules
import this module (never main.py or each other), and main.py imports them to register."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable

import typer
from rich.console import Console
from rich.markup import escape

from ..errors import NettuneError
from ..store.base import ResultStore, StoreReader
from ..store.sqlite import Store

app = typer.Typer(
    name="nettune",
    help="Run network and VM performance studies from one file: sweep settings, measure, restore, analyse.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# emoji off: host, user, study and file names are printed verbatim (":b:" in `node:b:` is
# an emoji code rich would replace); user data in markup lines goes through escape()
console = Console(emoji=False)
err_console = Console(stderr=True, emoji=False)


def print_error(message: str) -> None:
    """One `error: ...` line on stderr (the message is one line: see NettuneError)."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn NettuneError into a one-line message and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NettuneError as e:
            print_error(str(e))
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            err_console.print("[yellow]interrupted[/]: cleaned up; partial results are in the database")
            raise typer.Exit(130) from None

    return wrapper


def print_fitted(fitted: Any) -> None:
    """A report.fit.Fitted table, and the note saying which columns did not fit."""
    console.print(fitted.table, crop=False)  # a word wider than the screen stays whole (see report.fit)
    note = fitted.note(console.width)
    if note:
        console.print(f"[dim]{escape(note)}[/]", highlight=False)


def print_items(items: list[str], bullet: str = "  - ", style: str = "") -> None:
    """Sentences as a list, wrapped at word boundaries to the terminal (never mid-word)."""
    import textwrap

    width = max(console.width, 40)
    for item in items:
        text = textwrap.fill(item, width, initial_indent=bullet, subsequent_indent=" " * len(bullet), break_long_words=False, break_on_hyphens=False)
        console.print(f"[{style}]{escape(text)}[/]" if style else escape(text), highlight=False, soft_wrap=True)


# How each outcome of putting a setting back is shown (`restore`, `lab down`).
RESULT_STYLE = {"restored": "green", "unchanged": "dim", "gone": "dim", "left": "yellow", "failed": "red", "refused": "bold red"}


def print_given_up(lines: list[tuple[str, str]], what: str) -> None:
    """The commands that put given-up values back by hand, host by host."""
    for who, cmd in lines:
        console.print(escape(f"  on {who}: {cmd}"), highlight=False, soft_wrap=True)
    console.print(f"[yellow]{what}[/]: the commands above put the originals back by hand (run them in that order)")


DB_OPT = typer.Option("nettune.db", "--db", envvar="NETTUNE_DB", show_envvar=True,
                      help="Results database: a SQLite file, or postgresql://user@host/dbname (docs/results.md).")


def open_store(db: str | Path, must_exist: bool = True) -> StoreReader:
    """The store --db names, for commands that only read: a SQLite file read-only (`Store`:
    an older one is upgraded in memory, never in place), a postgresql:// URL (store/locate.py)."""
    from ..store.locate import is_url, store_at

    if is_url(db):
        return store_at(db, must_exist)
    if not Path(db).is_file():
        raise NettuneError(f"{db}: no results database here; run a study first (`nettune run FILE`) or pass --db PATH")
    return Store(db)


def open_writer(db: str | Path, must_exist: bool = False) -> ResultStore:
    """The store --db names, for a run, an import or a measurement (a SQLite file is created
    unless `must_exist`)."""
    from ..store.locate import store_at

    return store_at(db, must_exist)


def print_export(text: str | None, out: Path | None, runs: int) -> None:
    """An exporter's output: the text on stdout, or a line on stderr saying where it went."""
    if text is not None:
        print(text, end="")
    else:
        err_console.print(escape(f"wrote {runs} runs to {out}"), highlight=False)
