"""`nettune hosts STUDY`: how every host will be reached, and whether it answers (printing only)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable

import typer
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from ..studyfile.models import Study
from ..targets.target_kind import HostCheck
from .app import app, console, user_errors


def _k8s_hosts(study: Study, rows: list[HostCheck], connected: bool) -> None:
    from .k8s_output import print_k8s_hosts  # noqa: PLC0415 - loads the cluster's modules only for a cluster study

    print_k8s_hosts(study, rows, connected)


# What a target kind adds to `nettune hosts`, by `[target] kind` (its CLI part): the
# Kubernetes version a run plans for and the classes of the study's sysctls for it.
KIND_HOSTS: dict[str, Callable[[Study, list[HostCheck], bool], None]] = {"kubernetes": _k8s_hosts}

COLUMNS = ("host", "role", "address", "port", "user", "key", "jump", "known_hosts", "sudo", "from")


@app.command()
@user_errors
def hosts(
    file: Path = typer.Argument(..., help="Study file: its \\[target] hosts are listed and checked."),
    connect: bool = typer.Option(True, "--connect/--no-connect", help="Connect to each host and look for its tools (default), or only print how it would be reached."),
    fmt: str = typer.Option("table", "--format", help="table (for reading) or json (every field, for scripts)."),
    run_config_commands: bool = typer.Option(False, "--run-config-commands", help="With --no-connect: run the ssh_config `Match exec` commands and inventory scripts the hosts depend on (connecting runs them anyway, as ssh and Ansible do)."),
) -> None:
    """Print each host as nettune will connect to it (address, port, user, keys, jump chain,
    known_hosts, sudo) and check it answers and has iperf3/iperf. Exit 1 when a host fails."""
    from ..commands.hosts_check import check_hosts, describe_hosts, inventory_read, left_out
    from ..plan.study_file import load_study
    from ..studyfile.local_commands import allow_local_commands

    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"--format {fmt!r}: table or json")
    with allow_local_commands(connect or run_config_commands):  # connecting is a real run; --no-connect runs nothing unless asked
        study = load_study(file)
    rows = check_hosts(study) if connect else describe_hosts(study)
    skipped = left_out(study)
    if fmt == "json":
        doc = {"study": study.name, "connected": connect, "inventory_read": inventory_read(study),
               "hosts": [dataclasses.asdict(r) for r in rows], "left_out": skipped}
        print(json.dumps(doc, indent=2))
    else:
        _table(study.name, rows, connect, skipped)
        more = KIND_HOSTS.get(study.target.kind)  # a target kind's own part (a cluster's version and sysctl classes)
        if more is not None:
            more(study, rows, connect)
    if not all(r.ok for r in rows):
        raise typer.Exit(1)


def _table(name: str, rows: list, connect: bool, skipped: dict[str, str]) -> None:
    t = Table(title=f"hosts of {name}", title_justify="left")
    for c in COLUMNS + (("status",) if connect else ()):
        t.add_column(c, overflow="fold")
    for r in rows:
        status = ("[green]ok[/]" if r.ok else "[red]failed[/]") if connect else None
        cells = [r.name, r.role, r.address, str(r.port or "-"), r.user, r.key, r.jump, r.known_hosts, "yes" if r.sudo else "no", r.source]
        t.add_row(*map(escape, cells), *((status,) if status else ()))
    # piped (`| cat`, `| less`): every value whole, however wide the table; a terminal folds
    if console.is_terminal:
        console.print(t, crop=False)
    else:
        from rich.console import Console  # noqa: PLC0415 - Console.print never goes wider than the console itself

        wide = max(console.width, Measurement.get(console, console.options.update(width=1 << 16), t).maximum)
        Console(width=wide, file=console.file, no_color=console.no_color, highlight=False, emoji=False).print(t, crop=False)
    for r in rows:
        for n in r.notes:
            console.print(f"[yellow]warning[/]: {escape(r.name)}: not honoured: {escape(n)}", soft_wrap=True)
        for n in r.ran:
            console.print(f"{escape(r.name)}: {escape(n)}", soft_wrap=True, highlight=False)
        for n in r.unresolved:
            console.print(f"[yellow]{escape(r.name)}[/]: {escape(n)}", soft_wrap=True, highlight=False)
        if not r.ok:
            console.print(f"[red]{escape(r.name)}[/]: {escape(r.reason)}", soft_wrap=True, highlight=False)
    for n, why in skipped.items():
        console.print(f"[dim]{escape(n)}: left out: {escape(why)}[/]", soft_wrap=True, highlight=False)
