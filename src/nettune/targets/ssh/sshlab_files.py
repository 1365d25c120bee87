"""What `nettune lab up --ssh` writes besides the TOML inventory, so the lab rehearses the
setups users already have: an OpenSSH client config (`--ssh-config`) and an Ansible YAML
inventory (`--ansible`; with `--bastion`, plus the client config its hosts name with
`-F`). Both name the lab's own key and known_hosts (host key checking stays strict), and
with `--bastion` both send the test hosts through the jump host.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .sshlab import BASTION


def _atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_ssh_config(path: Path, hosts: dict[str, dict[str, Any]], comment: str) -> None:
    """A `Host` block per lab host (the bastion first), usable as `ssh -F PATH NAME`."""
    lines = [f"# {comment}"]
    for name in sorted(hosts, key=lambda n: n != BASTION):
        h = hosts[name]
        lines += ["", f"Host {name}", f"  HostName {h['address']}", f"  Port {h['port']}", f"  User {h['user']}",
                  f"  IdentityFile {h['key']}", "  IdentitiesOnly yes", f"  UserKnownHostsFile {h['known_hosts']}",
                  "  StrictHostKeyChecking yes"]
        if h.get("jump"):
            lines.append("  ProxyJump " + ",".join(hop["name"] for hop in h["jump"]))
    _atomic(path, "\n".join(lines) + "\n")


def write_ansible(path: Path, hosts: dict[str, dict[str, Any]], group: str, comment: str) -> None:
    """The test hosts in group `group`. With a bastion, as a real fleet is set up for
    Ansible: ssh reaches `bastion` through an OpenSSH client config (ssh knows nothing of the
    inventory), written beside it as PATH.ssh_config and named with `-F` in every host's
    ansible_ssh_common_args, with `-o ProxyJump=bastion`; the bastion is also an ungrouped
    inventory host."""
    args = ""
    if any(h.get("jump") for h in hosts.values()):
        cfg = path.with_name(path.name + ".ssh_config")
        write_ssh_config(cfg, hosts, comment + f" (for {path.name}: ssh -F)")
        args = f"-F {cfg.resolve()} "

    def host_vars(h: dict[str, Any]) -> dict[str, Any]:
        v = {"ansible_host": h["address"], "ansible_port": h["port"], "ansible_user": h["user"],
             "ansible_ssh_private_key_file": h["key"], "nettune_interface": h["interface"]}
        more = [f"-o UserKnownHostsFile={h['known_hosts']}"]
        if h.get("jump"):
            more.insert(0, "-o ProxyJump=" + ",".join(hop["name"] for hop in h["jump"]))
        v["ansible_ssh_common_args"] = args + " ".join(more)
        return v

    data: dict[str, Any] = {"all": {"children": {group: {"hosts": {n: host_vars(h) for n, h in hosts.items() if n != BASTION}}}}}
    if BASTION in hosts:
        data["all"]["hosts"] = {BASTION: host_vars(hosts[BASTION])}
    _atomic(path, f"# {comment}\n" + yaml.safe_dump(data, sort_keys=False))
