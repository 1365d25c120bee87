"""`nettune check`: rerun a study (or take a stored one) and compare it with a baseline.

Exit 0 when nothing got worse beyond the tolerance, 1 when a point regressed, 2 on an
error, 3 when --strict and a point is inconclusive (docs/analysis.md). The JSON result is
written to --out on every exit, an error included. The comparison is analysis.regression's;
this module finds the two studies and prints."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from ..errors import NettuneError
from ..record.fields import metric_help
from .check_progress import Lines
from .app import DB_OPT, app, console, err_console, open_store, open_writer, print_fitted, user_errors

SQLITE_MAGIC = b"SQLite format 3\x00"
FORMATS = ("text", "json", "csv", "markdown")
STYLE = {"regressed": "red", "failed": "red", "improved": "green", "inconclusive": "yellow", "untested": "yellow"}


def _is_db(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError as e:
        raise NettuneError(f"--baseline {path}: cannot read ({e.strerror})") from None


def _baseline(where: str, name: str, ref: str | None, tmp: Path) -> Any:
    """The baseline study: from a results database (a SQLite file or a postgresql:// URL;
    study `ref`, else the latest named `name`), or from a `nettune export` file (read into
    a scratch database)."""
    from ..analysis.data import load
    from ..importers.nettune_export import import_exports, is_export, read_exports
    from ..store import Store, is_url, store_at
    from ..store.writer import StoreWriter

    if is_url(where):
        with store_at(where) as store:
            return load(store, ref if ref is not None else name)
    path = Path(where)
    if not path.exists():
        raise NettuneError(f"--baseline {path}: no such file; give a results database or a `nettune export` file")
    if _is_db(path):
        with Store(path) as store:
            return load(store, ref if ref is not None else name)
    if not is_export(path):
        raise NettuneError(f"--baseline {path}: neither a results database nor a `nettune export` file (CSV, JSON, Parquet)")
    with StoreWriter(tmp / "baseline.db") as store:
        import_exports(store, read_exports([path]), "baseline")
        return load(store, "baseline")


def _testable_baseline(base: Any, metric: str, where: str) -> None:
    """Refuse, before anything is rerun, a baseline in which no point can be tested."""
    from ..analysis.regression import testable

    try:
        ok = testable(base, metric)
    except NettuneError as e:  # its runs have no value of this metric: the cause, named with the file
        raise NettuneError(f"--baseline {where}: {e}") from None
    if not ok:
        raise NettuneError(f"--baseline {where}: {base.name} (#{base.study['id']}) has no point with 2 counted runs, so no change "
                           "could be told from noise whatever the rerun gives; give a baseline run with [repeat] runs >= 2")


def _write(out: Path, obj: dict[str, Any]) -> None:
    from ..analysis.data import jsonable

    try:
        out.write_text(json.dumps(jsonable(obj), indent=2, allow_nan=False) + "\n")
    except OSError as e:
        raise NettuneError(f"--out {out}: cannot write ({e.strerror})") from None


@app.command()
@user_errors
def check(
    study: str = typer.Argument(..., help="A study file (TOML) to rerun now, or a study already in --db (name or id) to check."),
    baseline: Optional[str] = typer.Option(None, "--baseline", "-b", help="Results database holding the baseline run (a SQLite file or postgresql://...), or a `nettune export` file (CSV, JSON, Parquet)."),
    history: bool = typer.Option(False, "--history", help="Instead of one baseline, gate on a change point among the latest reruns of the study stored in --db (`nettune history`)."),
    window: int = typer.Option(3, "--window", help="With --history: a change point among this many latest reruns gates."),
    tolerance: str = typer.Option("5%", "--tolerance", "-t", help="Changes within this are never a regression, e.g. 5%."),
    baseline_study: Optional[str] = typer.Option(None, "--baseline-study", help="Study in the baseline database (name or id); default: the latest of the same name."),
    metric: str = typer.Option("auto", "--metric", "-m", help=f"What to compare: auto (total Gbit/s, or a command workload's wall seconds), or one of: {metric_help()}."),
    strict: bool = typer.Option(False, "--strict", help="Fail (exit 3) when a point is inconclusive or untested: the runs could not tell whether it regressed."),
    format: str = typer.Option("text", "--format", "-f", help="What goes to standard output: text, json, csv or markdown (the JSON is also written to --out)."),
    out: Path = typer.Option(Path("nettune-check.json"), "--out", "-o", help="Where to write the result as JSON (on every exit, an error included)."),
    db: str = DB_OPT,
) -> None:
    """Is a rerun worse than its baseline? Per point (per pair) the change's interval against --tolerance, 5% false alarms over the whole study.

    Exit 0: nothing got worse beyond --tolerance; 1: a point regressed; 2: an error; 3: with --strict, a point is inconclusive."""
    if format not in FORMATS:
        _write_error(out, f"--format {format!r}: use text, json, csv or markdown")
    if history:
        from .history_check import check_history

        if baseline is not None or baseline_study is not None:
            _write_error(out, "--history gates on the study's own reruns in --db: give it without --baseline/--baseline-study")
        try:
            gate = check_history(study, tolerance, window, metric, strict, db, console if format == "text" else err_console)
        except NettuneError as e:
            _write_error(out, str(e))
        doc = gate.to_dict()
        _write(out, doc)
        _emit_gate(gate, doc, format)
        (console if format == "text" else err_console).print(f"wrote {out}", highlight=False)
        raise typer.Exit(gate.exit_code)
    if baseline is None:
        _write_error(out, "give --baseline (a results database or an export holding the baseline run), or --history")
    try:
        result = _check(study, baseline, tolerance, baseline_study, metric, strict, db, console if format == "text" else err_console)
    except NettuneError as e:
        _write_error(out, str(e))
    except KeyboardInterrupt:
        _write_error(out, "interrupted", 130, raise_=False)
        raise
    doc = result.to_dict() | {"exit_code": result.exit_code}
    _write(out, doc)
    _emit(result, doc, format)
    (console if format == "text" else err_console).print(f"wrote {out}", highlight=False)
    raise typer.Exit(result.exit_code)


def _write_error(out: Path, message: str, code: int = 2, raise_: bool = True) -> None:
    """The JSON of a check that could not finish (best effort), then the one-line error."""
    try:
        _write(out, {"verdict": "error", "error": message, "exit_code": code})
    except NettuneError:
        pass  # the error being reported matters more than the file
    if raise_:
        raise NettuneError(message)


def _check(study: str, baseline: str, tolerance: str, baseline_study: str | None, metric: str, strict: bool, db: str,
           progress: Console) -> Any:
    from ..analysis.data import get_metric, load
    from ..analysis.regression import check as run_check, parse_tolerance
    from ..plan.study_file import parse_study
    from ..studyfile.load import read_study_text
    from ..store.locate import same_place

    tol = parse_tolerance(tolerance)
    if metric != "auto":
        get_metric(metric)
    file = Path(study)
    with tempfile.TemporaryDirectory(prefix="nettune-check-") as tmp:
        if file.suffix == ".toml" or file.is_file():
            text = read_study_text(file)
            spec = parse_study(text, str(file))
            base = _baseline(baseline, spec.name, baseline_study, Path(tmp))  # read first: the rerun may go to the same db
            _testable_baseline(base, metric, baseline)
            if spec.repeat.min_counted < 2 and not spec.repeat.adaptive:
                raise NettuneError(f"{file}: [repeat] runs = {spec.repeat.runs}: a rerun with one run per point has no noise "
                                   "estimate, so no change could be told from noise; set [repeat] runs >= 2 (3 or more is better)")
            from ..plan.points import expand_and_check
            from ..commands.eta import MAX_HOURS, check_length
            from ..run.study import run_study

            check_length(spec, expand_and_check(spec, text, str(file)), str(file), MAX_HOURS)
            with open_writer(db) as store:
                outcome = run_study(spec, store, text, str(file), progress=Lines(progress))
                after = load(store, outcome.study_id)
        else:
            with open_store(db) as store:
                after = load(store, study)
            base = _baseline(baseline, after.name, baseline_study, Path(tmp))
            if same_place(baseline, db) and base.study["id"] == after.study["id"]:
                raise NettuneError(f"the baseline is study #{after.study['id']} itself; give --baseline-study (the earlier run)")
            _testable_baseline(base, metric, baseline)
    return run_check(base, after, metric, tol, strict)


def _emit_gate(gate: Any, doc: dict[str, Any], format: str) -> None:
    """`check --history`'s verdicts: text (the table), json, csv/markdown (one row per series)."""
    from .history_check import print_gate

    if format == "text":
        print_gate(gate)
    elif format == "json":
        _print_json(doc)
    else:
        from ..exporters.base import Table, export_table

        cols = ["series", "verdict", "latest", "step_pct", "study_before", "study_after"]
        rows = [{"series": s.label, "verdict": s.verdict, "latest": s.latest} | {k: (s.change or {}).get(k) for k in cols[3:]}
                for s in gate.series]
        print(export_table(Table(cols, rows, left=frozenset({"series", "verdict"})), format, None) or "", end="")


def _print_json(doc: dict[str, Any]) -> None:
    from ..analysis.data import jsonable

    print(json.dumps(jsonable(doc), indent=2, allow_nan=False))


def _emit(result: Any, doc: dict[str, Any], format: str) -> None:
    if format == "text":
        _print(result)
    elif format == "json":
        _print_json(doc)
    else:
        from ..exporters.base import export_table

        table = _table(result)
        text = export_table(table, format, None) or ""
        if format == "markdown":
            text = f"**{_verdict_line(result)}** ({result.rerun} vs baseline {result.baseline}: {result.metric}, tolerance " \
                   f"{result.tolerance_pct:g}%)\n\n{text}\n" + "".join(f"- {w}\n" for w in [*result.warnings, _policy(result)])
        print(text, end="")


def _table(result: Any) -> Any:
    """The points as a table of structured fields: each parameter its own column."""
    from ..exporters.base import Table

    fixed = ["pair", "label", "n_before", "n_after", "before", "after", "change_pct", "ci_low_pct", "ci_high_pct", "p_value",
             "p_raw", "detectable_pct", "cv", "verdict"]
    params = list(dict.fromkeys(k for c in result.points for k in c.point))
    col = {k: f"param_{k}" if k in fixed else k for k in params}
    rows = [{col[k]: c.point.get(k) for k in params} | {f: d[f] for f in fixed} for c in result.points for d in [c.to_dict()]]
    return Table([col[k] for k in params] + fixed, rows, left=frozenset({"pair", "label", "verdict"}))


def _policy(result: Any) -> str:
    each = f"each point's interval at {result.level_each * 100:.4g}%" if result.tested > 1 else "one point: a plain 95% interval"
    return f"{result.tested} point(s) tested, {each}; {result.policy}"


def _verdict_line(result: Any) -> str:
    n = len(result.inconclusive)
    if result.regressed:
        return "FAIL: a point got worse"
    if result.strict and n:
        return f"FAIL (--strict): {n} point(s) inconclusive or untested"
    if n:
        return f"PASS: nothing got worse beyond the tolerance that the runs can show; {n} point(s) inconclusive (--strict fails them)"
    return "PASS: nothing got worse beyond the tolerance"


def _print(result: Any) -> None:
    from ..analysis.sweep import num
    from ..report.fit import fit_table
    from .app import print_items

    head = ["point", "N", f"before {result.unit}", f"after {result.unit}", "change %", "95% CI %", "p", "detectable %", "verdict"]
    rows = [[c.label, f"{c.n_before}/{c.n_after}", num(c.before) if c.before is not None else "",
             num(c.after) if c.after is not None else "", f"{c.change_pct:+.1f}" if c.change_pct is not None else "",
             f"{c.ci_low_pct:+.1f} to {c.ci_high_pct:+.1f}" if c.ci_low_pct is not None and c.ci_high_pct is not None
             else ("unbounded" if c.verdict == "inconclusive" else ""),
             f"{c.p_value:.2g}" if c.p_value is not None else "", f"{c.detectable_pct:.0f}" if c.detectable_pct is not None else "",
             c.verdict] for c in result.points]
    title = f"{result.rerun} vs baseline {result.baseline}: {result.metric}, tolerance {result.tolerance_pct:g}%"
    # p stays at any width: a verdict without its test cannot be checked in a CI log
    print_fitted(fit_table(head, rows, console.width, drop_order=["detectable %", "N", "95% CI %", f"before {result.unit}"],
                           prose=["point", "verdict"], styles=[STYLE.get(c.verdict) for c in result.points], title=title,
                           title_justify="left"))
    print_items([_policy(result) + "; N = counted runs before/after; detectable = the smallest change beyond the tolerance "
                 "caught 80% of the time"], bullet="", style="dim")
    for what, lst, style in (("regressed beyond", result.regressed, "red"), ("improved beyond", result.improved, "green"),
                             ("inconclusive (the runs cannot tell) at", result.inconclusive, "yellow")):
        if lst:
            print_items([f"{what} {result.tolerance_pct:g}%:" if "beyond" in what else f"{what}:"], bullet="", style=style)
            print_items([p["label"] for p in lst], bullet="  ", style=style)  # one per line: labels hold commas
    print_items(result.warnings, bullet="", style="yellow")
    line = _verdict_line(result)
    style = "red" if result.exit_code else "green"
    console.print(f"[{style}]{escape(line.split(':')[0])}[/]:{escape(line.split(':', 1)[1])}", highlight=False)
