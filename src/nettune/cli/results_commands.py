"""`nettune results` and `nettune studies`."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Optional

import typer

from ..analysis.emulation import note as emulation_note
from ..errors import NettuneError
from ..exporters.base import MEMBERS, Table, export_table, get_exporter, one_of
from ..report import table as rt
from ..store.records import RunRecord
from .app import DB_OPT, app, console, open_store, print_export, print_fitted, user_errors

# The terminal table, then every exporter of the registry.
RESULTS_FORMATS = ("table", *MEMBERS)


def _runs_table(runs: list[RunRecord], fmt: str) -> Table:
    """The table of runs exporter `fmt` is given, by the shape it declares."""
    from ..exporters.runs import results_table

    shape = get_exporter(fmt).shape
    if shape == "readable":
        head, rows = rt.columns(runs)
        return Table(head, [dict(zip(head, row)) for row in rows], left=frozenset({"status"}))
    return results_table(runs, flat=shape == "flat")

@app.command()
@user_errors
def results(
    study: Optional[str] = typer.Argument(None, help="Study name (latest run of it) or id; default: the latest study."),
    format: str = typer.Option("table", "--format", "-f", help=f"{one_of(RESULTS_FORMATS)}."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output file for a --format other than table (default: standard output; a binary format needs a file)."),
    db: str = DB_OPT,
    warmup: bool = typer.Option(True, "--warmup/--no-warmup", help="Include warm-up runs."),
) -> None:
    """Show every test of a study: parameters, throughput, CPU per side, status."""
    if format not in RESULTS_FORMATS:
        raise NettuneError(f"--format {format!r}: use {one_of(RESULTS_FORMATS)}")
    if format == "table" and out is not None:
        raise NettuneError(f"--out: the table is for the terminal; give --format {one_of(MEMBERS)} to write a file")
    with open_store(db) as store:
        s = store.find_study(study)
        runs = store.runs(s["id"], include_warmup=warmup)
        emulated = emulation_note(store.facts(s["id"]))
    if emulated and (format == "table" or out is not None):  # the VM lab under TCG: said above the numbers
        console.print(f"[yellow]{emulated}[/]", highlight=False, soft_wrap=True)
    if format != "table":
        print_export(export_table(_runs_table(runs, format), format, out), out, len(runs))
    else:
        print_fitted(rt.rich_table(f"{s['name']} (study #{s['id']}, {s['status']})", runs, console.width))


@app.command()
@user_errors
def studies(db: str = DB_OPT) -> None:
    """List the studies in the results database."""
    with open_store(db) as store:
        rows = store.studies()
    from ..report.fit import fit_table

    cols = ("id", "name", "target", "started", "status", "points", "runs", "failed")
    table = [[str(r["id"]), r["name"], r["target_kind"] or "", dt.datetime.fromtimestamp(r["started"]).strftime("%Y-%m-%d %H:%M"),
              r["status"], str(r["points"]), str(r["runs"]), str(r["failed"])] for r in rows]
    print_fitted(fit_table(cols, table, console.width, drop_order=["target", "points", "failed"], right=["id", "points", "runs", "failed"],
                           title=store.where, title_justify="left"))
