"""`nettune doctor`: audit hosts before measuring (the doctor package does it; this prints)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from ..errors import NettuneError
from .app import app, console, user_errors

STYLE = {"info": "dim", "warn": "yellow", "problem": "red"}


@app.command()
@user_errors
def doctor(
    targets: Optional[list[str]] = typer.Argument(None, help="A study file (its target's hosts), or host names (from --inventory, else looked up in ssh_config); default: this machine."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", help="Inventory (TOML or Ansible) the named hosts come from."),
    format: str = typer.Option("table", "--format", "-f", help="table, markdown or json."),
    fix: Optional[list[str]] = typer.Option(None, "--fix", help="Apply this check's fix (journaled: `nettune restore` undoes it); repeat, or `all`."),
    only: Optional[list[str]] = typer.Option(None, "--check", help="Run only this check (repeatable)."),
) -> None:
    """Audit hosts before measuring: each finding with its evidence, why it matters, the fix
    and the revert. Exit 0: nothing above info; 1: warnings or problems; 2: errors."""
    from ..doctor.audit import audit, gather
    from ..doctor.fix import apply_fixes, chosen
    from ..plan.study_file import load_study

    if format not in ("table", "markdown", "json"):
        raise NettuneError(f"--format {format!r}: use table, markdown or json")
    names = list(targets or [])
    study = None
    if len(names) == 1 and names[0].endswith(".toml"):
        from ..studyfile.local_commands import allow_local_commands

        with allow_local_commands():  # the audit connects: ssh_config Match exec runs as ssh would run it
            study = load_study(Path(names[0]))
        names = []
    with gather(names, str(inventory) if inventory else None, study) as (views, addresses):
        rep = audit(views, addresses, set(only) if only else None)
        fixed: list[str] = []
        if fix:
            fixed = apply_fixes(chosen(rep.findings, fix), views)
    if format == "json":
        print(json.dumps(rep.as_json() | ({"fixed": fixed} if fix else {}), indent=2))
    elif format == "markdown":
        print("| check | host | severity | seen | evidence | fix | revert |\n|---|---|---|---|---|---|---|")
        for f in rep.findings:
            cells = (f.check, f.host, f.severity, f.seen, f.evidence, f.fix, f.revert)
            print("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    else:
        for host in rep.hosts + sorted({f.host for f in rep.findings} - set(rep.hosts)):
            mine = sorted((f for f in rep.findings if f.host == host), key=lambda f: -f.rank)
            if not mine:
                continue
            console.print(f"[bold]{escape(host)}[/]")
            for f in mine:
                console.print(f"  [{STYLE[f.severity]}]{f.severity:7}[/] {escape(f.check):15} {escape(f.seen)}", highlight=False, soft_wrap=True)
                if f.severity != "info":
                    console.print(f"           seen: {escape(f.evidence)}", style="dim", highlight=False, soft_wrap=True)
                    if f.why:
                        console.print(f"           why: {escape(f.why)}", highlight=False, soft_wrap=True)
                    if f.fix:
                        console.print(f"           fix: {escape(f.fix)}" + ("  [green](--fix " + escape(f.check) + ")[/]" if f.knob else ""), highlight=False, soft_wrap=True)
                    if f.revert:
                        console.print(f"           revert: {escape(f.revert)}", highlight=False, soft_wrap=True)
        c = rep.counts()
        console.print(f"{c['problem']} problem(s), {c['warn']} warning(s), {c['info']} note(s)")
        for line in fixed:
            console.print(f"[green]fixed[/]: {escape(line)} (`nettune restore` puts it back)", highlight=False, soft_wrap=True)
    for e in rep.errors:
        console.print(f"[red]error[/]: {escape(e)}", highlight=False, soft_wrap=True)
    raise typer.Exit(rep.exit_code)
