"""`nettune ceiling`: each tool configuration on a host's loopback, stored as host facts."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import NettuneError
from ..store.locate import describe
from .app import DB_OPT, app, console, open_writer, user_errors

@app.command()
@user_errors
def ceiling(
    what: list[str] = typer.Argument(None, help="localhost (the default: this machine), host names (from --inventory, else ssh_config), or a study file (its test hosts)."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", help="Inventory (TOML or Ansible) the named hosts come from."),
    db: str = DB_OPT,
    duration: int = typer.Option(2, "--duration", min=1, max=60, help="Seconds per test."),
    max_streams: int = typer.Option(0, "--max-streams", min=0, max=128, help="Highest -P (default: the cores the host may use)."),
) -> None:
    """Measure each engine on each host's own loopback (-P 1 to its core count) and store it as a host fact: analyze then
    says when a path result is within 10% of that ceiling, and engine = "auto" picks the configuration that went fastest."""
    from ..commands.ceiling import best, hosts_to_measure, measure, plan

    with hosts_to_measure(list(what or []), str(inventory) if inventory else None) as hosts:
        plans = [(h, plan(h, max_streams or None, answers)) for h, answers in hosts]
        missing = [h.name for h, p in plans if not p.tests]
        if missing:
            raise NettuneError(f"{', '.join(missing)}: neither iperf3 nor iperf2 is installed there: apt-get install iperf3 iperf "
                               "(or: nettune setup)")
        with open_writer(db) as store:
            for host, p in plans:
                tools = ", ".join(f"{e} {v}" for e, v in p.versions.items() if v)
                where = p.machine if host.on_this_machine else f"{host.name} ({p.machine})"
                console.print(f"[bold]{where}[/]: {len(p.tests)} loopback tests of {duration}s ({tools}; {p.cores} core(s))")
                rows = measure(host, p, duration, _show)
                store.add_ceilings(p.machine, rows)
                for fam, (bps, at) in best(rows).items():
                    console.print(f"ceiling {fam}: {bps / 1e9:.2f} Gbit/s at -P {at} (machine {p.machine})", highlight=False)
    console.print(f"stored in {describe(db)}")


def _show(row: dict[str, Any]) -> None:
    what = f"{row['bps'] / 1e9:.2f} Gbit/s" if row["bps"] is not None else f"[red]failed: {row['error']}[/]"
    console.print(f"  {row['config']} -P {row['streams']}: {what}", highlight=False)
