"""`nettune ceiling`: each tool configuration on a host's loopback, stored as host facts."""
from __future__ import annotations

import socket
from pathlib import Path

import typer

from ..errors import NettuneError
from .app import DB_OPT, app, console, open_store, user_errors

LOCAL_NAMES = ("localhost", "local", "127.0.0.1")


@app.command()
@user_errors
def ceiling(
    what: list[str] = typer.Argument(None, help="localhost (the default: this machine), or a study file whose lab or local target is this machine."),
    db: Path = DB_OPT,
    duration: int = typer.Option(2, "--duration", min=1, max=60, help="Seconds per test."),
    max_streams: int = typer.Option(0, "--max-streams", min=0, max=128, help="Highest -P (default: the cores the host may use)."),
) -> None:
    """Measure each engine on loopback (-P 1 to the core count) and store it as a host fact: analyze then says when a path
    result is within 10% of that ceiling, and engine = "auto" picks the configuration that went fastest."""
    from ..run.ceiling import best, measure, plan
    from ..store.instrument_tables import add_ceilings
    from ..targets.local import LocalHost

    _check_hosts(what or [])
    host = LocalHost("loopback")
    p = plan(host, max_streams or None)
    if not p.tests:
        raise NettuneError("neither iperf3 nor iperf2 is installed here: apt-get install iperf3 iperf (or: nettune setup)")
    tools = ", ".join(f"{e} {v}" for e, v in p.versions.items() if v)
    console.print(f"[bold]{p.machine}[/]: {len(p.tests)} loopback tests of {duration}s ({tools}; {p.cores} core(s))")

    def show(row: dict) -> None:
        what = f"{row['bps'] / 1e9:.2f} Gbit/s" if row["bps"] is not None else f"[red]failed: {row['error']}[/]"
        console.print(f"  {row['config']} -P {row['streams']}: {what}", highlight=False)

    rows = measure(host, p, duration, show)
    with open_store(db, must_exist=False) as store:
        add_ceilings(store.db, p.machine, rows)
    for fam, (bps, at) in best(rows).items():
        console.print(f"ceiling {fam}: {bps / 1e9:.2f} Gbit/s at -P {at}", highlight=False)
    console.print(f"stored for machine {p.machine} in {db.resolve()}")


def _check_hosts(what: list[str]) -> None:
    """Only this machine can be measured so far: localhost, or a study on this machine."""
    from ..plan.study_file import load_study

    me = socket.gethostname()
    for item in what:
        if item in LOCAL_NAMES or item == me:
            continue
        path = Path(item)
        if path.suffix == ".toml" or path.exists():
            study = load_study(path)
            if not study.target.on_this_machine:
                raise NettuneError(f"{item}: its {study.target.kind} hosts are not this machine; `nettune ceiling` measures "
                                   "this machine's loopback only (remote hosts are not measured yet)")
            continue
        raise NettuneError(f"{item}: not a study file nor this machine ({me}); `nettune ceiling` measures this machine's "
                           "loopback only (remote hosts are not measured yet)")
