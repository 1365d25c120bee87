"""`nettune doctor`: audit hosts before measuring (the doctor package does it; this prints)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from ..errors import NettuneError
from .app import app, console, user_errors

STYLE = {"info": "dim", "cannot_tell": "cyan", "warn": "yellow", "problem": "red"}
LABEL = {"info": "info", "cannot_tell": "?cannot", "warn": "warn", "problem": "problem"}
ORDER = {"problem": 0, "warn": 1, "cannot_tell": 2, "info": 3}


@app.command()
@user_errors
def doctor(
    targets: Optional[list[str]] = typer.Argument(None, help="A study file (its target's hosts), or host names (from --inventory, else looked up in ssh_config); default: this machine."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", help="Inventory (TOML or Ansible) the named hosts come from."),
    format: str = typer.Option("table", "--format", "-f", help="table, markdown or json."),
    fix: Optional[list[str]] = typer.Option(None, "--fix", help="Apply this check's fix (journaled: `nettune restore` undoes it); repeat, or `all`."),
    only: Optional[list[str]] = typer.Option(None, "--check", help="Run only this check (repeatable)."),
    source: Optional[Path] = typer.Option(None, "--from", help="Read a sosreport (directory or tarball) or a nettune capture instead of live hosts."),
    capture: Optional[Path] = typer.Option(None, "--capture", help="Also write everything doctor read from the hosts to this tarball (for --from)."),
    interface: Optional[str] = typer.Option(None, "--interface", help="The NIC to check on this machine or in a sosreport (default: the default route's)."),
    app_cpus: Optional[str] = typer.Option(None, "--app-cpus", help="CPUs the application runs on (e.g. 0-7), for the NUMA check."),
) -> None:
    """Audit hosts before measuring: each finding with its evidence, why it matters, the fix
    and the revert; "cannot tell" where an input is missing. Exit 0: nothing above info;
    1: warnings or problems; 2: errors."""
    from ..doctor.audit import audit, gather
    from ..doctor.fix import apply_fixes, chosen
    from ..plan.study_file import load_study

    if format not in ("table", "markdown", "json"):
        raise NettuneError(f"--format {format!r}: use table, markdown or json")
    names = list(targets or [])
    cpus = _cpus(app_cpus)
    if source is not None:
        _offline_only(names, fix, capture)
        from ..doctor.inputs import views_from

        views, addresses, _ = views_from(source, interface)
        for v in views:
            v.app_cpus = cpus if cpus is not None else v.app_cpus
        rep = audit(views, addresses, set(only) if only else None)
        _print(rep, format, [], None)
        raise typer.Exit(rep.exit_code)
    if fix and capture is not None:
        raise NettuneError("--capture records hosts as they are: it cannot be combined with --fix (capture first, then fix)")
    study = None
    if len(names) == 1 and names[0].endswith(".toml"):
        from ..studyfile.local_commands import allow_local_commands

        with allow_local_commands():  # the audit connects: ssh_config Match exec runs as ssh would run it
            study = load_study(Path(names[0]))
        names = []
    if interface and (names or study is not None):
        raise NettuneError("--interface applies to this machine or a sosreport; a study or inventory names each host's interface")
    with gather(names, str(inventory) if inventory else None, study, record=capture is not None, interface=interface) as (views, addresses):
        for v in views:
            v.app_cpus = cpus
        rep = audit(views, addresses, set(only) if only else None)
        fixed: list[str] = []
        if fix:
            fixed = apply_fixes(chosen(rep.findings, fix), views)
        if capture is not None:
            from ..doctor.capture import write_capture

            write_capture(capture, views, addresses)
    _print(rep, format, fixed if fix else None, capture)
    raise typer.Exit(rep.exit_code)


def _cpus(text: str | None) -> list[int] | None:
    if text is None:
        return None
    from ..knobs.base import cpu_list

    try:
        cpus = sorted(cpu_list(text))
    except ValueError:
        cpus = []
    if not cpus:
        raise NettuneError(f"--app-cpus {text!r}: give a CPU list such as 0-7 or 0,2,4")
    return cpus


def _offline_only(names: list[str], fix: list[str] | None, capture: Path | None) -> None:
    if names:
        raise NettuneError("--from reads a capture: name no host or study with it")
    if fix:
        raise NettuneError("--from reads a capture: nothing can be fixed there (run --fix on the host itself)")
    if capture is not None:
        raise NettuneError("--from and --capture: a capture is made from live hosts, not from another capture")


def _print(rep: Any, format: str, fixed: list[str] | None, capture: Path | None) -> None:
    if format == "json":
        print(json.dumps(rep.as_json() | ({"fixed": fixed} if fixed is not None else {}) | ({"capture": str(capture)} if capture else {}), indent=2))
    elif format == "markdown":
        print("| check | host | severity | seen | evidence | fix | revert | inputs |\n|---|---|---|---|---|---|---|---|")
        for f in rep.findings:
            cells = (f.check, f.host, f.severity, f.seen, f.evidence, f.fix, f.revert, "; ".join(f.inputs))
            print("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    else:
        console.print(f"[dim]input: {escape(rep.input)}[/]", highlight=False, soft_wrap=True)
        for host in rep.hosts + sorted({f.host for f in rep.findings} - set(rep.hosts)):
            mine = sorted((f for f in rep.findings if f.host == host), key=lambda f: ORDER[f.severity])
            if not mine:
                continue
            console.print(f"[bold]{escape(host)}[/]")
            for f in mine:
                console.print(f"  [{STYLE[f.severity]}]{LABEL[f.severity]:7}[/] {escape(f.check):15} {escape(f.seen)}", highlight=False, soft_wrap=True)
                if f.severity == "cannot_tell":
                    console.print(f"           {escape(f.evidence)}", style="dim", highlight=False, soft_wrap=True)
                    if f.fix:
                        console.print(f"           to tell: {escape(f.fix)}", highlight=False, soft_wrap=True)
                elif f.severity != "info":
                    console.print(f"           seen: {escape(f.evidence)}", style="dim", highlight=False, soft_wrap=True)
                    if f.inputs:
                        console.print(f"           from: {escape('; '.join(f.inputs))}", style="dim", highlight=False, soft_wrap=True)
                    if f.why:
                        console.print(f"           why: {escape(f.why)}", highlight=False, soft_wrap=True)
                    if f.fix:
                        console.print(f"           fix: {escape(f.fix)}" + ("  [green](--fix " + escape(f.check) + ")[/]" if f.knob else ""), highlight=False, soft_wrap=True)
                    if f.revert:
                        console.print(f"           revert: {escape(f.revert)}", highlight=False, soft_wrap=True)
        c = rep.counts()
        console.print(f"{c['problem']} problem(s), {c['warn']} warning(s), {c['cannot_tell']} cannot tell, {c['info']} note(s)")
        if capture is not None:
            console.print(f"capture written: {escape(str(capture))} (`nettune doctor --from {escape(str(capture))}` reads it)", highlight=False, soft_wrap=True)
        for line in fixed or []:
            console.print(f"[green]fixed[/]: {escape(line)} (`nettune restore` puts it back)", highlight=False, soft_wrap=True)
    for e in rep.errors:
        console.print(f"[red]error[/]: {escape(e)}", highlight=False, soft_wrap=True)
