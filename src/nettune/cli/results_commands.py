"""`nettune results` and `nettune studies`."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Optional

import typer

from ..errors import NettuneError
from ..exporters.base import export_table
from ..exporters.runs import results_table
from ..report import table as rt
from .app import DB_OPT, app, console, open_store, print_fitted, user_errors

@app.command()
@user_errors
def results(
    study: Optional[str] = typer.Argument(None, help="Study name (latest run of it) or id; default: the latest study."),
    format: str = typer.Option("table", "--format", "-f", help="table, markdown, csv or json."),
    db: Path = DB_OPT,
    warmup: bool = typer.Option(True, "--warmup/--no-warmup", help="Include warm-up runs."),
) -> None:
    """Show every test of a study: parameters, throughput, CPU per side, status."""
    if format not in ("table", "markdown", "csv", "json"):
        raise NettuneError(f"--format {format!r}: use table, markdown, csv or json")
    with open_store(db) as store:
        s = store.find_study(study)
        runs = store.runs(s["id"], include_warmup=warmup)
    if format in ("json", "csv"):
        print(export_table(results_table(runs, flat=format == "csv"), format, None), end="")
    elif format == "markdown":
        print(rt.markdown(runs), end="")
    else:
        print_fitted(rt.rich_table(f"{s['name']} (study #{s['id']}, {s['status']})", runs, console.width))


@app.command()
@user_errors
def studies(db: Path = DB_OPT) -> None:
    """List the studies in the results database."""
    with open_store(db) as store:
        rows = store.studies()
    from ..report.fit import fit_table

    cols = ("id", "name", "target", "started", "status", "points", "runs", "failed")
    table = [[str(r["id"]), r["name"], r["target_kind"] or "", dt.datetime.fromtimestamp(r["started"]).strftime("%Y-%m-%d %H:%M"),
              r["status"], str(r["points"]), str(r["runs"]), str(r["failed"])] for r in rows]
    print_fitted(fit_table(cols, table, console.width, drop_order=["target", "points", "failed"], right=["id", "points", "runs", "failed"],
                           title=str(db), title_justify="left"))
