"""`nettune check`: rerun a study (or take a stored one) and compare it with a baseline;
exit 0 when nothing got worse beyond the tolerance, 1 when a point regressed, 2 on error.
The comparison is analysis.regression's; this module finds the two studies and prints."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from ..errors import NettuneError
from ..record.fields import metric_help
from .app import DB_OPT, app, console, open_store, print_fitted, print_items, user_errors

SQLITE_MAGIC = b"SQLite format 3\x00"


class _Lines:
    """A rerun's progress as one line per finished test (no bar: check runs in CI logs)."""

    def start(self, study: Any, total_tests: int, expected_seconds: float) -> None:
        console.print(f"rerunning {study.name}: {total_tests} tests", highlight=False)

    def test_start(self, slot: Any, index: int) -> None: ...

    def test_end(self, slot: Any, result: Any, seconds: float) -> None:
        what = f"{result.total_bps / 1e9:.3f} Gbit/s" if result.ok and result.total_bps is not None else f"failed: {result.error}"
        pair = f" {result.pair.pair}" if result.pair is not None and result.pair.pair else ""
        console.print(escape(f"  {slot.point.label()} run {slot.run}{pair}: {what}"), highlight=False)

    def message(self, text: str) -> None:
        console.print(escape(text), highlight=False)


def _is_db(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError as e:
        raise NettuneError(f"--baseline {path}: cannot read ({e.strerror})") from None


def _baseline(path: Path, name: str, ref: str | None, tmp: Path) -> Any:
    """The baseline study: from a results database (study `ref`, else the latest named
    `name`), or from a `nettune export` file (read into a scratch database)."""
    from ..analysis.data import load
    from ..importers.nettune_export import import_exports, is_export, read_exports
    from ..store import Store

    if not path.exists():
        raise NettuneError(f"--baseline {path}: no such file; give a results database or a `nettune export` file")
    if _is_db(path):
        with Store(path) as store:
            return load(store, ref if ref is not None else name)
    if not is_export(path):
        raise NettuneError(f"--baseline {path}: neither a results database nor a `nettune export` file (CSV, JSON, Parquet)")
    with Store(tmp / "baseline.db") as store:
        import_exports(store, read_exports([path]), "baseline")
        return load(store, "baseline")


@app.command()
@user_errors
def check(
    study: str = typer.Argument(..., help="A study file (TOML) to rerun now, or a study already in --db (name or id) to check."),
    baseline: Path = typer.Option(..., "--baseline", "-b", help="Results database holding the baseline run, or a `nettune export` file (CSV, JSON, Parquet)."),
    tolerance: str = typer.Option("5%", "--tolerance", "-t", help="Changes within this are never a regression, e.g. 5%."),
    baseline_study: Optional[str] = typer.Option(None, "--baseline-study", help="Study in the baseline database (name or id); default: the latest of the same name."),
    metric: str = typer.Option("auto", "--metric", "-m", help=f"What to compare: auto (total Gbit/s, or a command workload's wall seconds), or one of: {metric_help()}."),
    out: Path = typer.Option(Path("nettune-check.json"), "--out", "-o", help="Where to write the result as JSON."),
    db: Path = DB_OPT,
) -> None:
    """Is a rerun worse than its baseline? Welch's test per point (per pair); exit 1 on a regression.

    Exit 0 when no point got significantly worse by more than --tolerance, 1 when one did, 2 on an error. Points that improved are named too."""
    from ..analysis.data import get_metric, jsonable, load
    from ..analysis.regression import check as run_check, parse_tolerance
    from ..plan.study_file import parse_study
    from ..studyfile.load import read_study_text

    tol = parse_tolerance(tolerance)
    if metric != "auto":
        get_metric(metric)
    file = Path(study)
    rerun_file = file.suffix == ".toml" or file.is_file()
    with tempfile.TemporaryDirectory(prefix="nettune-check-") as tmp:
        if rerun_file:
            text = read_study_text(file)
            spec = parse_study(text, str(file))
            base = _baseline(baseline, spec.name, baseline_study, Path(tmp))  # read first: the rerun may go to the same db
            from ..plan.points import expand_and_check
            from ..commands.eta import MAX_HOURS, check_length
            from ..run.study import run_study

            check_length(spec, expand_and_check(spec, text, str(file)), str(file), MAX_HOURS)
            with open_store(db, must_exist=False) as store:
                outcome = run_study(spec, store, text, str(file), progress=_Lines())
                after = load(store, outcome.study_id)
        else:
            with open_store(db) as store:
                after = load(store, study)
            base = _baseline(baseline, after.name, baseline_study, Path(tmp))
            if baseline.resolve() == db.resolve() and base.study["id"] == after.study["id"]:
                raise NettuneError(f"the baseline is study #{after.study['id']} itself; give --baseline-study (the earlier run)")
    result = run_check(base, after, metric, tol)
    _print(result)
    try:
        out.write_text(json.dumps(jsonable(result.to_dict() | {"exit_code": result.exit_code}), indent=2, allow_nan=False) + "\n")
    except OSError as e:
        raise NettuneError(f"--out {out}: cannot write ({e.strerror})") from None
    console.print(f"wrote {out}", highlight=False)
    raise typer.Exit(result.exit_code)


def _print(result: Any) -> None:
    from ..analysis.sweep import num
    from ..report.fit import fit_table

    head = ["point", "N before", "N after", f"before {result.unit}", f"after {result.unit}", "change %", "p", "verdict"]
    rows = [[c.label, str(c.n_before), str(c.n_after), num(c.before) if c.before is not None else "",
             num(c.after) if c.after is not None else "", f"{c.change_pct:+.1f}" if c.change_pct is not None else "",
             f"{c.p_value:.3g}" if c.p_value is not None else "", c.verdict] for c in result.points]
    styles = ["red" if c.verdict in ("regressed", "failed") else "green" if c.verdict == "improved" else None for c in result.points]
    title = f"{result.rerun} vs baseline {result.baseline}: {result.metric}, tolerance {result.tolerance_pct:g}%"
    print_fitted(fit_table(head, rows, console.width, drop_order=["p", "N before", "N after"], prose=["point", "verdict"],
                           styles=styles, title=title, title_justify="left"))
    if result.regressed:
        print_items([f"regressed beyond {result.tolerance_pct:g}%: {', '.join(result.regressed)}"], bullet="", style="red")
    if result.improved:
        print_items([f"improved beyond {result.tolerance_pct:g}%: {', '.join(result.improved)}"], bullet="", style="green")
    verdict = "[red]FAIL[/]: a point got worse" if result.regressed else "[green]PASS[/]: nothing got worse beyond the tolerance"
    console.print(verdict, highlight=False)
