"""`nettune compare`, `analyze`, `report`, `export` and `import`: from stored runs to
numbers a reader can trust."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from ..errors import NettuneError
from ..exporters.base import MEMBERS, one_of
from ..record.fields import metric_help
from .app import DB_OPT, app, console, err_console, open_store, print_error, print_export, print_fitted, print_items, user_errors

FORMAT_OPT = typer.Option("text", "--format", "-f", help="text or json.")
SHARE_OPT = typer.Option(0.80, "--share", help="Efficiency: the recommended point is the knee of the throughput-vs-cost frontier among points reaching this share of the best throughput (0.8 = 80%).")
METRIC_OPT = typer.Option("auto", "--metric", "-m", help=f"auto (the study's primary metric: total, or wall for a command workload), or one of: {metric_help()}.")


def _fmt(format: str) -> str:
    if format not in ("text", "json"):
        raise NettuneError(f"--format {format!r}: use text or json")
    return format


def _print_json(obj: Any) -> None:
    from ..analysis.data import jsonable

    print(json.dumps(jsonable(obj), indent=2, default=str, allow_nan=False))


@app.command()
@user_errors
def compare(
    studies: Optional[list[str]] = typer.Argument(None, help="One study (then give --a and --b) or two studies (A then B); none when both sides are --a-stats/--b-stats."),
    a: Optional[str] = typer.Option(None, "--a", help="Runs of side a: KEY=VAL[,KEY=VAL...] (points matching all are pooled)."),
    b: Optional[str] = typer.Option(None, "--b", help="Runs of side b: KEY=VAL[,KEY=VAL...]."),
    a_stats: Optional[str] = typer.Option(None, "--a-stats", help="Side a as a published summary N,MEAN,SD (MEAN and SD in the metric's unit, e.g. Gbit/s)."),
    b_stats: Optional[str] = typer.Option(None, "--b-stats", help="Side b as a published summary N,MEAN,SD."),
    a_table: Optional[Path] = typer.Option(None, "--a-table", help="Side a as a summary table (CSV: parameter columns, n, mean, sd), compared row by row with STUDY's points."),
    metric: str = METRIC_OPT,
    direction: str = typer.Option("auto", "--direction", help="auto (from the metric), higher or lower (which is better)."),
    margin: Optional[str] = typer.Option(None, "--margin", help="Equivalence margin, e.g. 2%: say 'equivalent' when the change's 90% interval (two one-sided tests) lies inside +-margin."),
    format: str = FORMAT_OPT,
    db: str = DB_OPT,
) -> None:
    """Is b faster than a? Relative difference with its 95% interval and Welch's p-value; like with like over the other parameters."""
    from ..analysis import compare as cmp
    from ..analysis import published as pub
    from ..analysis.data import get_metric, load, parse_filter
    from ..analysis.metric import resolve
    from ..analysis.policy import STATEMENT
    from ..analysis.regression import parse_tolerance
    from ..analysis.sweep import num

    _fmt(format)
    eq = None if margin is None else parse_tolerance(margin, "--margin") / 100
    if eq is not None and eq <= 0:
        raise NettuneError(f"--margin {margin!r}: give a margin above 0, e.g. --margin 2%")
    if direction not in ("auto", "higher", "lower"):
        raise NettuneError(f"--direction {direction!r}: use auto, higher or lower")
    hib = None if direction == "auto" else direction == "higher"
    fa, fb = parse_filter(a, "--a"), parse_filter(b, "--b")
    studies = studies or []
    if len(studies) > 2:
        raise NettuneError(f"compare takes one or two studies, got {len(studies)}")
    loaded = []
    each: list[tuple[str, Any]] = []  # one study, --a/--b over matched configurations: each on its own
    if studies:
        with open_store(db) as store:
            loaded = [load(store, s) for s in studies]
    metric = resolve(metric, set().union(*(d.engines for d in loaded)))  # "auto": the studies' primary metric
    m = get_metric(metric)
    if a_table is not None:
        if len(studies) != 1 or a_stats or b_stats or fa:
            raise NettuneError("--a-table compares a summary table with one study: give exactly one STUDY, no --a, --a-stats or --b-stats")
        rows = pub.read_table(a_table, m)
        results = pub.versus_table(loaded[0], rows, m, hib, str(a_table))
        if eq is not None:
            raise NettuneError("--margin goes with one comparison of runs or summaries, not with --a-table")
    elif a_stats or b_stats:
        need = (a_stats is None) + (b_stats is None)
        if len(studies) != need or (a_stats and fa) or (b_stats and fb):
            raise NettuneError("with --a-stats/--b-stats: give a study only for a side without a summary (with --a/--b to pick its points), "
                               f"so {need} study here")
        sides = {}
        for name, stats, filt in (("a", a_stats, fa), ("b", b_stats, fb)):
            if stats:
                sides[name] = (f"{name} (published: {stats})", pub.parse_stats(stats, f"--{name}-stats", m))
        if studies:
            name, filt = ("a", fa) if a_stats is None else ("b", fb)
            sides[name] = pub.side_summary(loaded[0], filt, m)
        hb = m.higher_is_better if hib is None else hib
        results = [("", cmp.compare_stats(sides["a"][1], sides["b"][1], hb, (m.better, m.worse), m.name, (sides["a"][0], sides["b"][0]),
                                          1, eq))]
    else:
        if not studies:
            raise NettuneError("compare: give one study (with --a and --b), two studies, or --a-stats/--b-stats summaries")
        if len(studies) == 1:
            overall, each = cmp.within_study(loaded[0], fa, fb, metric, hib, eq)
            results = [("", overall)]
        else:
            results = cmp.between_studies(loaded[0], loaded[1], fa, fb, metric, hib, eq)
    if format == "json":
        if len(results) == 1:
            _print_json(results[0][1].to_dict() | {"configurations": [{"configuration": n} | c.to_dict() for n, c in each],
                                                   "policy": STATEMENT})
        else:
            _print_json({"comparisons": [{"point": label} | c.to_dict() for label, c in results], "policy": STATEMENT})
        return
    for label, c in results:
        if label:
            console.print(f"[bold]{escape(label)}[/]", highlight=False)
        else:
            mean = f" over {len(c.matched)} configurations, mean of their means" if c.matched else ", mean"
            console.print(f"a = {c.a}: N={c.n_a}{mean} {num(c.mean_a * m.scale)} {m.label}\n"
                          f"b = {c.b}: N={c.n_b}{mean} {num(c.mean_b * m.scale)} {m.label}", highlight=False)
        _print_comparison(c, "  ")
    if each:
        console.print(f"per configuration ({'Bonferroni over ' + str(len(each)) if len(each) > 1 else 'one'}):", highlight=False)
        for name, c in each:
            _print_comparison(c, f"  {name}: ")
    print_items([f"policy: {STATEMENT}"], bullet="", style="dim")


def _print_comparison(c: Any, lead: str) -> None:
    from rich.markup import escape

    style = "green" if c.verdict in ("faster", "better") else "red" if c.verdict in ("slower", "worse") else "yellow"
    p = f"Welch p={c.p_raw:.3g}" + (f", adjusted {c.p_value:.3g}" if c.family > 1 else "")
    console.print(f"{escape(lead)}[{style}]{escape(c.text)}[/]  ({p}, ratio {c.ratio:.4f})", highlight=False)


@app.command()
@user_errors
def analyze(
    study: Optional[str] = typer.Argument(None, help="Study name (latest run of it) or id; default: the latest study."),
    metric: str = METRIC_OPT,
    saturation: float = typer.Option(0.10, "--saturation", help="Gain per doubling below which a parameter has saturated (0.10 = 10%)."),
    by: Optional[str] = typer.Option(None, "--by", help="Verdicts per group of this swept parameter (e.g. os): each group's knob effects with CIs, the interaction in one sentence, efficiency per group."),
    share: float = SHARE_OPT,
    format: str = FORMAT_OPT,
    db: str = DB_OPT,
) -> None:
    """Verdicts on a sweep: saturation, peak, knee, efficiency frontier, fairness, which knobs mattered.

    Also says when the measuring tool itself was the bottleneck (iperf3 before 3.16)."""
    from ..analysis.analyze import analyze as run_analysis
    from ..analysis.data import load

    _fmt(format)
    with open_store(db) as store:
        data = load(store, study)
        result = run_analysis(data, metric, saturation, share, by)
    searched = _search_answer(data)  # [search]: the search's answer after the sweep's verdicts
    if format == "json":
        _print_json(result.to_dict() | ({"search": searched.to_dict()} if searched is not None else {}))
        return
    from ..report.build import summary_table
    from ..report.fit import fit_table

    head, rows = summary_table(result, result.params)
    # the terminal gets the statistics and the energy per run (joules with their margin, watts: study C's table);
    # CPU columns are in `nettune results` and the report
    keep = [i for i, h in enumerate(head) if i < len(result.params) or h in ("N", result.unit, "± 95%", "median", "sd", "min to max", "CV %", "two bands")
            or h.startswith(("J per run (", "± J (", "W ("))]
    title = f"{result.study} (study #{result.study_id}): {result.unit} of counted runs, ± = 95% CI ({result.interval})"
    print_fitted(fit_table([head[i] for i in keep], [[row[i][0] for i in keep] for row in rows], console.width,
                           drop_order=["CV %", "sd", "median", "min to max"], boxed=False, title=title, title_justify="left"))
    from ..report.pair_matrix import pair_table

    phead, prows = pair_table(result)  # a study over host pairs: each link on its own
    if prows:
        print_fitted(fit_table(phead, prows, console.width, drop_order=["failed", "server", "client", "95% CI"], boxed=False,
                               title="pairs: each link on its own (N = its repeats)", title_justify="left"))
    print_items(result.findings)
    if searched is not None:
        from ..search.answer_text import answer_lines

        print_items(answer_lines(searched), bullet="")


def _search_answer(data: Any) -> Any:
    """The answer of a study with [search] (None without one)."""
    from ..search.session import answer_of

    return answer_of(data)


@app.command()
@user_errors
def report(
    study: Optional[str] = typer.Argument(None, help="Study name (latest run of it) or id; default: the latest study."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory for report.md, report.html and charts/."),
    point: Optional[str] = typer.Option(None, "--point", help="Point for the per-interval chart, KEY=VAL[,...] (default: the best)."),
    metric: str = METRIC_OPT,
    share: float = SHARE_OPT,
    db: str = DB_OPT,
) -> None:
    """Write report.md, PNG and SVG charts, and one self-contained report.html."""
    from ..analysis.data import load, parse_filter
    from ..report.build import build_report

    with open_store(db) as store:
        data = load(store, study)
    rep = build_report(data, out, parse_filter(point, "--point"), metric, share=share)
    console.print(f"wrote {rep.markdown}, {rep.html} and {len(rep.charts)} charts in {out / 'charts'}", highlight=False, soft_wrap=True)


@app.command()
@user_errors
def export(
    study: Optional[str] = typer.Argument(None, help="Study name (latest run of it) or id; default: the latest study."),
    format: str = typer.Option("csv", "--format", "-f", help=f"{one_of(MEMBERS)}."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output file (default: standard output; a binary format, e.g. parquet, needs a file)."),
    series: bool = typer.Option(False, "--series", help="Also the per-interval and per-stream series, idle power and the study's definition, as files next to --out (JSON: the series inside each run); Parquet always writes them."),
    db: str = DB_OPT,
) -> None:
    """Every run of a study, one row each, the swept parameters as columns."""
    from ..exporters.runs import export as do_export, export_series
    from ..exporters.series import StudyExport

    with open_store(db) as store:
        s = store.find_study(study)
        runs = store.runs(s["id"])
        extra = StudyExport(s, store.facts(s["id"]), store.idle(s["id"]))
    if not runs:
        raise NettuneError(f"study {s['name']!r} (#{s['id']}) has no runs to export")
    if not (series or (format == "parquet" and out is not None)):
        print_export(do_export(runs, format, out), out, len(runs))
        return
    done = export_series(runs, format, out, extra)
    if isinstance(done, str):
        print(done, end="")
    else:
        err_console.print(f"wrote {len(runs)} runs to {done[0]}" + "".join(f", {p.name}" for p in done[1:]), highlight=False)


@app.command("import")
@user_errors
def import_(
    files: list[Path] = typer.Argument(..., help="iperf3 -J logs or text output, iperf2 -y C or text output (several tests per file are split), tables with --columns, or files `nettune export` wrote (CSV, JSON, Parquet)."),
    study: str = typer.Option(..., "--study", "-s", help="Study to create (or add to, if it is an imported study)."),
    set_: list[str] = typer.Option([], "--set", help="Point parameters KEY=VAL[,KEY=VAL] (repeatable); protocol/parallel/reverse/bidir/duration also guide the parser."),
    from_name: list[str] = typer.Option([], "--param-from-name", help="Regex with named groups read from each file name, e.g. 'queue_(?P<queues>\\d+)' (repeatable)."),
    from_header: list[str] = typer.Option([], "--param-from-header", help="Regex with named groups read from the lines before each test, e.g. 'channels: (?P<streams>\\d+)' (repeatable)."),
    columns: Optional[str] = typer.Option(None, "--columns", help="The files are tables (CSV, one row per run): their columns in order, NAME (a parameter) or NAME=METRIC (e.g. queues,streams,gbps=receiver_gbps,-); see docs/importing.md."),
    cpu_unit: Optional[str] = typer.Option(None, "--cpu-unit", help="With --columns: the unit of the table's CPU columns, UNIT or METRIC=UNIT[,...]: pct_core (% of one core), pct_machine, pct_of_N (% of N cores, e.g. pct_of_16), cores."),
    description: str = typer.Option("", "--description", help="Description of a new imported study."),
    db: str = DB_OPT,
) -> None:
    """Import existing iperf3/iperf2 results so they get the same statistics and charts.

    Every file is read first: each unusable one gets an `error: FILE: reason` line. Exit 0
    when all were imported, 1 when some were, 2 (and nothing written) when none was."""
    from ..importers import check_args, import_store, parse_sets, read_files, store_files
    from ..importers.params import compile_rules
    from ..importers.table_csv import table_importer
    from ..importers.nettune_export import import_exports, is_export, read_exports

    if any(is_export(f) for f in files):  # nettune's own exports: a whole study each, read back
        if set_ or from_name or from_header or columns or cpu_unit or not all(is_export(f) for f in files):
            raise NettuneError("nettune exports are imported on their own (no iperf logs, no --set, --param-from-*, --columns: the points are in the files)")
        exports = read_exports(files)
        with import_store(db) as store:  # a failed import leaves no database behind
            sid, n = import_exports(store, exports, study, description)
        console.print(f"imported {n} runs from {len(exports)} export file(s) into study {study!r} (#{sid})", highlight=False)
        return

    params = parse_sets(set_)
    check_args(study, params)
    name_rules = compile_rules("--param-from-name", from_name)
    header_rules = compile_rules("--param-from-header", from_header)
    if cpu_unit and columns is None:
        raise NettuneError("--cpu-unit goes with --columns: it names the unit of a table's CPU columns (iperf logs carry no CPU figures)")
    member = table_importer(columns, cpu_unit) if columns is not None else None
    results = read_files(files, params, name_rules, header_rules, member)
    for _, res, why, _ in results:
        if res is None:
            print_error(why)
    if all(res is None for _, res, _, _ in results):
        raise typer.Exit(2)  # before the database is opened: nothing is created
    with import_store(db) as store:  # a failed import leaves no database behind
        outcome = store_files(store, results, study, description)
    said: list[str] = []
    for f in outcome.files:
        if f.ok:
            console.print(f"  {f.path}: {f.message}", highlight=False, soft_wrap=True, markup=False)
            for w in f.warnings if f.warnings != said else []:  # a table's rows share theirs: said once
                console.print(f"    warning: {w}", highlight=False, soft_wrap=True, markup=False)
            said = f.warnings
    what = "files" if len(outcome.files) == len(files) else "tests"
    console.print(f"imported {outcome.imported} of {len(outcome.files)} {what} into study {outcome.study!r} (#{outcome.study_id})", highlight=False)
    if outcome.rejected:
        raise typer.Exit(1)
