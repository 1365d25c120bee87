"""Ansible inventories as a host source: `inventory = "hosts.ini"` (or .yml, a directory,
a script), `group = "NAME"`; each host reached as Ansible's ssh connection reaches it.

Reading: a real run (local commands allowed, local_commands.py) with `ansible-inventory`
installed reads the inventory through `ansible-inventory -i SRC --list`, as Ansible does
(vars plugins, vault, inventory scripts and plugins); its errors are shown with the tool's
own first error line and the file. Otherwise the static reader (ansible_static.py) reads
INI, YAML and directories exactly as Ansible's plugins do, running nothing; an inventory
script or plugin is then refused with the flag that runs it.

Hosts come from the group tree (`all` and its children), so a host without variables is
one too. Each host becomes the ssh command line Ansible builds (connection plugin `ssh`,
ansible-core 2.19): `-o Port=` (ansible_port), `-o IdentityFile=`
(ansible_ssh_private_key_file, `~` expanded, relative to the current directory as for
Ansible), `-o User=` (ansible_user), `-o ConnectTimeout=` (ansible_timeout, default 10),
then ansible_ssh_common_args and ansible_ssh_extra_args, to ansible_host (else the name);
that line and your ssh_config are then resolved as ssh would (ssh_config.py), so a
ProxyCommand is refused the same way from either place. nettune's own variables:
nettune_role, nettune_interface, nettune_allow_reboot, nettune_reboot_timeout, nettune_override_boot_dropins,
nettune_allow_vm_restart, nettune_allow_link_reset, nettune_vmid, nettune_domain. Hosts with
ansible_connection other than ssh (`local`, `docker`, ...) are left out, named in the
target's `left_out`.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .ansible_listing import groups_of, read_inventory, static_list
from .ansible_static import InventoryError, Vaulted
from .local_commands import FLAG, may_run, redact
from .ssh_resolve import CommandLine

# Connection variables nettune does not use: named (never their values) in `ignored`.
_PASSWORDS = ("ansible_password", "ansible_ssh_pass", "ansible_ssh_password", "ansible_become_password", "ansible_become_pass")
_IGNORED = {"ansible_ssh_executable", "ansible_sftp_extra_args", "ansible_scp_extra_args", "ansible_shell_type",
            "ansible_shell_executable", "ansible_ssh_transfer_method", "ansible_ssh_retries", "ansible_become_flags",
            "ansible_become_exe", "ansible_ssh_pipelining", "ansible_pipelining"}
SSH_CONNECTIONS = ("ssh", "smart", "paramiko", "paramiko_ssh", "ansible.builtin.ssh", "ansible.builtin.paramiko_ssh")
DEFAULT_SSH_ARGS = "-C -o ControlMaster=auto -o ControlPersist=60s"  # ansible.cfg ssh_args default
# ssh's flags: those taking a value, and those nettune reads among them
_WITH_VALUE = set("bcDeEFiIJlLmoOpPQRSwWB")
_HARMLESS = set("46aACgkKMnNqsTtvxXYfGVy") | {"D", "E", "L", "R", "S", "w", "e", "I", "O", "Q", "W"}


def is_ansible(path: Path) -> bool:
    return path.suffix.lower() != ".toml"


def dynamic_source(path: Path) -> str | None:
    """What would run code to list the hosts: an executable file (Ansible's script plugin
    runs it), a YAML file naming an inventory plugin, or such a file in a directory."""
    if path.is_dir():
        from .ansible_static import IGNORED  # noqa: PLC0415

        for child in sorted(os.listdir(path)):
            if not IGNORED.search(child):
                got = dynamic_source(path / child)
                if got:
                    return got
        return None
    if path.is_file() and os.access(path, os.X_OK):
        return f"the inventory script {path}"
    if path.suffix.lower() in (".yml", ".yaml"):
        try:
            head = path.read_text(errors="replace")[:65536]
        except OSError:
            return None
        m = re.search(r"^plugin:\s*['\"]?([\w.]+)", head, re.M)
        if m:
            return f"the inventory plugin {m.group(1)} ({path})"
    return None


def ansible_list(path: Path) -> tuple[dict[str, Any], str]:
    """The inventory as `ansible-inventory --list` gives it, and how it was read."""
    dynamic = dynamic_source(path)
    exe = shutil.which("ansible-inventory")
    if not may_run():
        if dynamic:
            raise InventoryError(f"inventory {path}: its hosts come from {dynamic}, which Ansible runs to list them; "
                                 f"nothing is run here (a dry run runs nothing): add {FLAG} to run it as a real run does")
        return static_list(path), "read by nettune (nothing run)"
    if exe is None:
        if dynamic:
            raise InventoryError(f"inventory {path}: its hosts come from {dynamic}; install ansible-core "
                                 "(pip install nettune[ansible]) so that ansible-inventory runs it")
        return static_list(path), "read by nettune (ansible-inventory is not installed)"
    env = {**os.environ, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"}
    try:
        r = subprocess.run([exe, "-i", str(path), "--list"], capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InventoryError(f"inventory {path}: ansible-inventory failed: {e}") from None
    if r.returncode != 0:
        raise InventoryError(f"inventory {path}: ansible-inventory: {first_error(r.stderr, path)}")
    try:
        data = json.loads(r.stdout)
    except json.JSONDecodeError:
        raise InventoryError(f"inventory {path}: ansible-inventory printed no JSON ({first_error(r.stderr, path)})") from None
    how = f"ran {dynamic} through ansible-inventory" if dynamic else "read by ansible-inventory"
    return data, how


def first_error(stderr: str, path: Path) -> str:
    """The tool's own reason: the failure of the plugin that fits the file (YAML for .yml,
    INI otherwise), with its Origin line; else the first [ERROR] or [WARNING] line."""
    fails = []
    lines = stderr.splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"\[WARNING\]: (?:\* )?Failed to parse .*? with '?(\w+)'? plugin: (.*)", ln)
        if m:
            origin = next((x.strip()[len("Origin: "):] for x in lines[i + 1: i + 12] if x.strip().startswith("Origin: ")), "")
            fails.append((m.group(1), m.group(2).strip(), origin))
    if fails:
        want = ("yaml", "auto") if path.suffix.lower() in (".yml", ".yaml", ".json") else ("ini", "script")
        plugin, why, origin = next((f for f in fails if f[0] in want), fails[0])
        return f"{why}{f' ({origin})' if origin else ''} [{plugin} plugin]"
    for tag in ("[ERROR]", "ERROR!", "[WARNING]"):
        for ln in lines:
            if ln.strip().startswith(tag):
                return ln.strip()
    return " ".join(stderr.split())[-300:] or "failed without a message"


def _truthy(v: Any) -> bool:
    return v is True or str(v).strip().lower() in ("true", "yes", "1", "on", "y")


def _first(hv: dict[str, Any], *names: str) -> Any:
    """The value Ansible's ssh plugin uses: where a host has both spellings, the ansible_ssh_
    one wins (the plugin's option lists end with it, and the last one set is taken; for the
    timeout, PlayContext's magic-variable order puts it first), so callers name it first."""
    for k in names:
        if hv.get(k) not in (None, ""):
            return hv[k]
    return None


def _plain(name: str, value: Any, host: str, path: Path) -> str:
    """A connection variable as text; a template or a vaulted value is refused."""
    if isinstance(value, Vaulted) or (isinstance(value, dict) and "__ansible_vault" in value):
        raise InventoryError(f"inventory {path}: host {host}: {name} is vault-encrypted; nettune cannot decrypt it, write it in clear")
    text = str(value)
    if "{{" in text or "{%" in text:
        raise InventoryError(f"inventory {path}: host {host}: {name} is a Jinja template ({redact(text)}); nettune does not "
                             "evaluate templates: write the value")
    return text


def ssh_words(args: str, var: str, host: str, path: Path) -> tuple[CommandLine, list[str]]:
    """ssh options in ansible_ssh_common_args / extra_args / ssh_args: those ssh uses for
    where and how to connect, and notes for the rest (flag names only, never values)."""
    cl, notes = CommandLine(), []
    try:
        words = shlex.split(args)
    except ValueError as e:
        raise InventoryError(f"inventory {path}: host {host}: {var}: {e}") from None
    i = 0
    while i < len(words):
        w = words[i].strip()
        i += 1
        if not w.startswith("-") or len(w) < 2:
            raise InventoryError(f"inventory {path}: host {host}: {var} holds a word that is not an ssh option "
                                 f"({redact(w)!r}); Ansible would pass it to ssh before the host name")
        flag, value = w[1], w[2:]
        if flag in _WITH_VALUE and not value:
            if i >= len(words):
                raise InventoryError(f"inventory {path}: host {host}: {var}: ssh option -{flag} without its value")
            value, i = words[i].strip(), i + 1
        elif flag not in _WITH_VALUE and value:  # -qC: several flags in one word
            words.insert(i, "-" + value)
            value = ""
        if flag == "o":
            cl.args.append(("o", value))
        elif flag in "lpiJ":
            cl.args.append((flag, value))
        elif flag == "F":
            cl.config = Path(os.path.expanduser(value))
        elif flag == "c":
            cl.args.append(("o", f"Ciphers={value}"))
        elif flag == "m":
            cl.args.append(("o", f"MACs={value}"))
        elif flag == "b":
            cl.args.append(("o", f"BindAddress={value}"))
        elif flag == "B":
            cl.args.append(("o", f"BindInterface={value}"))
        elif flag == "P":
            cl.args.append(("o", f"Tag={value}"))
        elif flag in _HARMLESS:
            notes.append(f"{var}: -{flag} (not used by nettune)")
        else:
            raise InventoryError(f"inventory {path}: host {host}: {var}: -{flag} is not an ssh option")
    return cl, notes


def to_host(name: str, hv: dict[str, Any], path: Path) -> dict[str, Any]:
    """One host: nettune's own fields, plus `_ssh` (the ssh command line Ansible would run,
    and its destination) for ssh_config.resolve, plus `ignored` (what is not used)."""
    out: dict[str, Any] = {}
    ignored = sorted(f"{k} (nettune logs in with keys; the password is not used or stored)" for k in hv if k in _PASSWORDS)
    ignored += sorted(k for k in hv if k in _IGNORED)
    conn = str(hv.get("ansible_connection") or "ssh")
    if conn not in SSH_CONNECTIONS:
        return {"_left_out": f"ansible_connection={conn}: not reached over SSH"}
    for ours, theirs in (("role", "nettune_role"), ("interface", "nettune_interface"), ("reboot_timeout", "nettune_reboot_timeout"),
                         ("vmid", "nettune_vmid"), ("domain", "nettune_domain")):
        if hv.get(theirs) not in (None, ""):
            out[ours] = hv[theirs]
    # boot-time knobs may reboot this host, hypervisor knobs restart it (a VM), link knobs
    # bounce its interface; and boot-time knobs may edit a setting another package made
    for flag in ("allow_reboot", "allow_vm_restart", "allow_link_reset", "override_boot_dropins"):
        if f"nettune_{flag}" in hv:
            out[flag] = _truthy(hv[f"nettune_{flag}"])
    if _truthy(hv.get("ansible_become", False)):
        if str(hv.get("ansible_become_method") or "sudo") != "sudo" or str(hv.get("ansible_become_user") or "root") != "root":
            ignored.append("ansible_become (nettune becomes root with sudo only)")
        else:
            out["sudo"] = True
    # in the order Ansible's ssh plugin writes them (ssh keeps the first value of each option)
    ssh_args = hv.get("ansible_ssh_args")
    cl, notes = ssh_words(_plain("ansible_ssh_args", DEFAULT_SSH_ARGS if ssh_args is None else ssh_args, name, path),
                          "ansible_ssh_args", name, path)
    extra = notes if ssh_args is not None else []  # Ansible's own default flags are not the user's to hear about
    hkc = _first(hv, "ansible_ssh_host_key_checking", "ansible_host_key_checking")
    if hkc is not None and not _truthy(hkc):
        cl.args.append(("o", "StrictHostKeyChecking=no"))
    port = _first(hv, "ansible_ssh_port", "ansible_port")
    if port is not None:
        cl.args.append(("o", f"Port={_plain('ansible_port', port, name, path)}"))
    key = _first(hv, "ansible_ssh_private_key_file", "ansible_private_key_file")
    if key is not None:
        cl.args.append(("o", f'IdentityFile="{os.path.abspath(os.path.expanduser(_plain("ansible_ssh_private_key_file", key, name, path)))}"'))
    if _first(hv, *_PASSWORDS[:3]) is None:
        cl.args += [("o", "KbdInteractiveAuthentication=no"),
                    ("o", "PreferredAuthentications=gssapi-with-mic,gssapi-keyex,hostbased,publickey"),
                    ("o", "PasswordAuthentication=no")]
    user = _first(hv, "ansible_ssh_user", "ansible_user")
    if user is not None:
        cl.args.append(("o", f'User="{_plain("ansible_user", user, name, path)}"'))
    timeout = _first(hv, "ansible_ssh_timeout", "ansible_timeout")
    cl.args.append(("o", f"ConnectTimeout={_plain('ansible_timeout', timeout, name, path) if timeout is not None else 10}"))
    for var in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        if hv.get(var):
            got, notes = ssh_words(_plain(var, hv[var], name, path), var, name, path)
            cl.args += got.args
            cl.config = got.config or cl.config
            extra += notes
    dest = _first(hv, "ansible_ssh_host", "ansible_host")
    out["_ssh"] = (cl, _plain("ansible_host", dest, name, path) if dest is not None else name)
    if ignored + extra:
        out["ignored"] = ignored + extra
    return out


def load_ansible(path: Path, group: str | None) -> dict[str, dict[str, Any]]:
    """The hosts of read_ansible alone."""
    return read_ansible(path, group)[0]


def read_ansible(path: Path, group: str | None) -> tuple[dict[str, dict[str, Any]], dict[str, str], str]:
    """Hosts of the inventory (of `group` and its children when given) as nettune host
    fields; the hosts left out (and why); how the inventory was read."""
    if not path.exists():
        raise InventoryError(f"inventory {path} does not exist")
    data, how = ansible_list(path)
    hostvars = (data.get("_meta") or {}).get("hostvars") or {}
    groups = {g: b for g, b in data.items() if g != "_meta" and isinstance(b, dict)}
    if group is not None and group not in groups:
        known = ", ".join(sorted(g for g in groups if g not in ("all", "ungrouped"))) or "none"
        raise InventoryError(f"inventory {path}: no group {group!r} (groups: {known}); fix `group` in [target]")
    names = members(groups, group or "all")
    if not names:
        raise InventoryError(f"inventory {path}: {'group ' + repr(group) if group else 'it'} has no hosts")
    out, left_out = {}, {}
    for n in names:
        fields = to_host(n, hostvars.get(n) or {}, path)
        if "_left_out" in fields:
            left_out[n] = fields["_left_out"]
        else:
            out[n] = fields
    if not out:
        raise InventoryError(f"inventory {path}: no host of {'group ' + repr(group) if group else 'it'} is reached over SSH "
                             f"({'; '.join(f'{k}: {v}' for k, v in left_out.items())})")
    return out, left_out, how


def members(groups: dict[str, Any], name: str, seen: set[str] | None = None) -> list[str]:
    """The hosts of a group in `--list` form, its children's included (first seen first)."""
    seen = seen if seen is not None else set()
    if name in seen or name not in groups:
        return []
    seen.add(name)
    out = list(groups[name].get("hosts") or [])
    for c in groups[name].get("children") or []:
        out += [h for h in members(groups, c, seen) if h not in out]
    return out


__all__ = ["InventoryError", "ansible_list", "groups_of", "is_ansible", "load_ansible", "read_ansible", "members", "read_inventory", "static_list", "to_host"]
