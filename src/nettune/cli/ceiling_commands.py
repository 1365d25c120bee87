"""`nettune ceiling`: each tool configuration on a host's loopback, stored as host facts."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from ..errors import NettuneError
from ..store.locate import describe
from .app import DB_OPT, app, console, open_writer, user_errors

@app.command()
@user_errors
def ceiling(
    what: list[str] = typer.Argument(None, help="localhost (the default: this machine), host names (from --inventory, else ssh_config), or a study file (a lab study: its lab path; local: this machine; ssh: its test hosts)."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", help="Inventory (TOML or Ansible) the named hosts come from."),
    db: str = DB_OPT,
    duration: int = typer.Option(2, "--duration", min=1, max=60, help="Seconds per test."),
    max_streams: int = typer.Option(0, "--max-streams", min=0, max=128, help="Highest -P (default: 16, or the largest -P of the study files given)."),
    runs: int = typer.Option(3, "--runs", min=1, max=20, help="Runs of each test, round by round (their mean and 95% interval are the ceiling; 2 or more give an interval)."),
) -> None:
    """Measure what each tool configuration can reach on each host's own path, -P 1 to 16, repeated.

    The path is the host's loopback, or a lab study's lab path. Every run is stored: analyze then says when a point is within noise of the ceiling of its own path class (docs/engines.md), and engine = "auto" picks by the loopback ceiling on loopback studies."""
    from ..commands.ceiling import best, hosts_to_measure, measure, plan

    top = max_streams or _largest_p(list(what or [])) or None
    with hosts_to_measure(list(what or []), str(inventory) if inventory else None) as where:
        plans = [(w, plan(w.client, top, w.answers, w.path)) for w in where]
        missing = [w.client.name for w, p in plans if not p.tests]
        if missing:
            raise NettuneError(f"{', '.join(missing)}: neither iperf3 nor iperf2 is installed there: apt-get install iperf3 iperf "
                               "(or: nettune setup)")
        with open_writer(db) as store:
            for w, p in plans:
                tools = ", ".join(f"{e} {v}" for e, v in p.versions.items() if v)
                name = w.label or (p.machine if w.client.on_this_machine else f"{w.client.name} ({p.machine})")
                kind = "loopback" if p.path == "loopback" else "lab"
                console.print(f"[bold]{escape(name)}[/]: {len(p.tests)} {kind} tests of {duration}s, {runs} run(s) each ({escape(tools)}; {p.cores} core(s))")
                rows = measure(w.server, w.client, p, duration, runs, _show)
                store.add_ceilings(p.machine, rows, p.path)
                for fam, (bps, at) in best(rows).items():
                    console.print(escape(f"ceiling {fam}: {bps / 1e9:.2f} Gbit/s at -P {at} (machine {p.machine}, {p.path})"), highlight=False)
    console.print(escape(f"stored in {describe(db)}"))


def _largest_p(what: list[str]) -> int:
    """The largest -P of the study files among the arguments (0: none)."""
    from ..plan.points import expand_and_check
    from ..plan.study_file import load_study

    top = 0
    for w in what:
        if w.endswith(".toml") or Path(w).is_file():
            for rp in expand_and_check(load_study(Path(w))):
                top = max(top, int(rp.workload.parallel))
    return top


def _show(row: dict[str, Any]) -> None:
    from ..commands.ceiling import row_line

    line = escape("  " + row_line(row))
    console.print(f"[red]{line}[/]" if not row["values"] else line, highlight=False)
