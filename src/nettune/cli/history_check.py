"""What `nettune history` and `nettune check --history` share (a module that registers no
command: command modules do not import each other): a study named or given as a file, the
gate run on its history, and the gate's table."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import NettuneError
from .app import console, open_store, open_writer, print_fitted, print_items


def show_num(v: float | None) -> str:
    from ..analysis.sweep import num

    return "" if v is None else num(v)


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
    with open_writer(db) as store:
        run_study(spec, store, text, str(file), progress=Lines(progress))


def print_gate(g: Any) -> None:
    from ..report.fit import fit_table

    rows = []
    for s in g.series:
        c = s.change or {}
        step = f"{c['step_pct']:+.1f}% (#{c['study_before']} -> #{c['study_after']})" if c.get("step_pct") is not None else ""
        rows.append([s.label, s.verdict, show_num(s.latest), step])
    print_fitted(fit_table(["series", "verdict", f"latest {g.unit}", "change point"], rows, console.width, prose=["series", "verdict"],
                           title=f"{g.study}: {g.reruns} reruns, the latest #{g.latest_study}; tolerance {g.tolerance_pct:g}%, "
                                 f"window {g.window}", title_justify="left"))
    line = {"regressed": "FAIL: a change point among the latest reruns made it worse",
            "inconclusive": "FAIL (--strict): a series could not be tested"}.get(g.verdict, "PASS: no change point made it worse")
    console.print(f"[{'red' if g.exit_code else 'green'}]{line}[/]", highlight=False)
    print_items([g.policy], bullet="", style="dim")
