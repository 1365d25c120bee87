"""`nettune restore`, `nettune knobs list|show`, `nettune persist`: argument parsing and
printing only; the work is in the knobs package (gate.restore_journal, show, persist)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.markup import escape

from ..errors import NettuneError

if TYPE_CHECKING:
    from ..search.answer import Answer
from .app import DB_OPT, RESULT_STYLE, app, console, err_console, open_store, print_error, print_fitted, print_given_up, user_errors

knobs_app = typer.Typer(help="Settings nettune can change per sweep point (and always restores).", no_args_is_help=True)
app.add_typer(knobs_app, name="knobs")


def _fmt(format: str) -> None:
    if format not in ("table", "json"):
        raise NettuneError(f"--format {format!r}: use table or json")


@app.command()
@user_errors
def restore(
    host: Optional[str] = typer.Argument(None, help="Only this host's changes: its name in the study, its address, or 'machine'."),
    forget: bool = typer.Option(False, "--forget", help="Give up what cannot be restored (only HOST's, if given): print the commands to do it by hand and drop it from the journal."),
) -> None:
    """Put back every setting an interrupted run left changed (after kill -9, a crash, power loss), on this machine and over SSH."""
    from ..knobs.gate import restore_journal

    report = restore_journal(host, forget)
    out = report.outcome
    if report.stopped:
        console.print(f"stopped {len(report.stopped)} process(es) that killed runs left: pid {', '.join(map(str, report.stopped))}")
    for s in report.alive:
        console.print(f"[yellow]left alone[/]: a run is still in progress: {escape(s.describe())}")
    if not out.lines and not report.alive:
        console.print(escape(f"nothing to restore ({report.journal} has no unrestored changes)"))
    for result, text in out.lines:
        console.print(f"[{RESULT_STYLE.get(result, 'white')}]{result}[/]: {escape(text)}", highlight=False, soft_wrap=True)
    for who, why in out.unreachable.items():
        console.print(f"[red]unreachable[/]: {escape(who)}: {escape(why)}; its changes stay pending", highlight=False, soft_wrap=True)
    if report.given_up is not None:
        print_given_up(report.given_up, "forgotten")
        return
    if out.failed:
        again = f"nettune restore --forget {host}" if host else "nettune restore --forget [HOST]"
        err_console.print(f"[bold red]error:[/] {out.failed} setting(s) could not be restored; fix the cause and run `nettune restore` again, or give them up with `{escape(again)}`")
        raise typer.Exit(1)


@knobs_app.command("list")
@user_errors
def list_(format: str = typer.Option("table", "--format", "-f", help="table or json.")) -> None:
    """The catalog: every kind of knob, its scope, default, typical tuned value and risk."""
    from ..knobs.registry import catalog

    _fmt(format)
    rows = catalog()
    if format == "json":
        print(json.dumps(rows, indent=2))
        return
    from ..report.fit import fit_table

    cols = ("kind", "key", "scope", "what", "default", "tuned", "restart", "risk")
    print_fitted(fit_table(cols, [[r[h] for h in cols] for r in rows], console.width,
                           drop_order=["risk", "restart", "tuned", "default", "scope"],
                           prose=["scope", "what", "default", "tuned", "restart", "risk"], right=[],
                           title="nettune knobs (in a study file: \\[knobs] \"KIND\\[:ARG]\\[@DEVICE]\" = value)", title_justify="left"))


@knobs_app.command("show")
@user_errors
def show(
    file: Optional[Path] = typer.Argument(None, help="Study file: show its knobs on its hosts. Default: the usual knobs on this machine."),
    host: Optional[str] = typer.Option(None, "--host", help="Only this host (or 'machine')."),
    interface: Optional[str] = typer.Option(None, "--interface", "-i", help="Interface for per-interface knobs (no FILE); default: the default route's."),
    format: str = typer.Option("table", "--format", "-f", help="table or json."),
) -> None:
    """Current values of knobs (changes nothing)."""
    from ..knobs import show as sh

    _fmt(format)
    if file is None:
        rows = sh.machine_values(interface)
        if host and host != "machine":
            raise NettuneError(f"--host {host!r}: without a study file only 'machine' is known")
    else:
        from ..plan.study_file import load_study

        from ..studyfile.local_commands import allow_local_commands

        with allow_local_commands():  # reading the values connects: ssh_config Match exec runs as ssh would run it
            study = load_study(file)
        if not study.knobs:
            raise NettuneError(f"{file}: the study has no [knobs] section")
        rows = sh.study_values(study, file.read_text(), str(file), host)
        if host and not rows:
            raise NettuneError(f"--host {host!r}: no knob of {file} applies to it (hosts: {', '.join(study.target.hosts)}, machine)")
    if format == "json":
        print(json.dumps(rows, indent=2))
        return
    from ..report.fit import fit_table

    cols = ("host", "knob", "device", "value")
    print_fitted(fit_table(cols, [[str(r[h]) for h in cols] for r in rows], console.width, prose=["value"], right=[]))


@app.command()
@user_errors
def persist(
    study: str = typer.Argument(..., help="Study name (its latest run), id in the results database, or its study file."),
    point: Optional[str] = typer.Option(None, "--point", help="The point to persist: KEY=VAL,KEY=VAL (its sweep parameters)."),
    out: Path = typer.Option(..., "--out", help="Directory to write the files into."),
    db: str = DB_OPT,
    interface: Optional[str] = typer.Option(None, "--interface", "-i", help="Write this interface instead of the one the study used."),
    best: bool = typer.Option(False, "--best", help="Persist the winner of the study's \\[search] (its answer's verdict is against the defaults)."),
) -> None:
    """Write a point's knobs as installable files (sysctl.d, tuned, udev, NetworkManager, shell); applies nothing."""
    from ..knobs.persist import Refused, knobs_of_point, parse_point, write_files

    if (point is None) == (not best):
        raise NettuneError("persist: give --point KEY=VAL,... or --best (the winner of a search study), one of them")
    from .history_check import study_ref  # a study file names its study, as `history` and `check` read it

    study = study_ref(study)[0]
    with open_store(db) as store:
        answer = _winner(store, study) if point is None else None
        want = parse_point(point) if point is not None else _winner_point(answer)
        s, p, settings = knobs_of_point(store, study, want)
    try:
        files = write_files(s["name"], p["point"], settings, out, interface)
    except Refused as e:
        for line in e.lines:  # one line per refusal, then the summary (user_errors)
            print_error(line)
        raise
    console.print(escape(f"wrote {len(files)} files for {s['name']} ({', '.join(f'{k}={v}' for k, v in p['point'].items())}); nothing was applied:"), highlight=False)
    for f in files:
        console.print(escape(f"  {f}"), highlight=False)
    from ..search.answer_text import persist_caution  # noqa: PLC0415 - the search's modules: only for --best

    caution = persist_caution(answer) if answer is not None else ""
    if caution:
        console.print(f"[yellow]{escape(caution)}[/]", highlight=False)


def _winner(store: Any, study: str) -> Answer:
    """A search study's answer with a confirmed winner; a one-line refusal when there is none yet."""
    from ..analysis.data import load
    from ..search.session import answer_of

    answer = answer_of(load(store, study))
    if answer is None:
        raise NettuneError(f"persist --best: study {study!r} has no [search]; name the point with --point KEY=VAL,...")
    if answer.winner is None:
        raise NettuneError(f"persist --best: the search of {study!r} has no winner ({answer.verdict_text})")
    if not answer.complete:
        raise NettuneError(f"persist --best: the search of {study!r} did not finish its end phase, which confirms the winner "
                           "against the defaults: continue it with `nettune run FILE --resume`, or name a point with --point")
    if answer.verdict is None:
        raise NettuneError(f"persist --best: {answer.verdict_text}; there are no knobs to persist")
    return answer


def _winner_point(answer: Answer) -> dict[str, str]:
    """The point filter of the answer's winner."""
    assert answer.winner is not None  # _winner refused an answer without one
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in answer.winner.params.items()}
