"""`nettune hosts STUDY`: how every host will be reached, and whether it answers (printing only)."""
from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from .app import app, console, user_errors


@app.command()
@user_errors
def hosts(
    file: Path = typer.Argument(..., help="Study file: its [target] hosts are listed and checked."),
    connect: bool = typer.Option(True, "--connect/--no-connect", help="Connect to each host and look for its tools (default), or only print how it would be reached."),
) -> None:
    """Print each host as nettune will connect to it (address, port, user, key, jump chain,
    known_hosts, sudo) and check it answers and has iperf3/iperf. Exit 1 when a host fails."""
    from ..plan.study_file import load_study
    from ..commands.hosts_check import check_hosts, describe_hosts

    study = load_study(file)
    rows = check_hosts(study) if connect else describe_hosts(study)
    t = Table(title=f"hosts of {study.name}", title_justify="left")
    for c in ("host", "role", "address", "port", "user", "key", "jump", "known_hosts", "sudo", "from") + (("status",) if connect else ()):
        t.add_column(c)
    for r in rows:
        status = ("[green]ok[/]" if r.ok else "[red]failed[/]") if connect else None
        cells = [r.name, r.role, r.address, str(r.port or "-"), r.user, r.key, r.jump, r.known_hosts, "yes" if r.sudo else "no", r.source]
        t.add_row(*map(escape, cells), *((status,) if status else ()))
    console.print(t, crop=False)
    if study.target.kind == "kubernetes":  # the version the run plans for, and what it means for the study's sysctls
        from .k8s_output import print_k8s_hosts  # noqa: PLC0415

        print_k8s_hosts(study, rows, connect)
    for r in rows:
        for n in r.notes:
            console.print(f"[yellow]warning[/]: {escape(r.name)}: not honoured: {escape(n)}", soft_wrap=True)
        if not r.ok:
            console.print(f"[red]{escape(r.name)}[/]: {escape(r.reason)}", soft_wrap=True, highlight=False)
    if not all(r.ok for r in rows):
        raise typer.Exit(1)
