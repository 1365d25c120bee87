"""Static Ansible inventory files read as Ansible's plugins read them, running nothing.

Written from ansible-core 2.19's inventory plugins (tests/test_ssh_conformance.py compares
the result with `ansible-inventory --list` on real inventories):
  - a file is tried as Ansible's plugins try it: YAML (no extension, .yml, .yaml, .json)
    and, when that fails or is not a mapping, INI (so an INI file saved as .yml works);
    a directory is every file in it (sorted, hidden files, group_vars/, host_vars/ and
    .md/.txt/.bak/... skipped);
  - INI: `[group]`, `[group:vars]`, `[group:children]` (a child or vars section for a
    group never defined is an error, as in Ansible), `host:port`, ranges `web[01:04]`,
    `db-[a:c]`, `[1:9:2]`, values typed by Python literal rules; YAML: `hosts`, `vars`,
    `children`;
  - the whole inventory and each host's variables in Ansible's precedence: ansible_listing.py.
"""
from __future__ import annotations

import ast
import os
import re
import shlex
import string
from pathlib import Path
from typing import Any

IGNORED = re.compile(r"^\.|^host_vars$|^group_vars$|^vars_plugins$|(\.pyc|\.pyo|\.swp|\.bak|~|\.rpm|\.md|\.txt|\.rst|\.orig|\.cfg|\.retry)$")
YAML_EXTS = ("", ".yml", ".yaml", ".json")
VAULT = "$ANSIBLE_VAULT"


class InventoryError(ValueError):
    """An inventory that cannot be read (one line: file, where, fix)."""


class Vaulted(str):
    """A `!vault` value: encrypted, so nettune cannot read it."""


class Inventory:
    """Groups (hosts, children, vars, priority) and hosts (own vars), in Ansible's terms."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, Any]] = {}
        self.hosts: dict[str, dict[str, Any]] = {}
        self.var_groups: dict[str, set[str]] = {}  # a host whose variables come from fewer groups (ansible_listing._leave)
        self.group("all")
        self.group("ungrouped")

    def group(self, name: str) -> dict[str, Any]:
        return self.groups.setdefault(name, {"hosts": [], "children": [], "vars": {}, "priority": 1})

    def set_group_var(self, group: str, key: str, value: Any) -> None:
        g = self.group(group)
        if key == "ansible_group_priority":
            try:
                g["priority"] = int(value)
            except (TypeError, ValueError):
                pass
        elif isinstance(g["vars"].get(key), dict) and isinstance(value, dict):
            g["vars"][key] = {**g["vars"][key], **value}
        else:
            g["vars"][key] = value

    def add_host(self, name: str, group: str, port: int | None, variables: dict[str, Any]) -> None:
        new = name not in self.hosts
        hv = self.hosts.setdefault(name, {})
        if new and port:
            hv["ansible_port"] = port
        if name not in self.group(group)["hosts"]:
            self.group(group)["hosts"].append(name)
        hv.update(variables)

    def add_child(self, parent: str, child: str) -> None:
        if child not in self.group(parent)["children"]:
            self.group(parent)["children"].append(child)
        self.group(child)


# -- host patterns ----------------------------------------------------------------------
_RANGE = r"\[(?:[a-zA-Z]:[a-zA-Z]|[0-9]+:[0-9]+)(?::[0-9]+)?\]"
_LABEL = rf"(?:\w|{_RANGE})(?:[\w-]|{_RANGE})*(?<![_-])"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$", re.UNICODE)
_IPV4 = re.compile(r"^(?:(?:[01]?[0-9]{1,2}|2[0-4][0-9]|25[0-5]|\[[0-9]+:[0-9]+(?::[0-9]+)?\])\.){3}"
                   r"(?:[01]?[0-9]{1,2}|2[0-4][0-9]|25[0-5]|\[[0-9]+:[0-9]+(?::[0-9]+)?\])$")
_HOSTPORT = re.compile(r"^((?:[^:\[\]]|\[[^\]]*\])*):([0-9]+)$")
_BRACKET_PORT = re.compile(r"^\[(.+)\]:([0-9]+)$")


def _is_address(text: str) -> bool:
    import ipaddress  # noqa: PLC0415

    if _IPV4.match(text) or _HOSTNAME.match(text):
        return True
    try:
        ipaddress.IPv6Address(re.sub(r"\[[0-9a-fA-F]+:[0-9a-fA-F]+(?::[0-9]+)?\]", "0", text))
        return True
    except ValueError:
        return False


def expand_pattern(pattern: str, where: str) -> tuple[list[str], int | None]:
    """A host key or INI host word: its names (ranges expanded) and a port if one is given
    (Ansible's parse_address: `host:22`, `[v6addr]:22`; a word it cannot read as an address
    is taken whole, port and all)."""
    text, port = pattern, None
    for rx in (_BRACKET_PORT, _HOSTPORT):
        m = rx.match(text)
        if m:
            text, port = m.group(1), int(m.group(2))
    if not _is_address(text):
        text, port = pattern, None
    if pattern.strip().endswith(":") and port is None:
        raise InventoryError(f"{where}: invalid host pattern {pattern!r}: ending in ':' is not allowed (Ansible reserves it for a port)")
    if text.strip() == "---":
        raise InventoryError(f"{where}: invalid host pattern '---' (a sign this is a YAML file)")
    return _ranges(text, where), port


def _ranges(name: str, where: str) -> list[str]:
    """web[01:03] -> web01, web02, web03 (Ansible's expand_hostname_range: letters too,
    a step, several ranges; any '[' starts one)."""
    if "[" not in name:
        return [name]
    parts = name.replace("[", "|", 1).replace("]", "|", 1).split("|")
    if len(parts) != 3:
        raise InventoryError(f"{where}: host pattern {name!r}: a '[' without its range ([begin:end])")
    head, nrange, tail = parts
    bounds = nrange.split(":")
    if len(bounds) not in (2, 3):
        raise InventoryError(f"{where}: host range must be begin:end or begin:end:step ({name!r})")
    beg, end = bounds[0] or "0", bounds[1]
    if not end:
        raise InventoryError(f"{where}: host range must specify end value ({name!r})")
    try:
        step = int(bounds[2]) if len(bounds) == 3 else 1
        width = len(beg) if beg[0] == "0" and len(beg) > 1 else 0
        if width and width != len(end):
            raise InventoryError(f"{where}: host range must specify equal-length begin and end formats ({name!r})")
        if beg in string.ascii_letters and end in string.ascii_letters:
            i, j = string.ascii_letters.index(beg), string.ascii_letters.index(end)
            if i > j:
                raise InventoryError(f"{where}: host range must have begin <= end ({name!r})")
            seq = list(string.ascii_letters[i: j + 1: step])
        else:
            seq = [str(v).zfill(width) if width else str(v) for v in range(int(beg), int(end) + 1, step)]
    except ValueError:
        raise InventoryError(f"{where}: host range [{nrange}] is neither numbers nor letters ({name!r})") from None
    return [h for v in seq for h in _ranges(head + v + tail, where)]


# -- INI ---------------------------------------------------------------------------------
def _ini_value(text: str) -> Any:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text
    return text if value is ... or isinstance(value, complex) else value


_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$")
_GROUPNAME = re.compile(r"^([^:\]\s]+)\s*(?:#.*)?$")


def read_ini(inv: Inventory, path: Path, text: str) -> None:
    group, state = "ungrouped", "hosts"
    pending: dict[str, dict[str, Any]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        where = f"{path}:{n}"
        if not line or line[0] in "#;":
            continue
        m = _SECTION.match(line)
        if m:
            group, state = m.group(1), m.group(2) or "hosts"
            if state not in ("hosts", "children", "vars"):
                raise InventoryError(f"{where}: section [{group}:{state}] has unknown type: {state}")
            if group not in inv.groups:
                if state == "vars" and group not in pending:
                    pending[group] = {"line": n, "state": "vars", "parents": []}
                inv.group(group)
            if group in pending and state != "vars":
                if pending[group]["state"] == "children":
                    _adopt(inv, group, pending)
                else:
                    del pending[group]
            continue
        if line.startswith("[") and line.endswith("]"):
            raise InventoryError(f"{where}: invalid section entry {line!r}; make sure there are no spaces or other invalid characters in it")
        if state == "hosts":
            try:
                words = shlex.split(line, comments=True)
            except ValueError as e:
                raise InventoryError(f"{where}: error parsing host definition {line!r}: {e}") from None
            names, port = expand_pattern(words[0], where)
            variables = {}
            for w in words[1:]:
                if "=" not in w:
                    raise InventoryError(f"{where}: expected key=value host variable assignment, got: {w}")
                k, v = w.split("=", 1)
                variables[k] = _ini_value(v)
            for h in names:
                inv.add_host(h, group, port, variables)
        elif state == "vars":
            if "=" not in line:
                raise InventoryError(f"{where}: expected key=value, got: {line}")
            k, v = (e.strip() for e in line.split("=", 1))
            inv.set_group_var(group, k, _ini_value(v))
        else:
            m = _GROUPNAME.match(line)
            if not m:
                raise InventoryError(f"{where}: expected group name, got: {line}")
            child = m.group(1)
            if child not in inv.groups:
                pending.setdefault(child, {"line": n, "state": "children", "parents": []})["parents"].append(group)
            else:
                inv.add_child(group, child)
    for g, decl in pending.items():
        if decl["state"] == "vars":
            raise InventoryError(f"{path}:{decl['line']}: section [{g}:vars] not valid for undefined group {g!r}")
        raise InventoryError(f"{path}:{decl['line']}: section [{decl['parents'][-1]}:children] includes undefined group {g!r}")


def _adopt(inv: Inventory, group: str, pending: dict[str, dict[str, Any]]) -> None:
    for parent in pending[group]["parents"]:
        inv.add_child(parent, group)
        if parent in pending and pending[parent]["state"] == "children":
            _adopt(inv, parent, pending)
    pending.pop(group, None)


# -- YAML --------------------------------------------------------------------------------
def load_yaml(text: str, where: str) -> Any:
    """YAML as Ansible loads it (PyYAML's safe rules; `!vault` values kept as Vaulted)."""
    import yaml  # noqa: PLC0415

    class Loader(yaml.SafeLoader):
        pass

    def vault(loader: Any, node: Any) -> Vaulted:
        return Vaulted(loader.construct_scalar(node))

    Loader.add_constructor("!vault", vault)
    Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))
    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 - SafeLoader plus two scalar tags
    except yaml.MarkedYAMLError as e:
        at = f" line {e.problem_mark.line + 1} column {e.problem_mark.column + 1}" if e.problem_mark is not None else ""
        raise InventoryError(f"{where}{at}: not valid YAML: {e.problem or ' '.join(str(e).split())}") from None
    except yaml.YAMLError as e:
        raise InventoryError(f"{where}: not valid YAML: {' '.join(str(e).split())}") from None


def read_yaml(inv: Inventory, path: Path, data: Any) -> None:
    def walk(name: str, body: Any) -> str:
        name = str(name)
        if not isinstance(body, (dict, type(None))):
            return name  # Ansible skips it with a warning
        inv.group(name)
        for section in ("vars", "children", "hosts"):
            if isinstance((body or {}).get(section), str):
                body[section] = {body[section]: None}
            elif section in (body or {}) and not isinstance(body[section], (dict, type(None))):
                raise InventoryError(f"{path}: invalid {section!r} entry for group {name!r}: it must be a mapping")
        for key, value in (body or {}).items():
            if value is None or not isinstance(value, dict):
                continue
            if key == "vars":
                for k, v in value.items():
                    inv.set_group_var(name, str(k), v)
            elif key == "children":
                for sub, sbody in value.items():
                    inv.add_child(name, walk(sub, sbody))
            elif key == "hosts":
                for pattern, hv in value.items():
                    if not isinstance(pattern, str):
                        raise InventoryError(f"{path}: host pattern {pattern!r} must be a string; enclose numbers in quotes")
                    names, port = expand_pattern(pattern, str(path))
                    for h in names:
                        inv.add_host(h, name, port, dict(hv or {}))
        return name

    for name, body in data.items():
        walk(name, body)


# -- sources -----------------------------------------------------------------------------
def read_source(inv: Inventory, path: Path) -> None:
    """One file or directory, as Ansible's yaml-then-ini plugins read it."""
    if path.is_dir():
        for child in sorted(os.listdir(path)):
            if not IGNORED.search(child):
                read_source(inv, path / child)
        return
    data = path.read_bytes()
    if data.startswith(VAULT.encode()):
        raise InventoryError(f"inventory {path} is vault-encrypted; nettune reads it only through ansible-inventory (a real run, with your vault password configured)")
    text = data.decode("utf-8", "surrogateescape")
    errors = []
    if path.suffix.lower() in YAML_EXTS:
        try:
            parsed = load_yaml(text, str(path))
        except InventoryError as e:
            errors.append(str(e))
        else:
            if isinstance(parsed, dict) and parsed.get("plugin"):
                raise InventoryError(f"inventory {path} configures the inventory plugin {parsed['plugin']!r}, which runs code to list hosts")
            if isinstance(parsed, dict) and parsed:
                read_yaml(inv, path, parsed)
                return
            errors.append(f"{path}: YAML inventory has invalid structure, it should be a mapping of groups")
    if path.suffix.lower() == ".toml":
        raise InventoryError(f"inventory {path}: Ansible's TOML inventories are not read by nettune; write it as INI or YAML")
    try:
        read_ini(inv, path, text)
    except InventoryError as e:
        raise InventoryError(f"inventory {path} is neither YAML nor INI Ansible reads: {errors[0] + '; ' if errors else ''}{e}") from None
