"""Ansible inventories as a host source: `inventory = "hosts.ini"` (or .yml), `group = "NAME"`.

When `ansible-inventory` is installed (ansible-core; `pip install nettune[ansible]`) the
inventory is read through `ansible-inventory -i SRC --list`, so every source Ansible
reads works (group_vars/, host_vars/, dynamic inventory plugins). Without it, static INI
and YAML files are read here: groups, `children`, `vars`, host ranges (`web[01:04]`,
`db-[a:c]`), values as Ansible's INI reader types them; group variables apply from the
shallowest group to the deepest (siblings by name), host variables last, as Ansible does.
tests/test_ansible_inventory.py compares this reader with `ansible-inventory --list`.

Variables read (docs/targets.md): ansible_host, ansible_user, ansible_port,
ansible_ssh_private_key_file, ansible_become (sudo), ansible_timeout, a jump host in
ansible_ssh_common_args / ansible_ssh_extra_args (`-J host`, `-o ProxyJump=host`), and
nettune_role / nettune_interface. Every other variable that changes how Ansible connects
is named in the host's `ignored` list, shown as a warning; the rest are not connection
settings and are skipped.
"""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .ssh_config import ansible_jump, parse_jump

_RANGE = re.compile(r"\[([0-9a-zA-Z]+):([0-9a-zA-Z]+)(?::(\d+))?\]")
# Connection variables nettune does not honour: named as ignored (a warning), never silent.
_IGNORED = {
    "ansible_password", "ansible_ssh_pass", "ansible_ssh_password", "ansible_become_password", "ansible_become_pass",
    "ansible_ssh_executable", "ansible_ssh_args", "ansible_sftp_extra_args", "ansible_scp_extra_args",
    "ansible_host_key_checking", "ansible_ssh_host_key_checking", "ansible_become_flags", "ansible_become_exe",
    "ansible_shell_type", "ansible_shell_executable", "ansible_ssh_transfer_method", "ansible_ssh_retries",
}


class InventoryError(ValueError):
    """An inventory that cannot be read (one line: file, where, fix)."""


def is_ansible(path: Path) -> bool:
    return path.suffix.lower() != ".toml"


def _expand(pattern: str) -> list[str]:
    """web[01:03] -> web01, web02, web03 (Ansible's host ranges; letters too)."""
    m = _RANGE.search(pattern)
    if not m:
        return [pattern]
    lo, hi, step = m.group(1), m.group(2), int(m.group(3) or 1)
    if lo.isdigit() and hi.isdigit():
        width = len(lo) if lo.startswith("0") else 0
        values = [str(i).zfill(width) for i in range(int(lo), int(hi) + 1, step)]
    elif len(lo) == 1 and len(hi) == 1 and lo.isalpha() and hi.isalpha():
        values = [chr(c) for c in range(ord(lo), ord(hi) + 1, step)]
    else:
        raise InventoryError(f"host range {pattern!r}: write [01:04] or [a:d]")
    return [h for v in values for h in _expand(pattern[:m.start()] + v + pattern[m.end():])]


def _ini_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _split_kv(words: list[str], where: str) -> dict[str, Any]:
    out = {}
    for w in words:
        k, eq, v = w.partition("=")
        if not eq:
            raise InventoryError(f"{where}: {w!r} is not key=value")
        out[k] = _ini_value(v)
    return out


def _read_ini(path: Path, text: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    import shlex

    groups: dict[str, dict[str, Any]] = {"all": {"hosts": [], "children": [], "vars": {}}, "ungrouped": {"hosts": [], "children": [], "vars": {}}}
    hostvars: dict[str, dict[str, Any]] = {}
    group, section = "ungrouped", "hosts"
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        where = f"inventory {path} line {n}"
        if line.startswith("["):
            m = re.fullmatch(r"\[([^\]:]+)(?::(vars|children))?\]", line)
            if not m:
                raise InventoryError(f"{where}: {line!r} is not a section ([group], [group:vars] or [group:children])")
            group, section = m.group(1), m.group(2) or "hosts"
            groups.setdefault(group, {"hosts": [], "children": [], "vars": {}})
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            raise InventoryError(f"{where}: {e}") from None
        if section == "vars":
            groups[group]["vars"].update(_split_kv(words, where))
        elif section == "children":
            groups.setdefault(words[0], {"hosts": [], "children": [], "vars": {}})
            groups[group]["children"].append(words[0])
        else:
            name, port = words[0], None
            if re.fullmatch(r"[^:\[\]]+:\d+", name):
                name, port = name.split(":")
            for h in _expand(name):
                hv = hostvars.setdefault(h, {})
                if port:
                    hv["ansible_port"] = int(port)
                hv.update(_split_kv(words[1:], where))
                if h not in groups[group]["hosts"]:
                    groups[group]["hosts"].append(h)
    return groups, hostvars


def _read_yaml(path: Path, text: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    import yaml  # noqa: PLC0415 - only YAML inventories need it

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise InventoryError(f"inventory {path} is not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict):
        raise InventoryError(f"inventory {path}: the top level must be groups (all:, or group names)")
    groups: dict[str, dict[str, Any]] = {"all": {"hosts": [], "children": [], "vars": {}}}
    hostvars: dict[str, dict[str, Any]] = {}

    def walk(name: str, body: Any) -> None:
        g = groups.setdefault(name, {"hosts": [], "children": [], "vars": {}})
        if body is None:
            return
        if not isinstance(body, dict):
            raise InventoryError(f"inventory {path}: group {name} must be a mapping (hosts:, vars:, children:)")
        for h, hv in (body.get("hosts") or {}).items():
            for one in _expand(str(h)):
                hostvars.setdefault(one, {}).update(hv or {})
                if one not in g["hosts"]:
                    g["hosts"].append(one)
        g["vars"].update(body.get("vars") or {})
        for child, cbody in (body.get("children") or {}).items():
            if child not in g["children"]:
                g["children"].append(child)
            walk(child, cbody)

    for name, body in data.items():
        walk(str(name), body)
    return groups, hostvars


def _depths(groups: dict[str, dict[str, Any]]) -> dict[str, int]:
    """all = 0; a group is one deeper than its deepest parent (Ansible's variable order)."""
    parents: dict[str, list[str]] = {g: [] for g in groups}
    for g, body in groups.items():
        for c in body["children"]:
            parents.setdefault(c, []).append(g)
    depth: dict[str, int] = {"all": 0}

    def of(g: str, seen: frozenset[str] = frozenset()) -> int:
        if g not in depth:
            ps = [p for p in parents.get(g, []) if p not in seen and p != "all"]
            depth[g] = 1 + max((of(p, seen | {g}) for p in ps), default=0)
        return depth[g]

    return {g: of(g) for g in groups}


def _members(groups: dict[str, dict[str, Any]], name: str, seen: set[str] | None = None) -> list[str]:
    seen = seen if seen is not None else set()
    if name in seen or name not in groups:
        return []
    seen.add(name)
    out = list(groups[name]["hosts"])
    for c in groups[name]["children"]:
        out += [h for h in _members(groups, c, seen) if h not in out]
    return out


def static_list(path: Path) -> dict[str, Any]:
    """The inventory as `ansible-inventory --list` gives it: _meta.hostvars and groups."""
    text = path.read_text(encoding="utf-8", errors="replace")
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
    groups, own = (_read_yaml if path.suffix.lower() in (".yml", ".yaml") or first.endswith(":") or first == "---" else _read_ini)(path, text)
    depth = _depths(groups)
    hostvars: dict[str, dict[str, Any]] = {}
    for h, hv in own.items():
        member_of = sorted((g for g in groups if h in _members(groups, g)), key=lambda g: (depth[g], g))
        merged: dict[str, Any] = dict(groups["all"]["vars"])
        for g in member_of:
            merged.update(groups[g]["vars"])
        merged.update(hv)
        hostvars[h] = merged
    # groups as ansible-inventory lists them: every host in some group (else "ungrouped"),
    # the groups no other group contains as children of "all", empty groups left out
    grouped = {h for g, body in groups.items() if g not in ("all", "ungrouped") for h in body["hosts"]}
    groups["ungrouped"] = {"hosts": [h for h in own if h not in grouped], "children": [], "vars": {}}
    contained = {c for g, body in groups.items() if g != "all" for c in body["children"]}
    groups["all"]["hosts"] = []
    groups["all"]["children"] = [g for g in groups if g != "all" and g not in contained and (groups[g]["hosts"] or groups[g]["children"])]
    out: dict[str, Any] = {"_meta": {"hostvars": hostvars}}
    for g, body in groups.items():
        listed = {k: v for k, v in (("hosts", body["hosts"]), ("children", body["children"])) if v}
        if listed:
            out[g] = listed
    return out


def ansible_list(path: Path) -> dict[str, Any]:
    """`ansible-inventory -i PATH --list` when installed, else the static reader."""
    exe = shutil.which("ansible-inventory")
    if exe is None:
        return static_list(path)
    env = {**os.environ, "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False", "ANSIBLE_NOCOLOR": "1"}
    try:
        r = subprocess.run([exe, "-i", str(path), "--list"], capture_output=True, text=True, timeout=120, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InventoryError(f"inventory {path}: ansible-inventory failed: {e}") from None
    if r.returncode != 0:
        raise InventoryError(f"inventory {path}: ansible-inventory failed: {' '.join(r.stderr.split())[-300:]}")
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        raise InventoryError(f"inventory {path}: ansible-inventory printed no JSON") from None


def _truthy(v: Any) -> bool:
    return v is True or str(v).strip().lower() in ("true", "yes", "1", "on")


def to_host(name: str, hv: dict[str, Any], path: Path) -> dict[str, Any]:
    """nettune host fields from one host's Ansible variables (+ `ignored`: what was not honoured)."""
    out: dict[str, Any] = {}
    ignored = sorted(k for k in hv if k in _IGNORED)
    for ours, theirs in (("address", ("ansible_host", "ansible_ssh_host")), ("user", ("ansible_user", "ansible_ssh_user")),
                         ("port", ("ansible_port", "ansible_ssh_port")),
                         ("key", ("ansible_ssh_private_key_file", "ansible_private_key_file")),
                         ("connect_timeout", ("ansible_timeout", "ansible_ssh_timeout")),
                         ("role", ("nettune_role",)), ("interface", ("nettune_interface",)),
                         ("reboot_timeout", ("nettune_reboot_timeout",))):
        for k in theirs:
            if hv.get(k) not in (None, ""):
                out[ours] = hv[k]
                break
    if "port" in out:
        out["port"] = int(out["port"]) if str(out["port"]).isdigit() else out["port"]
    if "key" in out:
        p = Path(os.path.expanduser(str(out["key"])))
        out["key"] = str(p if p.is_absolute() else (path.parent / p).resolve())
    if "nettune_allow_reboot" in hv:  # boot-time knobs may reboot this host
        out["allow_reboot"] = _truthy(hv["nettune_allow_reboot"])
    if "nettune_override_boot_dropins" in hv:  # and edit a setting another package made
        out["override_boot_dropins"] = _truthy(hv["nettune_override_boot_dropins"])
    if _truthy(hv.get("ansible_become", False)):
        if str(hv.get("ansible_become_method") or "sudo") != "sudo" or str(hv.get("ansible_become_user") or "root") != "root":
            ignored.append("ansible_become (nettune becomes root with sudo only)")
        else:
            out["sudo"] = True
    conn = str(hv.get("ansible_connection") or "ssh")
    if conn not in ("ssh", "smart", "paramiko"):
        ignored.append(f"ansible_connection={conn} (nettune connects over ssh)")
    for k in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        if hv.get(k):
            jump, rest = ansible_jump(str(hv[k]))
            if jump:
                out["jump"] = jump
            for w in rest:
                name, _, value = w.removeprefix("-o").partition("=")
                if name.strip().lower() == "userknownhostsfile" and value:
                    out["known_hosts"] = os.path.expanduser(value.split()[0])
                elif name.strip().lower() == "stricthostkeychecking" and value.strip().lower() in ("accept-new", "yes"):
                    out["trust_on_first_use"] = value.strip().lower() == "accept-new"
                else:
                    ignored.append(f"{k}: {w} (read: -J, -o ProxyJump, -o UserKnownHostsFile, -o StrictHostKeyChecking=yes|accept-new)")
    if ignored:
        out["ignored"] = ignored
    return out


def load_ansible(path: Path, group: str | None) -> dict[str, dict[str, Any]]:
    """Hosts of the inventory (of `group` and its children when given) as nettune host fields."""
    if not path.exists():
        raise InventoryError(f"inventory {path} does not exist")
    data = ansible_list(path)
    hostvars = (data.get("_meta") or {}).get("hostvars") or {}
    groups = {g: {"hosts": b.get("hosts") or [], "children": b.get("children") or [], "vars": {}} for g, b in data.items() if g != "_meta" and isinstance(b, dict)}
    if group is not None:
        if group not in groups:
            known = ", ".join(sorted(g for g in groups if g not in ("all", "ungrouped"))) or "none"
            raise InventoryError(f"inventory {path}: no group {group!r} (groups: {known}); fix `group` in [target]")
        names = _members(groups, group)
    else:
        names = list(hostvars) or _members(groups, "all")
    if not names:
        raise InventoryError(f"inventory {path}: {'group ' + repr(group) if group else 'it'} has no hosts")
    every = {n: to_host(n, hv or {}, path) for n, hv in hostvars.items()}
    out = {n: every.get(n) or {} for n in names}
    for fields in out.values():
        if isinstance(fields.get("jump"), str):
            fields["jump"] = _jump_through_inventory(fields["jump"], every, fields) or fields["jump"]
    return out


def _jump_through_inventory(value: str, every: dict[str, dict[str, Any]], host: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Hops that are hosts of the inventory itself take their address, user, port and key
    from it (and the host's known_hosts file when they name none); None when a hop is not
    in the inventory (then the target looks the hops up in ssh_config, as ssh would)."""
    hops = []
    for user, name, port in parse_jump(value):
        if name not in every:
            return None
        f = every[name]
        hop = {"name": name, "address": f.get("address") or name, "user": user or f.get("user"), "port": port or f.get("port") or 22,
               "key": f.get("key"), "known_hosts": f.get("known_hosts") or host.get("known_hosts")}
        hops.append({k: v for k, v in hop.items() if v is not None})
    return hops
