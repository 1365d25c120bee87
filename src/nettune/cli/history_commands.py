"""`nettune history`: a study's stored reruns as series per point (and pair), their change
points and what changed across each (analysis/history.py); `nettune check --history` is
check_commands.py's (cli/history_check.py does its work)."""
from __future__ import annotations

import json
from typing import Any

import typer
from rich.markup import escape

from ..errors import NettuneError
from ..record.fields import metric_help
from .app import DB_OPT, app, console, err_console, open_store, open_writer, print_fitted, print_items, user_errors
from .history_check import show_num, study_ref


@app.command()
@user_errors
def history(
    study: str = typer.Argument(..., help="A study name, or a study file (its name and its points)."),
    metric: str = typer.Option("auto", "--metric", "-m", help=f"auto (the study's primary metric), or one of: {metric_help()}."),
    format: str = typer.Option("text", "--format", "-f", help="text or json."),
    save: bool = typer.Option(False, "--save", help="Also store the change points found in the database (table change_points, "
                              "replacing this study's and metric's): the Grafana dashboard shows them (docs/results.md)."),
    db: str = DB_OPT,
) -> None:
    """Every stored rerun of a study (same name, same points) in time order: per point and pair the means with
    their intervals, the change points, the size of each step with its interval, and what changed across it."""
    from ..analysis.data import jsonable
    from ..analysis.history import history as build

    if format not in ("text", "json"):
        raise NettuneError(f"--format {format!r}: use text or json")
    name, points = study_ref(study)
    with open_store(db) as store:
        h = build(store, name, points, metric)
    if save:
        with open_writer(db, must_exist=True) as writer:
            writer.save_change_points(h.study, h.metric, h.unit, h.saved_rows())
            where = writer.where  # a URL without its password
        err_console.print(f"stored {len(h.changes)} change point(s) of {escape(h.study)} ({h.metric}) in {escape(where)}", highlight=False)
    if format == "json":
        print(json.dumps(jsonable(h.to_dict()), indent=2, default=str, allow_nan=False))
        return
    print_history(h)


def print_history(h: Any) -> None:
    from ..report.fit import fit_table

    console.print(f"[bold]{escape(h.study)}[/]: {len(h.reruns)} reruns, {h.metric} ({escape(h.unit)})", highlight=False)
    rows = [[f"#{r.study_id}", r.when, r.status, r.nettune_version or "?"] for r in h.reruns]
    print_fitted(fit_table(["study", "started", "status", "nettune"], rows, console.width, boxed=False))
    head = ["series", *[f"#{r.study_id}" for r in h.reruns], "change points"]
    body = []
    for s in h.series:
        marks = {c.step.at for c in s.changes}
        cells = [("| " if i in marks else "") + show_num(v.mean) for i, v in enumerate(s.values)]
        body.append([s.label, *cells, str(len(s.changes)) if s.changes else ""])
    print_fitted(fit_table(head, body, console.width, prose=["series"], title=f"mean {h.unit} per rerun (| = a change point before it)",
                           title_justify="left", drop_order=[f"#{r.study_id}" for r in h.reruns[:-1]]))
    for s, c in h.changes:
        st = c.step
        where = "the latest rerun alone" if st.kind == "latest" else f"between #{c.study_before} and #{c.study_after}"
        pct = f" ({st.pct:+.1f}%)" if st.pct is not None else ""
        ci = f", 95% CI {show_num(st.ci_low)} to {show_num(st.ci_high)}" if st.ci_low == st.ci_low else ""
        lines = [f"{s.label}: a step {where}: {show_num(st.before)} -> {show_num(st.after)} {h.unit}{pct}{ci}, p={st.p_value:.2g} "
                 f"({st.n_before} reruns before, {st.n_after} after)"]
        lines += [f"  changed: {w}" for w in c.changed[:12]] or ["  changed: nothing nettune recorded (facts, tools, settings alike)"]
        if len(c.changed) > 12:
            lines.append(f"  ... and {len(c.changed) - 12} more (--format json lists all)")
        print_items(lines, bullet="", style="yellow")
    if not h.changes:
        print_items(["no change point: the reruns differ no more than their own scatter"], bullet="")
    print_items(h.notes + [f"left out: {x}" for x in h.left_out] + [f"{h.tests} tests; {h.policy}"], bullet="", style="dim")

