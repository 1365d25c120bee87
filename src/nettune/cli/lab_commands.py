"""`nettune lab up|down|status`: the built-in lab by hand (run.lab_admin does it; this prints)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..targets.lab import labnet
from ..errors import NettuneError
from .app import RESULT_STYLE, app, console, print_given_up, user_errors

lab_app = typer.Typer(help="The built-in lab: network namespaces on a Linux bridge, or (--vms) QEMU guests under a private libvirtd.", no_args_is_help=True)
app.add_typer(lab_app, name="lab")


@lab_app.command("up")
@user_errors
def up(
    file: Path = typer.Argument(..., help="Study file whose \\[target] kind = \"lab\"."),
    ssh: bool = typer.Option(False, "--ssh", help="Also start an sshd in each host (generated keys) so ssh studies can use the lab."),
    inventory: Path = typer.Option(None, "--inventory", help="With --ssh: write the hosts' inventory (TOML) here, for \\[target] kind = \"ssh\" inventory = PATH."),
    bastion: bool = typer.Option(False, "--bastion", help="With --ssh: put the hosts behind a jump-host namespace named bastion (their sshd takes logins only from it)."),
    ssh_config: Path = typer.Option(None, "--ssh-config", help="With --ssh: also write an OpenSSH client config (Host per lab host) here, for \\[target] ssh_config = PATH."),
    ansible: Path = typer.Option(None, "--ansible", help="With --ssh: also write an Ansible YAML inventory here (hosts in a group named after the study)."),
    vms: bool = typer.Option(False, "--vms", help="The study's VM lab (\\[target] kind = \"vmlab\"): QEMU guests booted by GRUB, domains of a private libvirtd, reached over SSH (`nettune setup --vms` first)."),
) -> None:
    """Create a study's lab (first point's MTU and queues) and leave it up."""
    from ..commands.lab_admin import lab_up, start_sshds

    if vms:
        _vm_lab_up(file, inventory, ssh or bastion or ssh_config is not None or ansible is not None)
        return

    lab = lab_up(file)
    t = Table(title=f"lab {lab.name} is up (remove with: nettune lab down)", title_justify="left")
    for h in ("host", "namespace", "interface", "address", "mtu", "queues"):
        t.add_column(h)
    for r in lab.hosts:
        t.add_row(r.host, r.namespace, r.interface, r.address, r.mtu, r.queues)
    console.print(t)
    console.print(escape(f"bridge {lab.bridge}; run a command in a host: ip netns exec {lab.first_namespace} COMMAND"), highlight=False)
    if ssh or inventory or bastion or ssh_config or ansible:
        for h, s in start_sshds(lab, inventory, bastion, ssh_config, ansible).items():
            via = f" via {s['jump'][0]['name']}" if s.get("jump") else ""
            console.print(escape(f"sshd on {h}: root@{s['address']} port {s['port']}{via} (pid {s['pid']}), key {s['key']}"), highlight=False)
        if inventory:
            console.print(escape(f'inventory written to {inventory}: use [target] kind = "ssh", inventory = "{inventory.resolve()}"'), highlight=False)
        if ssh_config:
            console.print(escape(f'OpenSSH client config written to {ssh_config}: `ssh -F {ssh_config} HOST`, or [target] kind = "ssh", ssh_config = "{ssh_config.resolve()}" with hosts named only'), highlight=False)
        if ansible:
            console.print(escape(f'Ansible inventory written to {ansible}: [target] kind = "ssh", inventory = "{ansible.resolve()}", group = "{lab.name}"'), highlight=False)


def _vm_lab_up(file: Path, inventory: Path | None, ssh_flags: bool) -> None:
    from ..commands.vmlab_admin import vm_lab_up
    from ..targets.ssh.sshlab import write_inventory

    if ssh_flags:
        raise NettuneError("--vms: the guests have their own sshds already; of the SSH options only --inventory applies")
    lab = vm_lab_up(file, echo=lambda s: console.print(f"[dim]{escape(s)}[/]", highlight=False, soft_wrap=True))
    state = "is up" if lab.made else "was up already (same shape): using it"
    t = Table(title=f"VM lab {lab.name} {state} (remove with: nettune lab down {lab.name})", title_justify="left")
    for h in ("host", "role", "address", "ssh", "vCPUs", "MiB", "queues"):
        t.add_column(h)
    for r in lab.hosts:
        t.add_row(r.host, r.role, r.address, r.ssh, r.vcpus, r.memory_mib, r.queues)
    console.print(t)
    console.print(f"bridge {lab.bridge}; accelerator {escape(lab.accel)}", highlight=False, soft_wrap=True)
    console.print(f"ssh -i {lab.key} -o UserKnownHostsFile={lab.known_hosts} root@ADDRESS", highlight=False, soft_wrap=True)
    if inventory:
        write_inventory(inventory, lab.inventory, f"VM lab {lab.name} (nettune lab up --vms); valid until nettune lab down")
        console.print(f'inventory written to {inventory}: use \\[target] kind = "ssh", inventory = "{inventory.resolve()}"', highlight=False, soft_wrap=True)
    console.print(f"`nettune run {file}` uses it; it stays up until `nettune lab down {lab.name}`", highlight=False, soft_wrap=True)


@lab_app.command("down")
@user_errors
def down(
    name: Optional[str] = typer.Argument(None, help="Only this lab (its study name); default: every nettune lab on this machine."),
    force: bool = typer.Option(False, "--force", help="Also remove labs of studies still running (stops them; with NAME, takes that lab from under its run)."),
) -> None:
    """Remove every nettune lab (or lab NAME), including what a killed run left behind.
    Settings a killed run left changed on those hosts are put back first."""
    from ..commands.lab_admin import lab_down, settle_before_down

    out, given_up = settle_before_down(name, force)
    for result, text in out.lines if out else []:
        console.print(f"before removing the lab: [{RESULT_STYLE.get(result, 'white')}]{result}[/]: {escape(text)}", highlight=False, soft_wrap=True)
    if given_up:
        console.print("[yellow]given up[/]: these settings on lab hosts being removed could not be restored (their hosts go now):")
        print_given_up(given_up, "given up")
    removed = lab_down(name, force)
    if not any(removed.values()):
        console.print("nothing to remove")
        return
    for what, names in removed.items():
        if names:
            console.print(escape(f"{what if what.startswith('kept') else 'removed ' + what}: {', '.join(names)}"), highlight=False)


@lab_app.command("status")
@user_errors
def status() -> None:
    """Show nettune namespaces, links and labs present on this machine."""
    from ..commands.vmlab_admin import vm_lab_names

    found = labnet.leftovers()
    found["VM labs"] = vm_lab_names()
    if not any(found.values()):
        console.print("no nettune lab on this machine")
        return
    for what, names in found.items():
        console.print(escape(f"{what}: {', '.join(names) if names else '-'}"), highlight=False)
