"""`nettune history`: a study's stored reruns as series per point (and pair), their change
points and what changed across each (analysis/history.py); `nettune check --history` is
check_commands.py's."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from ..errors import NettuneError
from ..record.fields import metric_help
from .app import DB_OPT, app, console, open_store, print_fitted, print_items, user_errors


def study_ref(study: str) -> tuple[str, list[dict[str, Any]] | None]:
    """A study name as given, or a study file's name and points."""
    file = Path(study)
    if file.suffix != ".toml" and not file.is_file():
        return study, None
    from ..plan.points import expand
    from ..plan.study_file import parse_study
    from ..studyfile.study_text import read_study_text

    spec = parse_study(read_study_text(file), str(file))
    return spec.name, [p.params for p in expand(spec)]


@app.command()
@user_errors
def history(
    study: str = typer.Argument(..., help="A study name, or a study file (its name and its points)."),
    metric: str = typer.Option("auto", "--metric", "-m", help=f"auto (the study's primary metric), or one of: {metric_help()}."),
    format: str = typer.Option("text", "--format", "-f", help="text or json."),
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
    if format == "json":
        print(json.dumps(jsonable(h.to_dict()), indent=2, default=str, allow_nan=False))
        return
    print_history(h)


def _num(v: float | None) -> str:
    from ..analysis.sweep import num

    return "" if v is None else num(v)


def print_history(h: Any) -> None:
    from ..report.fit import fit_table

    console.print(f"[bold]{escape(h.study)}[/]: {len(h.reruns)} reruns, {h.metric} ({escape(h.unit)})", highlight=False)
    rows = [[f"#{r.study_id}", r.when, r.status, r.nettune_version or "?"] for r in h.reruns]
    print_fitted(fit_table(["study", "started", "status", "nettune"], rows, console.width, boxed=False))
    head = ["series", *[f"#{r.study_id}" for r in h.reruns], "change points"]
    body = []
    for s in h.series:
        marks = {c.step.at for c in s.changes}
        cells = [("| " if i in marks else "") + _num(v.mean) for i, v in enumerate(s.values)]
        body.append([s.label, *cells, str(len(s.changes)) if s.changes else ""])
    print_fitted(fit_table(head, body, console.width, prose=["series"], title=f"mean {h.unit} per rerun (| = a change point before it)",
                           title_justify="left", drop_order=[f"#{r.study_id}" for r in h.reruns[:-1]]))
    for s, c in h.changes:
        st = c.step
        where = "the latest rerun alone" if st.kind == "latest" else f"between #{c.study_before} and #{c.study_after}"
        pct = f" ({st.pct:+.1f}%)" if st.pct is not None else ""
        ci = f", 95% CI {_num(st.ci_low)} to {_num(st.ci_high)}" if st.ci_low == st.ci_low else ""
        lines = [f"{s.label}: a step {where}: {_num(st.before)} -> {_num(st.after)} {h.unit}{pct}{ci}, p={st.p_value:.2g} "
                 f"({st.n_before} reruns before, {st.n_after} after)"]
        lines += [f"  changed: {w}" for w in c.changed[:12]] or ["  changed: nothing nettune recorded (facts, tools, settings alike)"]
        if len(c.changed) > 12:
            lines.append(f"  ... and {len(c.changed) - 12} more (--format json lists all)")
        print_items(lines, bullet="", style="yellow")
    if not h.changes:
        print_items(["no change point: the reruns differ no more than their own scatter"], bullet="")
    print_items(h.notes + [f"left out: {x}" for x in h.left_out] + [f"{h.tests} tests; {h.policy}"], bullet="", style="dim")


def check_history(study: str, tolerance: str, window: int, metric: str, strict: bool, db: str, progress: Any) -> Any:
    """`nettune check --history`: a study file is rerun into --db first (as `check` does); then the
    history of its name and points in --db is gated on (analysis/history_gate.py)."""
    from ..analysis.history import history as build
    from ..analysis.history_gate import gate
    from ..analysis.regression import parse_tolerance

    tol = parse_tolerance(tolerance)
    if window < 1:
        raise NettuneError(f"--window {window}: give 1 or more (the latest reruns a change point must fall in)")
    name, points = study_ref(study)
    if points is not None:
        _rerun(Path(study), db, progress)
    with open_store(db) as store:
        h = build(store, name, points, metric)
    return gate(h, tol, window, strict)


def _rerun(file: Path, db: str, progress: Any) -> None:
    from ..commands.eta import MAX_HOURS, check_length
    from ..plan.points import expand_and_check
    from ..plan.study_file import parse_study
    from ..run.study import run_study
    from ..studyfile.study_text import read_study_text
    from .check_progress import Lines

    text = read_study_text(file)
    spec = parse_study(text, str(file))
    check_length(spec, expand_and_check(spec, text, str(file)), str(file), MAX_HOURS)
    with open_store(db, must_exist=False) as store:
        run_study(spec, store, text, str(file), progress=Lines(progress))


def print_gate(g: Any) -> None:
    from ..report.fit import fit_table

    rows = []
    for s in g.series:
        c = s.change or {}
        step = f"{c['step_pct']:+.1f}% (#{c['study_before']} -> #{c['study_after']})" if c.get("step_pct") is not None else ""
        rows.append([s.label, s.verdict, _num(s.latest), step])
    print_fitted(fit_table(["series", "verdict", f"latest {g.unit}", "change point"], rows, console.width, prose=["series", "verdict"],
                           title=f"{g.study}: {g.reruns} reruns, the latest #{g.latest_study}; tolerance {g.tolerance_pct:g}%, "
                                 f"window {g.window}", title_justify="left"))
    line = {"regressed": "FAIL: a change point among the latest reruns made it worse",
            "inconclusive": "FAIL (--strict): a series could not be tested"}.get(g.verdict, "PASS: no change point made it worse")
    console.print(f"[{'red' if g.exit_code else 'green'}]{line}[/]", highlight=False)
    print_items([g.policy], bullet="", style="dim")
