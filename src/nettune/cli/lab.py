"""`nettune lab up|down|status`: the built-in lab by hand."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..plan.points import expand_and_check
from ..plan.study_file import load_study
from ..targets import labnet
from .app import app, console, user_errors

lab_app = typer.Typer(help="The built-in lab: network namespaces on a Linux bridge.", no_args_is_help=True)
app.add_typer(lab_app, name="lab")


@lab_app.command("up")
@user_errors
def up(
    file: Path = typer.Argument(..., help="Study file whose [target] kind = \"lab\"."),
    ssh: bool = typer.Option(False, "--ssh", help="Also start an sshd in each host (generated keys) so ssh studies can use the lab."),
    inventory: Path = typer.Option(None, "--inventory", help="With --ssh: write the hosts' inventory (TOML) here, for [target] kind = \"ssh\" inventory = PATH."),
) -> None:
    """Create a study's lab (first point's MTU and queues) and leave it up."""
    from ..targets.lab import LabTarget
    from ..errors import NettuneError

    study = load_study(file)
    if study.target.kind != "lab":
        raise NettuneError(f"{file}: target.kind is {study.target.kind!r}; `lab up` needs kind = \"lab\"")
    first = expand_and_check(study, file.read_text(), str(file))[0]
    target = LabTarget(study)
    state = target.prepare(first)
    t = Table(title=f"lab {study.name} is up (remove with: nettune lab down)", title_justify="left")
    for h in ("host", "namespace", "interface", "address", "mtu", "queues"):
        t.add_column(h)
    for h, s in state["hosts"].items():
        t.add_row(h, target.layout.ns(h), str(s["interface"]), str(s["address"]), str(s["mtu"]), str(s["tx_queues"]))
    console.print(t)
    console.print(f"bridge {target.layout.bridge} {target.layout.bridge_address}/{target.layout.subnet.prefixlen}; run a command in a host: ip netns exec {target.layout.ns(study.target.hosts[0])} COMMAND")
    if ssh or inventory:
        from ..targets import sshlab

        hosts = sshlab.up(target.layout, inventory)
        for h, s in hosts.items():
            console.print(f"sshd on {h}: root@{s['address']} port {s['port']} (pid {s['pid']}), key {s['key']}")
        if inventory:
            console.print(f'inventory written to {inventory}: use \\[target] kind = "ssh", inventory = "{inventory.resolve()}"')


@lab_app.command("down")
@user_errors
def down(
    name: Optional[str] = typer.Argument(None, help="Only this lab (its study name); default: every nettune lab on this machine."),
    force: bool = typer.Option(False, "--force", help="Also remove labs of studies still running (stops them; with NAME, takes that lab from under its run)."),
) -> None:
    """Remove every nettune lab (or lab NAME), including what a killed run left behind.
    Settings a killed run left changed on those hosts are put back first."""
    from ..knobs.gate import settle_labs
    from .knobs import _STYLE, print_given_up

    out, given_up = settle_labs(*labnet.removal_plan(name, force))
    for result, text in out.lines if out else []:
        console.print(f"before removing the lab: [{_STYLE.get(result, 'white')}]{result}[/]: {escape(text)}", highlight=False, soft_wrap=True)
    if given_up:
        console.print("[yellow]given up[/]: these settings on lab hosts being removed could not be restored (their hosts go now):")
        print_given_up(given_up, "given up")
    if name is not None:
        removed = labnet.down_one(name, force)
        from ..targets import sshlab

        if "labs" in removed:
            sshlab.down(name)
    else:
        removed = labnet.down_all(force)
        from ..targets import sshlab

        removed["ssh keys"] = sshlab.down_all_ssh()  # their sshds died with the namespaces
    from ..run.access import DIR_PREFIX
    from ..targets.procs import remove_stale_dirs

    removed["test credentials"] = remove_stale_dirs(DIR_PREFIX, force)  # of runs killed with -9
    if not any(removed.values()):
        console.print("nothing to remove")
        return
    for what, names in removed.items():
        if names:
            console.print(f"{what if what.startswith('kept') else 'removed ' + what}: {', '.join(names)}")


@lab_app.command("status")
@user_errors
def status() -> None:
    """Show nettune namespaces, links and labs present on this machine."""
    found = labnet.leftovers()
    if not any(found.values()):
        console.print("no nettune lab on this machine")
        return
    for what, names in found.items():
        console.print(f"{what}: {', '.join(names) if names else '-'}")
